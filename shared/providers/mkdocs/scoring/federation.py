"""Rank many sites' pages for one query in one pass: what the provider searches when it searches every site.

Ranking each site on its own and merging costs a few dozen numpy calls per site per query, whatever
the site's size: with many sites that fixed cost was most of a search. A `Federation` lays the sites' per-page and
per-entry arrays (boosts, page-kind rules, section order, hubness correction) end to end, once per set of loaded
rankers, and a query then gathers every site's postings slices for its terms into one array per view, adds them
up in one `bincount`, and scores, blends and sorts all pages together. Each site's postings, vocabulary, IDF and
vectors stay its own (nothing is copied, so memory does not grow), and every page's score is computed from the same
numbers in the same order as one site alone would, so the merged ranking is exactly the per-site one (a reference
per-site scorer in `tests/support/ranking.py` checks it, scores to the last bit). This is the one scorer: a
single site is searched as a federation of one. The sites' rankers must rank
with the same parameters (`parameters.py`), or one score would not mean what another does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from shared import memory
from shared.providers.mkdocs.scoring.blend import lexical_score, semantic_credit, similarity
from shared.providers.mkdocs.scoring.parameters import DEFAULT, RankingParameters
from shared.providers.mkdocs.scoring.postings import Postings, coordinate
from shared.providers.mkdocs.scoring.quantized import split_query
from shared.providers.mkdocs.scoring.ranking import Ranker, Scored, site_fit
from shared.providers.mkdocs.scoring.semantics import SiteSemantics
from shared.providers.mkdocs.scoring.text import Query

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Products = list[npt.NDArray[np.float32]]
    """Every site's similarities with a query vector, in site order (`Federation.scan`)."""


FEDERATIONS = 4
"""Sets of sites searched together whose federations are kept (`Federations`)."""


@dataclass(frozen=True, slots=True)
class Federation:
    """Sites' rankers, in search order, with their per-page and per-entry arrays laid end to end."""

    rankers: tuple[Ranker, ...]
    semantics: tuple[SiteSemantics | None, ...]
    """Each ranker's attached embeddings when this was built (`Ranker.semantic`): an attach since needs a rebuild."""
    vocabularies: tuple[dict[str, int], ...]
    """Each site's one vocabulary, shared by its three views (`Ranker.build`, `artifact.loads`)."""
    page_base: list[int]
    """Where each site's pages start among all pages (one more than the sites: the last is the total)."""
    entry_base: list[int]
    site_of_page: npt.NDArray[np.intp]
    weighted: npt.NDArray[np.float64]
    toggled: npt.NDArray[np.float64]
    rule_numbers: npt.NDArray[np.intp]
    credit_scale: npt.NDArray[np.float64]
    order: npt.NDArray[np.intp]
    starts: npt.NDArray[np.intp]
    correction: npt.NDArray[np.float32] | None
    """Every entry's hubness correction, when every site ranks semantically."""
    parameters: RankingParameters
    """What every one of the rankers ranks with (`DEFAULT` when there are none)."""

    @classmethod
    def of(cls, rankers: Sequence[Ranker]) -> Federation:
        """The rankers laid end to end; a ValueError when they do not all rank with the same parameters."""
        import numpy as np

        parameters = rankers[0].parameters if rankers else DEFAULT
        if any(ranker.parameters != parameters for ranker in rankers):
            raise ValueError("the rankers of a federation must rank with the same parameters")

        page_base = np.cumsum([0, *(len(ranker.pages) for ranker in rankers)]).tolist()
        entry_base = np.cumsum([0, *(len(ranker.entries) for ranker in rankers)]).tolist()

        def joined(arrays: Sequence[npt.NDArray[Any]], dtype: type) -> npt.NDArray[Any]:
            return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype=dtype)

        semantic = [ranker.semantic for ranker in rankers]
        vocabularies = tuple(ranker.vocabulary for ranker in rankers)
        return cls(
            tuple(rankers),
            tuple(semantic),
            vocabularies,
            page_base,
            entry_base,
            np.repeat(np.arange(len(rankers)), [len(ranker.pages) for ranker in rankers]),
            joined([ranker.weighted for ranker in rankers], np.float64),
            joined([ranker.toggled for ranker in rankers], np.float64),
            joined([ranker.rule_numbers for ranker in rankers], np.intp),
            joined([ranker.credit_scale for ranker in rankers], np.float64),
            joined([ranker.order + base for ranker, base in zip(rankers, entry_base, strict=False)], np.intp),
            joined([ranker.starts + base for ranker, base in zip(rankers, entry_base, strict=False)], np.intp),
            joined([part.correction for part in semantic if part is not None], np.float32)
            if rankers and all(part is not None for part in semantic)
            else None,
            parameters,
        )

    @property
    def array_bytes(self) -> int:
        """The size of the largest arrays a query makes (one float64 per entry of every site), several of them made
        and freed per query: worth keeping on the heap (`memory.heap_for`)."""
        return 8 * self.entry_base[-1]

    def current(self, rankers: Sequence[Ranker]) -> bool:
        """Whether this was built from exactly these rankers, with the embeddings they hold now."""
        return len(rankers) == len(self.rankers) and all(
            mine is theirs and semantic is theirs.semantic
            for mine, semantic, theirs in zip(self.rankers, self.semantics, rankers, strict=True)
        )

    def score(
        self,
        wanted: Query,
        say: float,
        limit: int,
        vector: npt.NDArray[np.float32] | None = None,
        missing: Sequence[frozenset[str]] = (),
        pieces: npt.NDArray[np.float32] | None = None,
    ) -> list[tuple[int, Scored, int]]:
        """The best `limit` pages of all the sites, best first, leaving out each site's `missing` pages: (site
        number, that site's `Scored`, the page's number in it), each site's `Scored` holding its pages among them.

        The same pages, scores and order as ranking each site alone and merging by score (ties in
        site order, then each site's own order); with the query's word `pieces`, the best then reranked by them.
        `lexical`, `scan` and `ranked`, for a caller with nothing to do between them."""
        products = self.scan(vector) if vector is not None and say > 0 else None
        return self.ranked(self.lexical(wanted), say, limit, products, missing, pieces)

    def lexical(self, wanted: Query) -> Lexical | None:
        """Everything of a query's ranking that needs no query vector (postings, titles, boosts, site fit): what a
        search computes while the query is being embedded (`ranked` takes it with the vector). None when nothing can
        be found (no sites, or no words but stop words)."""
        import numpy as np

        rankers = self.rankers
        if not wanted.words or not rankers:
            return None
        pages = self.page_base[-1]
        # Each query term's number in each site's vocabulary (one lookup per site and term, for all three views).
        terms = list(dict.fromkeys((*wanted.words, *wanted.joined)))
        numbers = [[vocabulary.get(term, -1) for term in terms] for vocabulary in self.vocabularies]
        words = len(wanted.words)  # distinct, so the first `words` terms
        scores = self._coordinated(numbers, words, page=True)
        titled = [[1.0] * len(terms)] * len(rankers)
        coverage = _gathered([ranker.titles for ranker in rankers], numbers, titled, self.page_base, pages)[0]
        boosts = self._boosts(wanted)
        sections = self._coordinated(numbers, words, page=False)
        best = np.maximum.reduceat(sections[self.order], self.starts)
        fits = np.array([_site_fit(one, site[:words]) for one, site in zip(rankers, numbers, strict=True)])
        return Lexical(scores, boosts, boosts * (1 + coverage), sections, best, fits)

    def ranked(
        self,
        lexical: Lexical | None,
        say: float,
        limit: int,
        products: Products | None = None,
        missing: Sequence[frozenset[str]] = (),
        pieces: npt.NDArray[np.float32] | None = None,
    ) -> list[tuple[int, Scored, int]]:
        """`score`, from the query's `lexical` part and the `scan` of its vector, if any (both of this federation);
        with the query's word pieces' unit states (`pieces`), the best pages reranked by them (`_reranked`)."""
        import numpy as np

        if lexical is None or limit < 1:
            return []
        rankers = self.rankers
        scores, boosts, prior, sections, best, fits = lexical
        candidates = np.flatnonzero(scores)
        credits = None
        cosines = None
        if products is not None and say > 0:
            blended, cosines = self._similarities(products)
            close = np.flatnonzero(blended > self.parameters.threshold)
            if len(close):
                credits = semantic_credit(blended, say, boosts, self.credit_scale, self.parameters)
                chosen = scores != 0
                chosen[close] = True
                candidates = np.flatnonzero(chosen)  # the union, in page order
        if not len(candidates):
            return []
        final = lexical_score(
            best[candidates],
            scores[candidates],
            fits[self.site_of_page[candidates]],
            prior[candidates],
            self.parameters,
        )
        if credits is not None:
            final = final + credits[candidates]
        kept: list[tuple[int, int, float]] = []
        for position in np.argsort(-final, kind="stable").tolist():
            page = int(candidates[position])
            site = int(self.site_of_page[page])
            local = page - self.page_base[site]
            if site < len(missing) and missing[site] and rankers[site].pages[local].entry.page in missing[site]:
                continue
            kept.append((site, local, float(final[position])))
            if len(kept) == limit:
                break
        if pieces is not None and cosines is not None:
            kept = self._reranked(kept, cosines, pieces)
        return self._scored(kept, sections, cosines)

    def _reranked(
        self, kept: list[tuple[int, int, float]], cosines: npt.NDArray[np.float32], asked: npt.NDArray[np.float32]
    ) -> list[tuple[int, int, float]]:
        """The first `rerank_pages` of `kept` ordered by score / best score + piece_weight * (MaxSim - best MaxSim),
        each page's MaxSim over its closest entry (the highest corrected cosine), and given the scores in the order
        they were (so scores still fall down the list); `kept` as it is unless every site has word pieces."""
        import numpy as np

        pieces = [part.pieces.value if part is not None else None for part in self.semantics]
        count = min(self.parameters.rerank_pages, len(kept))
        if count < 2 or kept[0][2] <= 0 or any(part is None for part in pieces):
            return kept
        matched = []
        for site, local, _ in kept[:count]:
            page = self.page_base[site] + local
            end = self.starts[page + 1] if page + 1 < len(self.starts) else len(self.order)
            numbers = self.order[self.starts[page] : end]
            closest = int(numbers[int(np.argmax(cosines[numbers]))]) - self.entry_base[site]
            held = pieces[site]
            assert held is not None
            matched.append(held.similarity(closest, asked))
        best, closest_match = kept[0][2], max(matched)
        value = [
            score / best + self.parameters.piece_weight * (similarity - closest_match)
            for (_, _, score), similarity in zip(kept[:count], matched, strict=True)
        ]
        order = sorted(range(count), key=lambda number: -value[number])  # stable: ties keep the score's order
        return [(kept[number][0], kept[number][1], kept[rank][2]) for rank, number in enumerate(order)] + kept[count:]

    def scan(self, vector: npt.NDArray[np.float32]) -> Products | None:
        """Every site's similarities with the query vector, in site order, for `ranked`; None unless every site
        ranks semantically. Blocking (one onnxruntime run per site, each letting go of the GIL): the provider calls
        it on the thread that embedded the query, while the event loop's thread ranks lexically. A second thread
        taking sites beside it was slower (0.3 to 0.7 ms at 8x in process): the two contended for the GIL with
        the lexical part between runs."""
        if self.correction is None:
            return None
        query = split_query(vector)  # once for every site
        return [part.rows.similarities(query) for part in self.semantics if part is not None]

    def _coordinated(self, numbers: list[list[int]], words: int, *, page: bool) -> npt.NDArray[np.float64]:
        """`Postings.coordinated` of every site's page (or section) view, end to end."""
        views = [(ranker.page_view if page else ranker.section_view).postings for ranker in self.rankers]
        bases = self.page_base if page else self.entry_base
        weights = self._weights(numbers, words, page=page)
        return coordinate(*_gathered(views, numbers, weights, bases, bases[-1]))

    def _weights(self, numbers: list[list[int]], words: int, *, page: bool) -> list[list[float]]:
        """`FieldView.weights` of every site's page (or section) view at once: per site, each term's weight, 0 where the
        view does not hold it. Each site's maximum is summed term by term, as `sum` does, so every weight is the
        same float."""
        import numpy as np

        views = [ranker.page_view if page else ranker.section_view for ranker in self.rankers]
        held = np.array(
            [
                [view.idf[number] if 0 <= number < len(view.idf) else 0.0 for number in site_numbers]
                for view, site_numbers in zip(views, numbers, strict=True)
            ],
            dtype=np.float64,
        ).reshape(len(views), -1)
        unknown = np.array([view.term_idf(0) for view in views])
        maximum = np.zeros(len(views))
        for column in range(words):
            maximum = maximum + np.where(held[:, column] != 0.0, held[:, column], unknown)
        scaled = held / maximum[:, None]
        cap = np.where(held[:, :words] != 0.0, scaled[:, :words], 0.0).max(axis=1)
        scaled[:, words:] = np.minimum(scaled[:, words:], cap[:, None])
        weights: list[list[float]] = np.where(held != 0.0, scaled, 0.0).tolist()
        return weights

    def _scored(
        self,
        kept: list[tuple[int, int, float]],
        sections: npt.NDArray[np.float64],
        cosines: npt.NDArray[np.float32] | None,
    ) -> list[tuple[int, Scored, int]]:
        """Each kept page as (site, its site's `Scored`, its number there), the site's arrays sliced, not copied."""
        by_site: dict[int, Scored] = {}
        found = []
        for site, local, score in kept:
            scored = by_site.get(site)
            if scored is None:
                start, end = self.entry_base[site], self.entry_base[site + 1]
                part = cosines[start:end] if cosines is not None else None
                scored = by_site[site] = Scored(self.rankers[site], [], [], sections[start:end], part)
            scored.pages.append(local)
            scored.scores.append(score)
            found.append((site, scored, len(scored.pages) - 1))
        return found

    def _boosts(self, wanted: Query) -> npt.NDArray[np.float64]:
        """`Ranker.boosts` of every site, end to end: one toggle test when the sites share their page-kind rules."""
        import numpy as np

        kinds = {id(ranker.kinds): ranker.kinds for ranker in self.rankers}
        if len(kinds) != 1:
            return np.concatenate([ranker.boosts(wanted) for ranker in self.rankers])
        shared = next(iter(kinds.values()))
        toggled = shared.toggled((*wanted.words, *wanted.joined)) if shared.rules else frozenset()
        if not toggled:
            return self.weighted
        return np.where(np.isin(self.rule_numbers, list(toggled)), self.toggled, self.weighted)

    def _similarities(
        self, products: list[npt.NDArray[np.float32]]
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float32]]:
        """Every page's similarity to the query and every entry's corrected cosine (`similarity`), from each site's
        products with the query (`scan`), end to end."""
        import numpy as np

        assert self.correction is not None
        raw = np.concatenate([part[: len(ranker.entries)] for part, ranker in zip(products, self.rankers, strict=True)])
        outlines = np.concatenate(
            [part[len(ranker.entries) :] for part, ranker in zip(products, self.rankers, strict=True)]
        )
        return similarity(raw, outlines, self.correction, self.order, self.starts, self.parameters)


class Federations:
    """The last few sets of sites searched together (all of them, one named, those loaded so far), each set's
    federation built again (a millisecond at 25 sites) only when one of their rankers or embeddings changed; kept
    by site names, so a swapped site's old ranker is not held."""

    def __init__(self, size: int = FEDERATIONS) -> None:
        self._size = size
        self._kept: dict[tuple[str, ...], Federation] = {}

    def of(self, sites: tuple[str, ...], rankers: list[Ranker]) -> Federation:
        federation = self._kept.get(sites)
        if federation is None or not federation.current(rankers):
            federation = Federation.of(rankers)
            memory.heap_for(federation.array_bytes)
            self._kept.pop(sites, None)
            while len(self._kept) >= self._size:
                self._kept.pop(next(iter(self._kept)))
            self._kept[sites] = federation
        return federation


class Lexical(NamedTuple):
    """A query's lexical part over a federation's sites (`Federation.lexical`), every array end to end."""

    scores: npt.NDArray[np.float64]
    """Every page's coordinated page-view score."""
    boosts: npt.NDArray[np.float64]
    prior: npt.NDArray[np.float64]
    """Boost times one plus title coverage."""
    sections: npt.NDArray[np.float64]
    """Every entry's coordinated section-view score."""
    best: npt.NDArray[np.float64]
    """Every page's best section score."""
    fits: npt.NDArray[np.float64]
    """Every site's fit to the query's words."""


def _gathered(
    views: Sequence[Postings],
    numbers: Sequence[Sequence[int]],
    weights: Sequence[Sequence[float]],
    bases: list[int],
    documents: int,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """`Postings.sums` of every site at once: each site's slices for its weighted terms (`numbers` in its
    vocabulary, weight 0 for none), in the query's term order, renumbered after the sites before it, added up in one
    pass (each document's contributions in the same order as its own site's sums)."""
    import numpy as np

    found: list[tuple[npt.NDArray[np.int32] | npt.NDArray[np.uint16], npt.NDArray[np.float64], int, float, int]] = []
    for postings, site_numbers, site_weights, base in zip(views, numbers, weights, bases, strict=False):
        offsets, last, held, values = postings.offsets, len(postings.offsets) - 1, postings.numbers, postings.values
        found += [
            (held[start:end], values[start:end], end - start, factor, base)
            for number, factor in zip(site_numbers, site_weights, strict=True)
            if factor and 0 <= number < last and (start := offsets[number]) != (end := offsets[number + 1])
        ]
    if not found:
        return np.zeros(documents), np.zeros(documents)
    parts, values_of, lengths, factors, shifts = zip(*found, strict=True)
    documents_of = np.concatenate(parts) + np.repeat(np.array(shifts, dtype=np.int64), lengths)
    weight = np.repeat(factors, lengths)
    sums = np.bincount(documents_of, weights=weight * np.concatenate(values_of), minlength=documents)
    shares = np.bincount(documents_of, weights=weight, minlength=documents)
    return sums.astype(np.float64, copy=False), shares.astype(np.float64, copy=False)


def _site_fit(ranker: Ranker, words: Sequence[int]) -> float:
    """`Ranker.site_fit` from the query words' numbers in the site's vocabulary."""
    offsets = ranker.page_view.postings.offsets
    last = len(offsets) - 1
    frequencies = [offsets[n + 1] - offsets[n] if 0 <= n < last else 0 for n in words]
    return site_fit(frequencies, ranker.page_view.documents, ranker.parameters)
