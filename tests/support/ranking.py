"""Searching one site in tests through the production scorer, and the reference it is checked against.

`search` ranks one site as the provider does, through a federation of one (`Federation.score`): there is one
scorer in the service, and tests go through it. `reference_score` is the per-site formula written out plainly, an
oracle kept here only so `test_federation.py` can check that laying sites end to end changes no page, score or
order (to the last bit).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from shared.providers.mkdocs.scoring.federation import Federation
from shared.providers.mkdocs.scoring.quantized import split_query
from shared.providers.mkdocs.scoring.ranking import RankedHit, Ranker, Scored, site_fit
from shared.providers.mkdocs.scoring.semantics import SiteSemantics, semantic_say
from shared.providers.mkdocs.scoring.text import Query, analyze_query


def search(
    ranker: Ranker,
    query: str,
    limit: int,
    vector: npt.NDArray[np.float32] | None = None,
    pieces: npt.NDArray[np.float32] | None = None,
) -> list[RankedHit]:
    """The site's best pages for `query`, best first, one hit per page, as the provider ranks them.

    `vector` is the query's embedding; with it, and the site's embeddings attached, a page also earns
    `weight * (similarity - threshold)` above the threshold, times its boost and the query's say, and pages that
    share no word with the query can be found. `pieces`: the query's word pieces, for the rerank (`pieces.py`)."""
    wanted = analyze_query(query)
    federation = Federation.of([ranker])
    found = federation.score(wanted, semantic_say(query, wanted, federation.parameters), limit, vector, pieces=pieces)
    return [scored.hit(number) for _, scored, number in found]


def fit(ranker: Ranker, wanted: Query) -> float:
    """How much the site is about the query, as the federation computes it (`Lexical.fits`)."""
    lexical = Federation.of([ranker]).lexical(wanted)
    return float(lexical.fits[0]) if lexical is not None else 0.0


def reference_score(
    ranker: Ranker, wanted: Query, say: float, limit: int, vector: npt.NDArray[np.float32] | None = None
) -> Scored:
    """The best `limit` pages of one site for an analysed query, scored on its own arrays, best first."""
    if not wanted.words or limit < 1:
        return Scored(ranker, [], [], None, None)
    scores = ranker.page_view.postings.coordinated(ranker.page_view.weights(wanted))
    coverage = ranker.titles.sums(dict.fromkeys((*wanted.words, *wanted.joined), 1.0), matched=False)[0]
    boosts = ranker.boosts(wanted)
    prior = boosts * (1 + coverage)
    candidates = np.flatnonzero(scores)
    credits = None
    cosines = None
    semantic = ranker.semantic
    if semantic is not None and vector is not None and say > 0:
        close, closeness, cosines = _close_pages(semantic, vector)
        if len(close):
            credits = np.zeros(len(scores))
            credits[close] = closeness * say * boosts[close] * ranker.credit_scale[close]
            candidates = np.union1d(candidates, close)
    if not len(candidates):
        return Scored(ranker, [], [], None, cosines)
    sections = ranker.section_view.postings.coordinated(ranker.section_view.weights(wanted))
    best = np.maximum.reduceat(sections[ranker.order], ranker.starts)
    frequencies = [ranker.page_view.postings.frequency(term) for term in wanted.words]
    fit = site_fit(frequencies, ranker.page_view.documents, ranker.parameters)
    share = ranker.parameters.section_share
    final = (share * best[candidates] + (1 - share) * scores[candidates]) * (fit * prior[candidates])
    if credits is not None:
        final = final + credits[candidates]
    top = np.argsort(-final, kind="stable")[:limit]
    return Scored(ranker, candidates[top].tolist(), final[top].tolist(), sections, cosines)


def _close_pages(
    semantic: SiteSemantics, query: npt.NDArray[np.float32]
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64], npt.NDArray[np.float32]]:
    """Pages whose similarity is above the threshold and their credit, and every entry's corrected cosine."""
    similarities = semantic.rows.similarities(split_query(query))
    entries = len(semantic.order)
    raw, outlines = similarities[:entries], similarities[entries:]
    threshold, share = semantic.parameters.threshold, semantic.parameters.outline_share
    cosines = np.where(raw > threshold, raw - semantic.correction, raw)
    best = np.maximum.reduceat(cosines[semantic.order], semantic.starts).astype(np.float64)
    blended = (1 - share) * best + share * outlines.astype(np.float64)
    close = np.flatnonzero(blended > threshold)
    return close, semantic.parameters.weight * (blended[close] - threshold), cosines
