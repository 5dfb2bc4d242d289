"""Rank a site's pages for a free-text query: BM25F over pages and their sections, one result per page.

Everything query-independent is precomputed at build, so a query only walks short postings lists. The score and the
numbers in it are drawn in `parameters.py`; why each part is there:

- Two BM25F views: the *page view* (page title, section headings, whole body) scores every page sharing a term
  with the query, the *section view* (section title, section body) finds its best section. BM25F weights and
  length-normalises each field before one saturation, so a title word counts more than a body word and
  repetition cannot win on its own.
- Each view's score is divided by the most the query could score there (terms the site never uses at full IDF)
  and multiplied by the share of that IDF the document matched, so covering more of the query beats repeating one
  term of it.
- Title coverage: a reader naming a page's subject is strong evidence (`VNet` is one word there, not `vnet`, `v`
  and `net`).
- Site fit: a term's IDF is low on the site that is *about* it, so without it a site that mentions `external-dns`
  once would outrank the site documenting it.
- The semantic credit (`vectors.py`) finds a page that answers in other words. A `search.boost` above 1 does not
  multiply it (a promoted page is no closer in meaning, and doubling its credit made it a near neighbour of every
  question on its broad topic); a query's identifiers take it away (they are matched exactly by terms, and the
  embedding knows them only vaguely); and it shrinks for a long question as the term score does, so a page naming
  the question's rare terms (a product, a port, a flag) is not outranked by a generic page on meaning alone.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shared.providers.mkdocs.index import IndexEntry, SiteIndex, page_groups
from shared.providers.mkdocs.kinds import PathWeights
from shared.providers.mkdocs.parameters import DEFAULT, RankingParameters
from shared.providers.mkdocs.quantized import Quantized, QuantizedRows, QueryParts, quantize, split_query
from shared.providers.mkdocs.text import Query, analyze, analyze_query, identifier_share, written_words
from shared.providers.mkdocs.vectors import ScanRows, SiteVectors, neighbour_similarity

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class RankedHit:
    """One page's result: the entry to return, its score, breadcrumb and the text to cut a preview from.

    `entry` is the page entry: every lookup fetches whole pages, and the evaluation accepts a section anchor
    only where the page is a list of independent answers. `section` is the best-matching section (the page
    entry when the page's own introduction matched best); the breadcrumb names it.
    """

    entry: IndexEntry
    score: float
    breadcrumb: tuple[str, ...]
    preview_source: str
    section: IndexEntry | None = None


class _Builder:
    """Collects (term, document, value) triples compactly while a view is built, then packs them.

    The views of one site share one vocabulary (`terms`): each term string and its dictionary slot are held once
    per site, not once per view."""

    def __init__(self, terms: dict[str, int] | None = None) -> None:
        self.ids: dict[str, int] = terms if terms is not None else {}
        self.terms = array("i")
        self.numbers = array("i")
        self.values = array("d")

    def add(self, term: str, number: int, value: float) -> None:
        self.terms.append(self.ids.setdefault(term, len(self.ids)))
        self.numbers.append(number)
        self.values.append(value)

    def pack(self, documents: int) -> Postings:
        """The triples grouped by term, each term's documents in the order they were added."""
        import numpy as np

        terms = np.frombuffer(self.terms, dtype=np.int32)
        order = np.argsort(terms, kind="stable")
        offsets = np.zeros(len(self.ids) + 1, dtype=np.int64)
        np.cumsum(np.bincount(terms, minlength=len(self.ids)), out=offsets[1:])
        numbers = np.frombuffer(self.numbers, dtype=np.int32)[order]
        values = np.frombuffer(self.values, dtype=np.float64)[order]
        return Postings(documents, self.ids, array("q", offsets.tobytes()), numbers, values)


@dataclass(frozen=True, slots=True)
class Postings:
    """Term -> (document numbers, values), packed: one array of each for all terms, sliced per term.

    Packed, a view takes about 16 bytes per posting (the four sample sites: 5 MB); as Python lists of tuples it
    took about 100 (75 MB). A query adds each of its terms' values into an array of per-document sums, term by
    term in the query's order, exactly as a loop over the lists did.
    """

    documents: int
    terms: dict[str, int]
    """Term -> its number in the site's vocabulary (shared by its views): its slice is
    `offsets[number]:offsets[number + 1]`, empty for a term of another view (or beyond `offsets`: one numbered
    after this view was packed)."""
    offsets: array[int]
    """int64, one more than the terms numbered when this view was packed; Python integers when indexed."""
    numbers: npt.NDArray[np.int32]
    values: npt.NDArray[np.float64]

    def _slice(self, term: str) -> tuple[int, int]:
        number = self.terms.get(term)
        if number is None or number + 1 >= len(self.offsets):
            return 0, 0
        return self.offsets[number], self.offsets[number + 1]

    def of(self, term: str) -> list[tuple[int, float]]:
        """The term's (document, value) pairs, in document order."""
        start, end = self._slice(term)
        return list(zip(self.numbers[start:end].tolist(), self.values[start:end].tolist(), strict=True))

    def frequency(self, term: str) -> int:
        """How many documents hold the term."""
        start, end = self._slice(term)
        return end - start

    def sums(
        self, weights: dict[str, float], *, matched: bool = True
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64] | None]:
        """Each document's weighted score and (unless not wanted) the query weight it matched: the hot loop of every
        query."""
        import numpy as np

        terms, offsets, last = self.terms, self.offsets, len(self.offsets) - 1
        slices = [
            (start, end, weight)
            for term, weight in weights.items()
            if (number := terms.get(term)) is not None
            and number < last
            and (start := offsets[number]) != (end := offsets[number + 1])
        ]
        if not slices:
            return np.zeros(self.documents), np.zeros(self.documents) if matched else None
        # One pass in query-term order: bincount adds each document's contributions in that order, as a loop would.
        numbers = np.concatenate([self.numbers[start:end] for start, end, _ in slices])
        weight = np.repeat([w for _, _, w in slices], [end - start for start, end, _ in slices])
        values = np.concatenate([self.values[start:end] for start, end, _ in slices])
        scores = np.bincount(numbers, weights=weight * values, minlength=self.documents).astype(np.float64, copy=False)
        if not matched:
            return scores, None
        shares = np.bincount(numbers, weights=weight, minlength=self.documents).astype(np.float64, copy=False)
        return scores, shares

    def coordinated(self, weights: dict[str, float]) -> npt.NDArray[np.float64]:
        """Every document's score scaled by the share of the query weight it matched (0 where none)."""
        scores, matched = self.sums(weights)
        assert matched is not None
        return coordinate(scores, matched)


@dataclass(slots=True)
class _View:
    """One BM25F view: postings of saturated field-weighted term frequencies, and IDF per term."""

    documents: int
    postings: Postings
    idf: array[float] = field(default_factory=lambda: array("d"))
    """IDF by term number, 0 for a term the view does not hold (a held term's IDF is always above 0)."""

    @classmethod
    def build(
        cls,
        docs: Sequence[Sequence[list[str]]],
        fields: Sequence[tuple[float, float]],
        terms: dict[str, int],
        k1: float,
    ) -> _View:
        """Index `docs` (fields in `fields` order, saturated by `k1`), numbering new terms in the site's vocabulary
        `terms`."""
        builder = _Builder(terms)
        count = max(1, len(docs))
        averages = [max(1.0, sum(len(doc[f]) for doc in docs) / count) for f in range(len(fields))]
        for number, doc in enumerate(docs):
            blended: dict[str, float] = {}
            # The last field is the body, the largest: it seeds the blend in one comprehension.
            for (weight, b), words, average in reversed(list(zip(fields, doc, averages, strict=True))):
                scale = weight / (1 - b + b * len(words) / average)
                if not blended:
                    blended = {term: occurrences * scale for term, occurrences in Counter(words).items()}
                    continue
                for term, occurrences in Counter(words).items():
                    blended[term] = blended.get(term, 0.0) + occurrences * scale
            for term, tf in blended.items():
                builder.add(term, number, tf / (k1 + tf))
        return cls.of(len(docs), builder.pack(len(docs)))

    @classmethod
    def of(cls, documents: int, postings: Postings) -> _View:
        """The view over packed postings, each term's IDF from how many documents hold it (its slice's length)."""
        import numpy as np

        view = cls(documents, postings)
        frequencies = np.diff(np.frombuffer(postings.offsets, dtype=np.int64))
        # A site has a few hundred distinct document frequencies among thousands of terms: each IDF is computed once,
        # by `term_idf` itself (the same float), and laid out by term.
        if not len(frequencies):
            view.idf = array("d")
            return view
        by_frequency = np.zeros(int(frequencies.max()) + 1, dtype=np.float64)
        for df in np.flatnonzero(np.bincount(frequencies)).tolist():
            by_frequency[df] = view.term_idf(df) if df else 0.0
        view.idf = array("d", by_frequency[frequencies].tobytes())
        return view

    def idf_of(self, term: str) -> float:
        """The term's IDF in this view, 0 when the view does not hold it."""
        number = self.postings.terms.get(term)
        return self.idf[number] if number is not None and number < len(self.idf) else 0.0

    def term_idf(self, df: int) -> float:
        return math.log(1 + (self.documents - df + 0.5) / (df + 0.5))

    def weights(self, query: Query) -> dict[str, float]:
        """Each matchable query term's IDF over the query's maximum.

        Joined words add evidence, not maximum, and are capped at the query's most informative word: an
        alternative spelling of two words says no more than they do, however rare it is (`DNS records` must not
        let every `DNSRecord` outweigh the rest of the query).
        """
        terms, held, count = self.postings.terms, self.idf, len(self.idf)
        idf = {
            term: held[number] if (number := terms.get(term)) is not None and number < count else 0.0
            for term in (*query.words, *query.joined)
        }
        maximum = sum(idf[term] or self.term_idf(0) for term in query.words)
        weights = {term: idf[term] / maximum for term in query.words if idf[term]}
        cap = max(weights.values(), default=0.0)
        for term in query.joined:
            if idf[term]:
                weights[term] = min(idf[term] / maximum, cap)
        return weights


@dataclass(slots=True)
class _Page:
    entry: IndexEntry
    sections: list[int]


@dataclass(slots=True)
class Ranker:
    """A site's pages, ready to rank; build once per loaded index."""

    entries: Sequence[IndexEntry]
    pages: list[_Page]
    page_view: _View
    section_view: _View
    titles: Postings
    """Title term -> (page, the term's share of that title's IDF), for title coverage."""
    kinds: PathWeights
    weighted: npt.NDArray[np.float64]
    """Each page's multiplier when the query names no page kind: its boost, times its rule's weight unless the
    rule applies only `when` a query asks for its kind."""
    toggled: npt.NDArray[np.float64]
    """Each page's multiplier when the query toggles its rule (`boosts`): the other of boost and boost x weight."""
    rule_numbers: npt.NDArray[np.intp]
    """Each page's first matching page-kind rule (`kinds.py`), -1 for none."""
    credit_scale: npt.NDArray[np.float64]
    """Each page's multiplier turned into its semantic credit's: a boost above 1 divided out (module docstring)."""
    order: npt.NDArray[np.intp]
    """Entry numbers grouped by page, pages in order (each page's in index order): a per-entry array taken in this
    order reduces to one value per page at `starts`."""
    starts: npt.NDArray[np.intp]
    """Where each page's entries start in `order`."""
    parameters: RankingParameters
    """The numbers it ranks with (`parameters.py`)."""
    semantic: _Semantic | None = None
    """Entry embeddings once `attach` has them (computed off the request path); until then ranking is lexical."""
    code_blocks: int = 0
    """How many code blocks the site's index holds (`SiteIndex.code`): their rows follow the outlines'."""

    @classmethod
    def build(
        cls, index: SiteIndex, kinds: PathWeights | None = None, parameters: RankingParameters = DEFAULT
    ) -> Ranker:
        entries = index.entries
        titles = [analyze(entry.title) for entry in entries]
        bodies = [analyze(entry.text) for entry in entries]
        pages = _pages(entries)
        page_docs = [_page_doc(page, entries, titles, bodies) for page in pages]
        vocabulary: dict[str, int] = {}
        page_view = _View.build(page_docs, parameters.page_fields, vocabulary, parameters.k1)
        sections = list(zip(titles, bodies, strict=True))
        section_view = _View.build(sections, parameters.section_fields, vocabulary, parameters.k1)
        titled = _title_index(page_view, pages)
        return cls.assemble(index, kinds, page_view, section_view, titled, pages, parameters=parameters)

    @classmethod
    def assemble(
        cls,
        index: SiteIndex,
        kinds: PathWeights | None,
        page_view: _View,
        section_view: _View,
        titles: Postings,
        pages: list[_Page] | None = None,
        *,
        parameters: RankingParameters = DEFAULT,
    ) -> Ranker:
        """The ranker over views built now (with `parameters`) or loaded from a prebuilt artifact (`artifact.py`,
        built with `DEFAULT`); what depends on the configured page-kind rules is worked out here, so an artifact
        never carries them."""
        import numpy as np

        if page_view.postings.terms is not titles.terms or section_view.postings.terms is not titles.terms:
            raise ValueError("a ranker's views must share one vocabulary")
        pages = pages if pages is not None else _pages(index.entries)
        kinds = kinds or PathWeights()
        plain = np.array([page.entry.boost for page in pages], dtype=np.float64)
        rule_numbers = np.array(
            [-1 if (rule := kinds.rule_for(index.site, page.entry.page)) is None else rule for page in pages],
            dtype=np.intp,
        )
        weights = np.array([1.0, *(rule.weight for rule in kinds.rules)])[rule_numbers + 1]
        usual = np.array([False, *(not rule.when for rule in kinds.rules)])[rule_numbers + 1]
        weighted = np.where(usual, plain * weights, plain)
        toggled = np.where(usual, plain, plain * weights)
        credit_scale = 1 / np.maximum(plain, 1.0)
        order = np.array([n for page in pages for n in page.sections], dtype=np.intp)
        starts = np.cumsum([0, *(len(page.sections) for page in pages[:-1])], dtype=np.intp)
        return cls(
            index.entries,
            pages,
            page_view,
            section_view,
            titles,
            kinds,
            weighted,
            toggled,
            rule_numbers,
            credit_scale,
            order,
            starts,
            parameters,
            code_blocks=len(index.code),
        )

    def attach(self, vectors: SiteVectors | ScanRows) -> None:
        """Start ranking semantically too, from the site's vectors or their stored scan rows; one assignment, so a
        concurrent search sees all of it or none.

        Blocking (without stored neighbour similarities, the hubness correction compares every entry with every
        other: 0.2 s for 4,000 entries), so the service calls it off the event loop.
        """
        rows = len(vectors.matrix) if isinstance(vectors, SiteVectors) else len(vectors)
        if rows != len(self.entries) + len(self.pages) + self.code_blocks:
            raise ValueError(
                f"{rows} vectors for {len(self.entries)} entries, {len(self.pages)} page outlines and "
                f"{self.code_blocks} code blocks"
            )
        self.semantic = _Semantic.of(vectors, self.order, self.starts, self.parameters)

    def listing(self, limit: int | None = None, leave_out: frozenset[str] = frozenset()) -> list[RankedHit]:
        """Pages in index order (the `*` query), one unscored hit per page entry, the first `limit` of those whose
        page is not left out (all without a limit).

        Previews come from the whole page's text, since a page entry's own text is often empty.
        """
        kept = [page for page in self.pages if page.entry.page not in leave_out][:limit]
        return [RankedHit(page.entry, 1.0, (page.entry.title,), self._text(page)) for page in kept]

    def _text(self, page: _Page) -> str:
        """The whole page's text, joined when a preview needs it (kept, it would hold every entry's text twice)."""
        return " ".join(self.entries[n].text for n in page.sections if self.entries[n].text.strip())

    def search(self, query: str, limit: int, vector: npt.NDArray[np.float32] | None = None) -> list[RankedHit]:
        """The best pages for `query`, best first, one hit per page (`score` of the analysed query, every hit built).

        `vector` is the query's embedding (`shared.embedding.Encoder`); with it, and this site's embeddings
        attached, a page also earns `weight * (similarity - threshold)` above the threshold, times its boost (at
        most 1) and the query's say (less the more of it is identifiers, and the longer it is), and pages that
        share no word with the query can be found.
        """
        wanted = analyze_query(query)
        scored = self.score(wanted, semantic_say(query, wanted, self.parameters), limit, vector)
        return [scored.hit(number) for number in range(len(scored.pages))]

    def score(self, wanted: Query, say: float, limit: int, vector: npt.NDArray[np.float32] | None = None) -> Scored:
        """The best `limit` pages for an analysed query, scored, best first; their hits are built on demand.

        Every page that shares a term with the query or is close to it in meaning gets its whole score at once
        (its best section's, its own, the prior and the semantic credit, as arrays), so a caller merging many
        sites builds hits only for the few it returns: the per-hit work no longer grows with the sites searched.
        """
        import numpy as np

        if not wanted.words or limit < 1:
            return Scored(self, [], [], None, None)
        scores = self.page_view.postings.coordinated(self.page_view.weights(wanted))
        coverage = self.titles.sums(dict.fromkeys((*wanted.words, *wanted.joined), 1.0), matched=False)[0]
        boosts = self.boosts(wanted)
        prior = boosts * (1 + coverage)
        candidates = np.flatnonzero(scores)
        credits = None
        cosines = None
        semantic = self.semantic
        if semantic is not None and vector is not None and say > 0:
            close, closeness, cosines = semantic.close_pages(vector)
            if len(close):
                credits = np.zeros(len(scores))
                credits[close] = closeness * say * boosts[close] * self.credit_scale[close]
                candidates = np.union1d(candidates, close)
        if not len(candidates):
            return Scored(self, [], [], None, cosines)
        sections = self.section_view.postings.coordinated(self.section_view.weights(wanted))
        best = np.maximum.reduceat(sections[self.order], self.starts)
        fit = self.site_fit(wanted)
        share = self.parameters.section_share
        final = (share * best[candidates] + (1 - share) * scores[candidates]) * (fit * prior[candidates])
        if credits is not None:
            final = final + credits[candidates]
        top = np.argsort(-final, kind="stable")[:limit]
        return Scored(self, candidates[top].tolist(), final[top].tolist(), sections, cosines)

    @property
    def vocabulary(self) -> dict[str, int]:
        """The site's one vocabulary: term -> number, in every view (`assemble` makes sure)."""
        return self.titles.terms

    def boosts(self, wanted: Query) -> npt.NDArray[np.float64]:
        """Each page's multiplier for this query: its usual one (`weighted`), except on pages whose rule the query
        toggles (`PathWeights.toggled`: it names an `unless` rule's kind, "proposal", "upgrading", or a `when` rule's,
        "from the CLI"), which get the other (`toggled`)."""
        import numpy as np

        toggled = self.kinds.toggled((*wanted.words, *wanted.joined)) if self.kinds.rules else frozenset()
        if not toggled:
            return self.weighted
        return np.where(np.isin(self.rule_numbers, list(toggled)), self.toggled, self.weighted)

    def site_fit(self, wanted: Query) -> float:
        """How much this site is about the query: the mean, over query words, of how common each is here."""
        frequencies = [self.page_view.postings.frequency(term) for term in wanted.words]
        return site_fit(frequencies, self.page_view.documents, self.parameters)


@dataclass(frozen=True, slots=True)
class Scored:
    """One site's best pages for a query, best first, with what building their hits needs (`Ranker.score`)."""

    ranker: Ranker
    pages: list[int]
    """Page numbers (`Ranker.pages`), best first."""
    scores: list[float]
    """Their scores, on the scale the provider compares across sites and against `min_score`."""
    sections: npt.NDArray[np.float64] | None
    """Every entry's section-view score for the query."""
    cosines: npt.NDArray[np.float32] | None
    """Every entry's corrected cosine with the query, when it was ranked semantically."""

    def page(self, number: int) -> str:
        """The path of the `number`th best page."""
        return self.ranker.pages[self.pages[number]].entry.page

    def hit(self, number: int) -> RankedHit:
        """The `number`th best page's hit: its best section (the first on a tie; when no section shares a term,
        its closest by meaning), breadcrumb and preview source."""
        ranker = self.ranker
        page = ranker.pages[self.pages[number]]
        assert self.sections is not None
        best, best_score = _best(self.sections, page.sections)
        if best_score == 0.0 and self.cosines is not None:  # found by meaning alone: its closest section
            cosines = self.cosines
            best = max(page.sections, key=lambda n: float(cosines[n]))
        section = ranker.entries[best]
        crumb = (*page.entry.trail_titles, page.entry.title)
        if section.anchor is not None:
            crumb = (*crumb, section.title)
        source = section.text if section.text.strip() else ranker._text(page)
        return RankedHit(page.entry, self.scores[number], crumb, source, section)


def coordinate(scores: npt.NDArray[np.float64], matched: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Each document's summed score times the share of the query weight it matched, when it matched less than all."""
    import numpy as np

    coordinated: npt.NDArray[np.float64] = np.where(matched < 1.0, scores * matched, scores)
    return coordinated


def site_fit(frequencies: Sequence[int], pages: int, parameters: RankingParameters) -> float:
    """How much a site is about a query: the mean, over the query's words, of how common each is among its `pages`
    (`frequencies`: how many of them hold each word)."""
    half = parameters.site_fit_half
    shares = [frequency / pages for frequency in frequencies]
    return sum(share / (share + half) for share in shares) / len(shares)


def semantic_say(query: str, wanted: Query, parameters: RankingParameters) -> float:
    """How much of its semantic credit a query keeps (`parameters.py`: `say` times `length`); the same on every
    site, so a caller searching many works it out once."""
    said = 1.0 - parameters.identifier_scale * identifier_share(query)
    return said * min(1.0, parameters.balance_words / max(1, len(wanted.words)))


@dataclass(frozen=True, slots=True)
class _Semantic:
    rows: QuantizedRows
    """The entries' rows, then the page outlines' (`vectors.embedded_texts`), as the scan holds them (int8)."""
    code_rows: _CodeRows | None
    """The code blocks' rows (after the outlines'), scanned only by code search."""
    order: npt.NDArray[np.intp]
    """Entry numbers grouped by page, pages in order: one per entry, so its length is where the outlines' rows
    start."""
    starts: npt.NDArray[np.intp]
    """Where each page's entries start in `order`."""
    correction: npt.NDArray[np.float32]
    """Subtracted from each entry's cosine: `hub_weight` times its neighbour similarity less the site's median."""
    parameters: RankingParameters

    @classmethod
    def of(
        cls,
        vectors: SiteVectors | ScanRows,
        order: npt.NDArray[np.intp],
        starts: npt.NDArray[np.intp],
        parameters: RankingParameters,
    ) -> _Semantic:
        """The site's embeddings ready to score, held as int8 (`quantized`: no float rows are kept; stored scan rows
        are handed over as they are, vectors rounded here); their stored neighbour similarity (over `DEFAULT`'s
        neighbours) is used only when these parameters ask for as many, else it is computed from the float rows
        (from the int8 rows, scaled back, for scan rows)."""
        import numpy as np

        entries = len(order)
        stored = vectors.hubness
        rounded = vectors.quantized if isinstance(vectors, ScanRows) else quantize(vectors.matrix)
        if stored is not None and len(stored) == entries and parameters.hub_neighbours == DEFAULT.hub_neighbours:
            hubness = stored
        else:  # from the float rows, or from the int8 ones scaled back when only those were stored
            floats = rounded.scaled_back(entries) if isinstance(vectors, ScanRows) else vectors.matrix[:entries]
            hubness = neighbour_similarity(floats, parameters.hub_neighbours)
        correction = (parameters.hub_weight * (hubness - np.median(hubness))).astype(np.float32)
        pages = entries + len(starts)  # the code blocks' rows follow the outlines': scanned only by code search
        columns, largest = rounded
        code = None
        if columns.shape[1] > pages:  # copied: the rows of every kind are freed once the scan has its own copy
            code = _CodeRows(Quantized(np.ascontiguousarray(columns[:, pages:]), largest[pages:].copy()))
            rounded = Quantized(columns[:, :pages], largest[:pages])
        return cls(QuantizedRows(rounded), code, order, starts, correction, parameters)

    def code_similarities(self, query: QueryParts) -> npt.NDArray[np.float32] | None:
        """Every code block row's cosine with the query (`split_query`); None when the site has no code rows."""
        return self.code_rows.scan().similarities(query) if self.code_rows is not None else None

    def close_pages(
        self, query: npt.NDArray[np.float32]
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64], npt.NDArray[np.float32]]:
        """Pages whose similarity is above the threshold and their credit, and every entry's corrected cosine.

        A page's similarity is its best entry's corrected cosine blended with its outline's (`outline_share`). Only
        an entry whose own cosine is above the threshold is corrected: the threshold is what keeps off-topic
        questions out, and the correction only reorders what passes it (raising an unusually specific entry over
        it would let any question reach a small site's odd page).
        """
        import numpy as np

        similarities = self.rows.similarities(split_query(query))
        entries = len(self.order)
        raw, outlines = similarities[:entries], similarities[entries:]
        threshold, share = self.parameters.threshold, self.parameters.outline_share
        cosines = np.where(raw > threshold, raw - self.correction, raw)
        best = np.maximum.reduceat(cosines[self.order], self.starts).astype(np.float64)
        blended = (1 - share) * best + share * outlines.astype(np.float64)
        close = np.flatnonzero(blended > threshold)
        return close, self.parameters.weight * (blended[close] - threshold), cosines


class _CodeRows:
    """A site's code block rows, made ready to scan by the first code search: a cold instance loading many sites
    does not pay an onnxruntime session per site for rows a page search never reads (10 ms for forge's 2,150)."""

    __slots__ = ("_lock", "_quantized", "_rows")

    def __init__(self, quantized: Quantized) -> None:
        self._quantized: Quantized | None = quantized
        self._rows: QuantizedRows | None = None
        self._lock = threading.Lock()

    def scan(self) -> QuantizedRows:
        with self._lock:
            if self._rows is None:
                assert self._quantized is not None
                self._rows, self._quantized = QuantizedRows(self._quantized), None  # the session holds its own copy
            return self._rows


def _best(sections: npt.NDArray[np.float64], numbers: list[int]) -> tuple[int, float]:
    """The best-scoring of these sections (the first on a tie, the first section when none scored) and its score."""
    scores = sections[numbers]
    best = int(scores.argmax())
    return numbers[best], float(scores[best])


def _title_index(view: _View, pages: list[_Page]) -> Postings:
    """Title term -> (page, IDF share of the page title): a query mentioning all of a title covers it fully.

    A title counts each word it writes once (`written_words`), so `VNet` or `Hub-Networking` weigh as one
    word each, not as a whole plus its parts.
    """
    builder = _Builder(view.postings.terms)
    for number, page in enumerate(pages):
        title = {term: view.idf_of(term) or view.term_idf(0) for term in written_words(page.entry.title)}
        total = sum(title.values())
        for term, idf in title.items():
            builder.add(term, number, idf / total)
    return builder.pack(len(pages))


def _pages(entries: Sequence[IndexEntry]) -> list[_Page]:
    """Pages in index order with their entries; the first page entry seen represents the page."""
    pages = []
    for head, sections in page_groups(entries):
        pages.append(_Page(entries[head], sections))
    return pages


def _page_doc(
    page: _Page, entries: Sequence[IndexEntry], titles: list[list[str]], bodies: list[list[str]]
) -> list[list[str]]:
    """The page view's fields of one page: title, section headings, body."""
    headings = [term for n in page.sections if entries[n].anchor is not None for term in titles[n]]
    return [analyze(page.entry.title), headings, [term for n in page.sections for term in bodies[n]]]
