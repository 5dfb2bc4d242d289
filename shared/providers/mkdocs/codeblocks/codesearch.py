"""Code search over the loaded sites (`kind=code`): each site's code ranker kept with the ranker it was built
beside, its blocks' languages from the fences once `languages.CodeFences` has them, and blocks as results.

The page search runs first, on the same federation and query vector (`Federation.ranked`), because the pages it
ranks lift their blocks (`coderank.py`); the vector is scanned once for the pages and the code rows together.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from shared.code_samples import sample
from shared.errors import SiteUnavailableError
from shared.models import SearchResult
from shared.preview import make_preview
from shared.providers.mkdocs.codeblocks.code import CodeBlock, CodeColumns
from shared.providers.mkdocs.codeblocks.coderank import PAGE_POOL, CodeRanker, code_similarities, page_scores, rank_code
from shared.providers.mkdocs.codeblocks.languages import CodeFences, Fences
from shared.providers.mkdocs.indexes.index import IndexEntry, SiteIndex
from shared.providers.mkdocs.lifecycle.loading import LoadedSite
from shared.providers.mkdocs.scoring.federation import Federation
from shared.providers.mkdocs.scoring.ranking import RankedHit, Ranker
from shared.providers.mkdocs.scoring.text import Query

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from shared.encoders import QueryEmbedding
    from shared.providers.mkdocs.scoring.federation import Products

    Similarities = list[npt.NDArray[np.float32] | None]

log = logging.getLogger(__name__)


def scan_both(federation: Federation) -> Callable[[QueryEmbedding], tuple[Products | None, Similarities]]:
    """What a code search does with its query vector on the embedding thread: the page scan and the code rows'."""

    def scan(asked: QueryEmbedding) -> tuple[Products | None, Similarities]:
        return federation.scan(asked.vector), code_similarities(federation, asked.vector)

    return scan


async def readable(loaded: Sequence[LoadedSite], read: Callable[[LoadedSite], Awaitable[None]]) -> list[LoadedSite]:
    """The searched sites whose code side `read` read (`SiteRegistry.code_side`: on a site's first code search); a
    site whose code blocks cannot be read is left out of this search, never the others with it."""
    outcomes = await asyncio.gather(*(read(entry) for entry in loaded), return_exceptions=True)
    for entry, outcome in zip(loaded, outcomes, strict=True):
        if isinstance(outcome, SiteUnavailableError):
            log.warning("site %s: left out of a code search: %s", entry.index.site, outcome.reason)
        elif isinstance(outcome, BaseException):
            raise outcome
    return [entry for entry, outcome in zip(loaded, outcomes, strict=True) if outcome is None]


class CodeRankers:
    """Each site's code ranker, built (off the event loop) on its first code search and again whenever the site's
    ranker is swapped, once however many searches ask at the same time; relabelled once the site's fences are
    known."""

    def __init__(self, fences: CodeFences) -> None:
        self._fences = fences
        self._held: dict[str, tuple[Ranker, CodeRanker, Fences | None]] = {}
        self._building: dict[str, tuple[Ranker, asyncio.Future[CodeRanker]]] = {}

    async def of(self, loaded: Sequence[LoadedSite], rankers: Sequence[Ranker]) -> list[CodeRanker]:
        found = []
        for site, ranker in zip(loaded, rankers, strict=True):
            key = site.index.site
            held = self._held.get(key)
            if held is None or held[0] is not ranker:
                built = await self._built(site, ranker)
                held = self._held.get(key)  # another search may have kept it (and relabelled it) meanwhile
                if held is None or held[0] is not ranker:
                    held = self._held[key] = (ranker, built, None)
            fences = self._fences.fences(key, site.index, site.digest)
            if fences is not None and held[2] is not fences:
                held = self._held[key] = (ranker, await asyncio.to_thread(held[1].relabel, fences), fences)
            found.append(held[1])
        return found

    def reading(self, site: str) -> bool:
        """Whether the site's Markdown fences are still being read (its guessed languages may yet be named)."""
        return self._fences.state(site) in ("reading", "partial")

    async def _built(self, site: LoadedSite, ranker: Ranker) -> CodeRanker:
        """The site's code ranker for this ranker, built once: a search arriving meanwhile waits for the same build
        (and a search cancelled meanwhile does not cancel it)."""
        key = site.index.site
        building = self._building.get(key)
        if building is None or building[0] is not ranker:
            future = asyncio.ensure_future(asyncio.to_thread(_built, site.index))
            building = self._building[key] = (ranker, future)
            future.add_done_callback(lambda done: self._done(key, done))
        return await asyncio.shield(building[1])

    def _done(self, key: str, future: asyncio.Future[CodeRanker]) -> None:
        if self._building.get(key, (None, None))[1] is future:
            del self._building[key]
        if not future.cancelled():
            future.exception()  # retrieved: a failed build fails the searches that waited for it, and is tried again

    async def settled(self, site: str) -> None:
        """Wait until the site's fences being read are read (tools, tests)."""
        await self._fences.settled(site)

    def languages(self, site: str) -> str | None:
        """Where the site's fences stand (`CodeFences.state`), None before its first code search."""
        return self._fences.state(site)


def _built(index: SiteIndex) -> CodeRanker:
    """A site's code ranker, from the view its prebuilt ranker's code part stored when the blocks came from one."""
    view = index.code.view if isinstance(index.code, CodeColumns) else None
    return CodeRanker.build(index, view=view)


def ranked(
    code: Sequence[CodeRanker],
    federation: Federation,
    wanted: Query,
    say: float,
    products: Products | None,
    similarities: Similarities | None,
    *,
    language: str | None,
    limit: int,
    missing: Sequence[frozenset[str]],
    floor: float = 0.0,
) -> list[tuple[int, int, float]]:
    """The best blocks as (site number, block number, score), best first (`floor`: the relevance floor, which a
    page must clear to lift its blocks)."""
    lexical = federation.lexical(wanted)
    pages = federation.ranked(lexical, say, PAGE_POOL, products, missing)
    fits = lexical.fits.tolist() if lexical is not None else [0.0] * len(code)
    hits = rank_code(
        code,
        wanted,
        fits=fits,
        page_scores=page_scores(federation, pages, floor),
        similarities=similarities if similarities is not None else [None] * len(code),
        say=say if similarities is not None else 0.0,
        language=language,
        limit=limit,
        missing=missing,
    )
    return [(hit.site, hit.number, hit.score) for hit in hits]


def listed(
    code: Sequence[CodeRanker], *, language: str | None, limit: int, missing: Sequence[frozenset[str]]
) -> list[tuple[int, int, float]]:
    """The `*` query: blocks in index order, round-robin across sites, only in `language` when one is given."""
    per_site = [
        [
            (site, number, 1.0)
            for number, block in enumerate(ranker.blocks)
            if (language is None or ranker.languages[number] == language) and block.page not in missing[site]
        ]
        for site, ranker in enumerate(code)
    ]
    interleaved = [hit for group in _zip_longest(per_site) for hit in group]
    return interleaved[:limit]


def _zip_longest(groups: list[list[tuple[int, int, float]]]) -> list[list[tuple[int, int, float]]]:
    longest = max((len(group) for group in groups), default=0)
    return [[group[n] for group in groups if n < len(group)] for n in range(longest)]


def result(
    base: SearchResult, block: CodeBlock, language: str, guessed: bool, score: float, query: str, *, pending: bool
) -> SearchResult:
    """A block's result: the page result's site, location and freshness (`base`, made by the provider for the
    block's location) with the block, its language and the prose before it as the preview; a guessed language
    marked `pending` while the site's fences are still being read."""
    preview = make_preview(block.prose, query) if block.prose.strip() else block.title
    return base.model_copy(
        update={
            "preview_text": preview,
            "score": round(score, 4) if math.isfinite(score) else 0.0,
            "code": sample(block.code, language),
            "language_guessed": guessed,
            "language_pending": True if guessed and pending else None,
        }
    )


def page_hit(block: CodeBlock, score: float) -> RankedHit:
    """A code block as a page hit at its section: what the provider turns into a result (location, url, breadcrumb)."""
    entry = IndexEntry(block.location, block.page, block.anchor, block.title, block.page_title, "", 1.0, block.trail)
    crumb = (*entry.trail_titles, block.page_title) + ((block.title,) if block.anchor is not None else ())
    return RankedHit(entry, score, crumb, block.prose)
