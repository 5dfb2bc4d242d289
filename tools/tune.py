"""Choose the ranking's few numbers (`RankingParameters`) from labelled questions, and check they hold on sites they
were not chosen on.

    python tools/tune.py --corpus ../shared/corpus/origin --eval ../shared/evals/dev-set.json \
        tools/evals/holdout-set.json tools/evals/blind-set.json tools/evals/blind-set-{2..14}.json

Every question's signals over every page are computed once, with the service's own code (`Federation.lexical`,
`Federation.scan`); the score `parameters.py` draws is then recomputed for any values of the numbers that combine
them (section share, threshold, weight, outline share, hub weight, balance words, identifier scale, site fit's
half share), so a choice costs milliseconds. Coordinate ascent over a grid per number maximises hit@1 (MRR@10
breaks ties); leave-one-site-out learns on the questions answered on three sites and scores the fourth. It prints
today's numbers and the chosen ones, all and per held-out site. No number is learned from any page: only from the
questions' labels, and only a handful.

The score here stops before the late-interaction rerank of the first pages (`Federation._reranked`: its word pieces
come from model runs this tool does not make), so its hit@1 is the service's without the rerank (0.614 against 0.629
on the 770 development questions); `tools/late_interaction.py` and `tools/rerank_variants.py` score the rerank on
top of this score.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from shared.providers.mkdocs.scoring.blend import lexical_score, semantic_credit, similarity  # noqa: E402
from shared.providers.mkdocs.scoring.federation import Federation  # noqa: E402
from shared.providers.mkdocs.scoring.parameters import DEFAULT, RankingParameters  # noqa: E402
from shared.providers.mkdocs.scoring.ranking import site_fit  # noqa: E402
from shared.providers.mkdocs.scoring.text import analyze_query, identifier_share  # noqa: E402
from tools.bench import qualify  # noqa: E402
from tools.eval import Case, normalize, parse_eval_set  # noqa: E402
from tools.fusion import load, site_of  # noqa: E402


@dataclass
class Signals:
    """One question's signals over every page (entries for the cosines), the service's own arrays."""

    case: Case
    set_name: str
    site: str
    best: npt.NDArray[np.float64]
    page: npt.NDArray[np.float64]
    prior: npt.NDArray[np.float64]
    """boost * (1 + title coverage)"""
    boosts: npt.NDArray[np.float64]
    frequencies: list[tuple[npt.NDArray[np.int64], int]]
    """Per site: how many of its pages hold each query word, and how many pages it has (what site fit is made of)."""
    raw: npt.NDArray[np.float32]
    outlines: npt.NDArray[np.float64]
    identifiers: float
    words: int
    good: npt.NDArray[np.bool_]


@dataclass
class Corpus:
    federation: Federation
    hub: npt.NDArray[np.float32]
    """Each entry's neighbour similarity less its site's median (the correction at hub weight 1)."""
    questions: list[Signals]


GRID: dict[str, Sequence[float]] = {
    "section_share": (0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95),
    "threshold": (0.25, 0.28, 0.3, 0.32, 0.35, 0.38, 0.4),
    "weight": (0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0),
    "outline_share": (0.0, 0.1, 0.15, 0.2, 0.3),
    "hub_weight": (0.0, 0.1, 0.25, 0.4, 0.6),
    "balance_words": (4, 6, 8, 10, 12, 16, 24),
    "identifier_scale": (2.0, 5.0, 10.0, 15.0),
    "site_fit_half": (0.02, 0.05, 0.1, 0.2),
}


def prepare(corpus_dir: Path, sets: dict[str, list[Case]], cache: Path | None) -> Corpus:
    federation, sites, encoder = load(corpus_dir, cache)
    assert federation.correction is not None
    hub = (federation.correction / DEFAULT.hub_weight).astype(np.float32)
    locations = []
    for site, ranker in enumerate(federation.rankers):
        locations += [normalize(qualify(sites[site], page.entry.location)) for page in ranker.pages]
    found = []
    for set_name, cases in sets.items():
        vectors = encoder.encode([case.query for case in cases], query=True)
        for case, vector in zip(cases, vectors, strict=True):
            wanted = analyze_query(case.query)
            lexical = federation.lexical(wanted)
            products = federation.scan(vector)
            assert lexical is not None and products is not None
            scores, boosts, prior, _, best, _ = lexical
            raw = np.concatenate([p[: len(r.entries)] for p, r in zip(products, federation.rankers, strict=True)])
            outlines = np.concatenate([p[len(r.entries) :] for p, r in zip(products, federation.rankers, strict=True)])
            words = [[r.vocabulary.get(term, -1) for term in wanted.words] for r in federation.rankers]
            frequencies = []
            for r, numbers in zip(federation.rankers, words, strict=True):
                offsets = r.page_view.postings.offsets
                last = len(offsets) - 1
                frequencies.append(
                    (
                        np.array([offsets[n + 1] - offsets[n] if 0 <= n < last else 0 for n in numbers]),
                        r.page_view.documents,
                    )
                )
            acceptable = {normalize(location) for location in case.acceptable}
            found.append(
                Signals(
                    case,
                    set_name,
                    site_of(case.acceptable[0]),
                    best,
                    scores,
                    prior,
                    boosts,
                    frequencies,
                    raw.astype(np.float32),
                    outlines.astype(np.float64),
                    identifier_share(case.query),
                    len(wanted.words),
                    np.array([location in acceptable for location in locations]),
                )
            )
    return Corpus(federation, hub, found)


def scores(corpus: Corpus, q: Signals, p: RankingParameters) -> npt.NDArray[np.float64]:
    """`Federation.ranked`'s final score of every page, for parameters `p` (0 for a page it would not rank)."""
    f = corpus.federation
    fits = np.array([site_fit(held.tolist(), pages, p) if len(held) else 0.0 for held, pages in q.frequencies])
    lexical = lexical_score(q.best, q.page, fits[f.site_of_page], q.prior, p)
    say = (1.0 - p.identifier_scale * q.identifiers) * min(1.0, p.balance_words / max(1, q.words))
    final = np.where(q.page != 0, lexical, 0.0)
    candidate = q.page != 0
    if say > 0:
        blended, _ = similarity(q.raw, q.outlines, p.hub_weight * corpus.hub, f.order, f.starts, p)
        final = final + semantic_credit(blended, say, q.boosts, f.credit_scale, p)
        candidate = candidate | (blended > p.threshold)
    return np.where(candidate, final, -np.inf)


def evaluate(corpus: Corpus, questions: Sequence[Signals], p: RankingParameters) -> tuple[float, float, float]:
    h1 = h5 = mrr = 0.0
    for q in questions:
        s = scores(corpus, q, p)
        good = q.good & np.isfinite(s)
        if not good.any():
            continue
        rank = 1 + int((s > s[good].max()).sum())
        h1 += rank == 1
        h5 += rank <= 5
        mrr += 1 / rank if rank <= 10 else 0.0
    n = len(questions)
    return h1 / n, h5 / n, mrr / n


def ascend(
    corpus: Corpus, questions: Sequence[Signals], start: RankingParameters, rounds: int = 3
) -> RankingParameters:
    """Coordinate ascent over `GRID`: each number in turn set to its best grid value, the others held."""
    best = start
    best_value = _objective(evaluate(corpus, questions, best))
    for _ in range(rounds):
        moved = False
        for name, values in GRID.items():
            for value in values:
                trial = replace(best, **{name: type(getattr(best, name))(value)})
                score = _objective(evaluate(corpus, questions, trial))
                if score > best_value + 1e-9:
                    best, best_value, moved = trial, score, True
        if not moved:
            break
    return best


def _objective(values: tuple[float, float, float]) -> float:
    h1, h5, mrr = values
    return h1 + 0.5 * mrr + 0.25 * h5


def shown(values: tuple[float, float, float]) -> str:
    return " / ".join(f"{v:.3f}" for v in values)


def changed(p: RankingParameters) -> dict[str, Any]:
    return {f.name: getattr(p, f.name) for f in fields(p) if getattr(p, f.name) != getattr(DEFAULT, f.name)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--eval", type=Path, nargs="+", action="extend", default=[])
    parser.add_argument("--vectors-cache", type=Path)
    parser.add_argument("--tokens", type=int, default=None)
    args = parser.parse_args(argv)
    import shared.embedding

    if args.tokens:
        shared.embedding.MAX_TOKENS = args.tokens
    cache = args.vectors_cache / f"t{shared.embedding.MAX_TOKENS}" if args.vectors_cache else None
    sets = {path.name: parse_eval_set(path.read_text(encoding="utf-8")).cases for path in args.eval}
    corpus = prepare(args.corpus, sets, cache)
    questions = corpus.questions
    print(f"{len(questions)} questions, {shared.embedding.MAX_TOKENS} word pieces per entry; hit@1 / hit@5 / MRR@10")
    print(f"today's numbers, all:      {shown(evaluate(corpus, questions, DEFAULT))}")
    chosen = ascend(corpus, questions, DEFAULT)
    print(f"chosen on all (optimistic): {shown(evaluate(corpus, questions, chosen))}  {changed(chosen)}")
    print("leave one site out (chosen on the other three, scored here):")
    for site in sorted({q.site for q in questions}):
        held = [q for q in questions if q.site == site]
        learned = ascend(corpus, [q for q in questions if q.site != site], DEFAULT)
        print(
            f"  {site:<18} {len(held):>4} today {shown(evaluate(corpus, held, DEFAULT))}  "
            f"chosen {shown(evaluate(corpus, held, learned))}  {changed(learned)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
