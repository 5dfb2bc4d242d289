"""Rank a site's code blocks (`code.py`) for a question asking for an example to copy: one result per block.

A block is found three ways, added up:

- by words: BM25F over the block's heading (page title, trail, section title), the prose just before it (what the
  block is for) and its code (identifiers whole and split, keys, comments: `text.analyze`), coordinated as page
  search's views are (`ranking.py`) and multiplied by the site's fit to the question;
- by its page: the page search's score for the block's page (`Federation.ranked`) over the best page's, times
  `page_share`: a question says which page it is about far more often than which lines, and page search is where
  the ranking's care went;
- by meaning: the question's cosine with the block's own row (`vectors.code_text`) above `threshold`, times
  `weight` and the question's say (`ranking.semantic_say`).

At most `PER_PAGE` blocks of a page are returned, so one long page of examples cannot fill the answer.
How the numbers were chosen: `CODE` below, and the note of the change that set them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from shared.providers.mkdocs.codeblocks.code import CodeBlock, fenced_languages, named
from shared.providers.mkdocs.indexes.index import TRAIL_SEPARATOR, SiteIndex
from shared.providers.mkdocs.scoring.postings import FieldView
from shared.providers.mkdocs.scoring.quantized import split_query
from shared.providers.mkdocs.scoring.text import Query, analyze

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from shared.providers.mkdocs.codeblocks.code import Fence
    from shared.providers.mkdocs.scoring.federation import Federation
    from shared.providers.mkdocs.scoring.ranking import Scored

PER_PAGE = 3
"""Blocks of one page returned at most."""


@dataclass(frozen=True, slots=True)
class CodeParameters:
    """The numbers code search ranks with."""

    fields: tuple[tuple[float, float], ...] = ((2.0, 0.5), (1.5, 0.75), (1.0, 0.75))
    """(weight, length normalisation) of the heading, the prose before the block and the code."""
    k1: float = 1.2
    page_share: float = 0.5
    """The weight of the block's page's own search score, over the best page's."""
    threshold: float = 0.35
    weight: float = 1.0


CODE = CodeParameters()


@dataclass(frozen=True, slots=True)
class CodeRanker:
    """A site's code blocks, ready to rank, with each block's language and whether it was guessed."""

    blocks: Sequence[CodeBlock]
    view: FieldView
    languages: tuple[str, ...]
    guessed: tuple[bool, ...]
    pages: tuple[str, ...]
    """Each block's page path."""
    parameters: CodeParameters = CODE

    @classmethod
    def build(cls, index: SiteIndex, parameters: CodeParameters = CODE, view: FieldView | None = None) -> CodeRanker:
        """The ranker over the index's blocks, their languages from the HTML or guessed (`relabel` names them from
        the Markdown's fences once those are known); `view`, when a prebuilt ranker's code part stored one (built
        with the default parameters), spares building it."""
        blocks = index.code
        languages, guessed = _labels(blocks, [""] * len(blocks))
        pages = tuple(block.page for block in blocks)
        if view is not None and parameters == CODE and view.documents == len(blocks):
            return cls(blocks, view, languages, guessed, pages, parameters)
        docs = [
            [
                analyze(" ".join((block.page_title, *block.trail.split(TRAIL_SEPARATOR)[:-1], block.title))),
                analyze(block.prose),
                analyze(block.code),
            ]
            for block in blocks
        ]
        built = FieldView.build(docs, parameters.fields, {}, parameters.k1)
        return cls(blocks, built, languages, guessed, pages, parameters)

    def relabel(self, fences: Mapping[str, Sequence[Fence]]) -> CodeRanker:
        """This ranker with each block's language from its page's fences (`fences`: page path -> the page's fences,
        for the pages whose Markdown was read), where they name one."""
        fenced = [""] * len(self.blocks)
        for page, numbers in _by_page(self.pages).items():
            found = fences.get(page)
            if found is None:
                continue
            for number, language in zip(
                numbers, fenced_languages([self.blocks[n] for n in numbers], found), strict=True
            ):
                fenced[number] = language
        labels, guessed = _labels(self.blocks, fenced)
        return replace(self, languages=labels, guessed=guessed)

    def lexical(self, wanted: Query) -> npt.NDArray[np.float64]:
        """Every block's coordinated BM25F score for the question."""
        return self.view.postings.coordinated(self.view.weights(wanted))

    def of_language(self, language: str | None) -> npt.NDArray[np.bool_]:
        """Which blocks are in `language` (canonical; every block for None)."""
        import numpy as np

        if language is None:
            return np.ones(len(self.blocks), dtype=bool)
        return np.array([known == language for known in self.languages], dtype=bool)


def _labels(blocks: Sequence[CodeBlock], fenced: Sequence[str]) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    pairs = list(named(blocks, fenced))
    return tuple(language for language, _ in pairs), tuple(guess for _, guess in pairs)


def _by_page(pages: Sequence[str]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for number, page in enumerate(pages):
        grouped.setdefault(page, []).append(number)
    return grouped


PAGE_POOL = 50
"""Pages of the page search whose scores lift their blocks (`page_scores`)."""


def page_scores(
    federation: Federation, found: Sequence[tuple[int, Scored, int]], floor: float = 0.0
) -> list[dict[str, float]]:
    """Each site's pages among the page search's best (`Federation.ranked`) that clear the relevance `floor`, with
    their score over the best's: a question no page answers lifts no block (the floor keeps off-topic questions
    out of code search as it does out of page search)."""
    scores: list[dict[str, float]] = [{} for _ in federation.rankers]
    kept = [(site, scored, number) for site, scored, number in found if scored.scores[number] >= floor]
    top = max((scored.scores[number] for _, scored, number in kept), default=0.0)
    if top <= 0:
        return scores
    for site, scored, number in kept:
        scores[site][scored.page(number)] = scored.scores[number] / top
    return scores


def code_similarities(federation: Federation, vector: npt.NDArray[np.float32]) -> list[npt.NDArray[np.float32] | None]:
    """Each site's code rows' cosines with the query vector (None for a site without them)."""
    query = split_query(vector)
    return [part.code_similarities(query) if part is not None else None for part in federation.semantics]


@dataclass(frozen=True, slots=True)
class CodeHit:
    """One ranked block: its site's number among those searched, the block's number there, and its score."""

    site: int
    number: int
    score: float


def rank_code(
    rankers: Sequence[CodeRanker],
    wanted: Query,
    *,
    fits: Sequence[float],
    page_scores: Sequence[Mapping[str, float]],
    similarities: Sequence[npt.NDArray[np.float32] | None],
    say: float,
    language: str | None,
    limit: int,
    missing: Sequence[frozenset[str]] = (),
) -> list[CodeHit]:
    """The best `limit` blocks of all the sites, best first, at most `PER_PAGE` of a page, only in `language`
    when one is given, none of a `missing` page. `fits`: each site's fit to the question; `page_scores`: each site's
    page -> its page score over the best page's; `similarities`: each site's code rows' cosines with the question
    (None: ranked without meaning)."""
    import numpy as np

    scored: list[tuple[float, int, int]] = []
    for site, ranker in enumerate(rankers):
        if not ranker.blocks:
            continue
        parameters = ranker.parameters
        score = ranker.lexical(wanted) * fits[site] if wanted.words else np.zeros(len(ranker.blocks))
        pages = page_scores[site]
        if pages:
            score = score + parameters.page_share * np.array([pages.get(page, 0.0) for page in ranker.pages])
        cosines = similarities[site] if site < len(similarities) else None
        if cosines is not None and say > 0 and len(cosines) == len(ranker.blocks):
            above = np.maximum(cosines.astype(np.float64) - parameters.threshold, 0.0)
            score = score + parameters.weight * say * above
        score = np.where(ranker.of_language(language), score, 0.0)
        gone = missing[site] if site < len(missing) else frozenset()
        for number in np.flatnonzero(score > 0).tolist():
            if gone and ranker.pages[number] in gone:
                continue
            scored.append((float(score[number]), site, number))
    scored.sort(key=lambda found: (-found[0], found[1], found[2]))
    kept: list[CodeHit] = []
    per_page: dict[tuple[int, str], int] = {}
    for value, site, number in scored:
        page = (site, rankers[site].pages[number])
        if per_page.get(page, 0) >= PER_PAGE:
            continue
        per_page[page] = per_page.get(page, 0) + 1
        kept.append(CodeHit(site, number, value))
        if len(kept) == limit:
            break
    return kept
