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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shared.providers.mkdocs.indexes.columns import boosts_of
from shared.providers.mkdocs.indexes.index import IndexEntry, SiteIndex, page_groups
from shared.providers.mkdocs.indexes.kinds import PathWeights
from shared.providers.mkdocs.scoring.parameters import DEFAULT, RankingParameters
from shared.providers.mkdocs.scoring.postings import FieldView, Postings, _Builder
from shared.providers.mkdocs.scoring.semantics import SiteSemantics
from shared.providers.mkdocs.scoring.text import Query, analyze, written_words
from shared.providers.mkdocs.scoring.vectors import ScanRows, SiteVectors

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


class RankedPage:
    """A page as a ranker holds it: its entries' numbers in index order (`sections`) and the one that represents it
    (`head`), cut from the site's entries when first asked for (a prebuilt ranker's entries are columns: a cold load
    cuts none of its pages' entries, a search those it answers with)."""

    __slots__ = ("_cut", "_entries", "head", "sections")

    def __init__(self, entries: Sequence[IndexEntry], head: int, sections: list[int]) -> None:
        self._entries = entries
        self.head = head
        self.sections = sections
        self._cut: IndexEntry | None = None

    @property
    def entry(self) -> IndexEntry:
        cut = self._cut
        if cut is None:
            cut = self._cut = self._entries[self.head]
        return cut


@dataclass(slots=True)
class Ranker:
    """A site's pages, ready to rank; build once per loaded index."""

    entries: Sequence[IndexEntry]
    pages: list[RankedPage]
    page_view: FieldView
    section_view: FieldView
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
    semantic: SiteSemantics | None = None
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
        page_view = FieldView.build(page_docs, parameters.page_fields, vocabulary, parameters.k1)
        sections = list(zip(titles, bodies, strict=True))
        section_view = FieldView.build(sections, parameters.section_fields, vocabulary, parameters.k1)
        titled = _title_index(page_view, pages)
        return cls.assemble(index, kinds, page_view, section_view, titled, pages, parameters=parameters)

    @classmethod
    def assemble(
        cls,
        index: SiteIndex,
        kinds: PathWeights | None,
        page_view: FieldView,
        section_view: FieldView,
        titles: Postings,
        pages: list[RankedPage] | None = None,
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
        if len(pages) != len(index.pages):  # both in index order: the page paths are the index's, cut once
            raise ValueError(f"{len(pages)} ranked pages for an index of {len(index.pages)}")
        plain = np.array(boosts_of(index.entries, [page.head for page in pages]), dtype=np.float64)
        rule_numbers = np.array(kinds.rules_for(index.site, [page.path for page in index.pages]), dtype=np.intp)
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
        self.semantic = SiteSemantics.of(vectors, self.order, self.starts, self.parameters)

    def listing(self, limit: int | None = None, leave_out: frozenset[str] = frozenset()) -> list[RankedHit]:
        """Pages in index order (the `*` query), one unscored hit per page entry, the first `limit` of those whose
        page is not left out (all without a limit).

        Previews come from the whole page's text, since a page entry's own text is often empty.
        """
        kept = [page for page in self.pages if page.entry.page not in leave_out][:limit]
        return [RankedHit(page.entry, 1.0, (page.entry.title,), self._text(page)) for page in kept]

    def _text(self, page: RankedPage) -> str:
        """The whole page's text, joined when a preview needs it (kept, it would hold every entry's text twice)."""
        return " ".join(self.entries[n].text for n in page.sections if self.entries[n].text.strip())

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


@dataclass(frozen=True, slots=True)
class Scored:
    """One site's best pages for a query, best first, with what building their hits needs (`Federation.ranked`)."""

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


def site_fit(frequencies: Sequence[int], pages: int, parameters: RankingParameters) -> float:
    """How much a site is about a query: the mean, over the query's words, of how common each is among its `pages`
    (`frequencies`: how many of them hold each word)."""
    half = parameters.site_fit_half
    shares = [frequency / pages for frequency in frequencies]
    return sum(share / (share + half) for share in shares) / len(shares)


def _best(sections: npt.NDArray[np.float64], numbers: list[int]) -> tuple[int, float]:
    """The best-scoring of these sections (the first on a tie, the first section when none scored) and its score."""
    scores = sections[numbers]
    best = int(scores.argmax())
    return numbers[best], float(scores[best])


def _title_index(view: FieldView, pages: list[RankedPage]) -> Postings:
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


def _pages(entries: Sequence[IndexEntry]) -> list[RankedPage]:
    """Pages in index order with their entries; the first page entry seen represents the page."""
    pages = []
    for head, sections in page_groups(entries):
        pages.append(RankedPage(entries, head, sections))
    return pages


def _page_doc(
    page: RankedPage, entries: Sequence[IndexEntry], titles: list[list[str]], bodies: list[list[str]]
) -> list[list[str]]:
    """The page view's fields of one page: title, section headings, body."""
    headings = [term for n in page.sections if entries[n].anchor is not None for term in titles[n]]
    return [analyze(page.entry.title), headings, [term for n in page.sections for term in bodies[n]]]
