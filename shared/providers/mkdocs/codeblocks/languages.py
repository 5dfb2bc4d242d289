"""The languages of a site's code blocks as its authors wrote them: the fences of the Markdown published beside
each page, read in the background and kept in the shared store.

The built HTML often names no language (Material writes a plain `highlight` div); the raw Markdown's fence does.
For each index version of a site (its digest), the pages that hold code blocks have their Markdown read once
(`RawMarkdownUrlPattern`, at most `CONCURRENCY` at a time, conditional on nothing: a new index version is read
afresh) and their fences (`code.fences`) kept: in memory, and in the shared store under
`derived/{site}/code/fences.json` for every other instance, which reads them instead (the warm-up reads and stores
them for each stored index version first: `warm.warm_fences`). No search waits for them:
until they are known a block's language is its HTML class or a guess, marked as one (`code.named`). A read that
fails is tried again with backoff (`RETRY_SECONDS`, doubling to `MAX_RETRY_SECONDS`); a page the origin does not
serve as Markdown keeps its guess.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from shared.cache import CopyStore, StoredCopy
from shared.cache.names import safe_name
from shared.errors import OriginError, StoreError
from shared.fetch import OriginClient
from shared.providers.mkdocs.codeblocks.code import Fence, fences
from shared.providers.mkdocs.indexes.index import SiteIndex
from shared.settings import DERIVED_PREFIX

log = logging.getLogger(__name__)

CONCURRENCY = 4
"""Markdown pages read at once for one site."""
RETRY_SECONDS = 30.0
MAX_RETRY_SECONDS = 3600.0
FORMAT = 1

Fences = Mapping[str, list[Fence]]
"""Page path -> its fences, for the pages whose Markdown was read."""


def fences_name(site: str) -> str:
    """Where a site's code fences are kept: `derived/{site}/code/fences.json`."""
    return f"{DERIVED_PREFIX}{safe_name(site)}/code/fences.json"


def dumps(digest: str, found: Fences) -> bytes:
    pages = {page: [[fence.key, fence.language] for fence in fences] for page, fences in sorted(found.items())}
    return json.dumps({"format": FORMAT, "index": digest, "pages": pages}, separators=(",", ":")).encode()


def loads(payload: bytes, digest: str) -> Fences | None:
    """The stored fences when they are of this index version (its `digest`) and readable, else None."""
    try:
        document = json.loads(payload)
        if document.get("format") != FORMAT or document.get("index") != digest:
            return None
        return {
            str(page): [Fence(str(key), str(language)) for key, language in fences]
            for page, fences in document["pages"].items()
        }
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


@dataclass(slots=True)
class _Known:
    digest: str
    fences: Fences | None = None
    complete: bool = False
    """Every code page's Markdown answered: nothing is asked again for this index version."""
    task: asyncio.Task[None] | None = None
    failures: int = 0
    retry_at: float = 0.0


class CodeFences:
    """Each site's code fences for the index version it serves, found in the background (`fences`)."""

    def __init__(
        self,
        client: OriginClient,
        store: CopyStore,
        url: Callable[[str, str], str | None],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._store = store
        self._url = url
        """(site, page path) -> the page's raw Markdown URL, None when none is published."""
        self._clock = clock
        self._known: dict[str, _Known] = {}

    def fences(self, site: str, index: SiteIndex, digest: str) -> Fences | None:
        """The site's fences for this index version when known; otherwise None, and they are being found (unless a
        failed attempt's backoff has not run out). Never waits, never raises."""
        known = self._known.get(site)
        if known is None or known.digest != digest:
            if known is not None and known.task is not None:
                known.task.cancel()
            known = self._known[site] = _Known(digest)
        if known.complete:
            return known.fences
        if not index.code:
            known.fences, known.complete = {}, True
            return known.fences
        if known.task is None and self._clock() >= known.retry_at:
            known.task = asyncio.get_running_loop().create_task(self._find(site, index, known))
        return known.fences  # what a partial read found, until a later one completes it

    def state(self, site: str) -> str | None:
        """How the site's fences stand: `read` (every code page's), `partial`, `reading`, or None when not asked."""
        known = self._known.get(site)
        if known is None:
            return None
        if known.complete:
            return "read"
        return "partial" if known.fences else "reading"

    async def settled(self, site: str) -> None:
        """Wait until the site's running search for fences ends (tests, tools)."""
        known = self._known.get(site)
        if known is not None and known.task is not None:
            await asyncio.gather(known.task, return_exceptions=True)

    async def _find(self, site: str, index: SiteIndex, known: _Known) -> None:
        try:
            found, complete = await stored_fences(self._store, site, known.digest), True
            if found is None:
                found, complete = await read_fences(self._client, self._url, site, index)
                if complete:
                    await keep_fences(self._store, site, known.digest, found)
            if found or complete:
                known.fences = found
            if not complete:  # some pages did not answer: asked again after the backoff, the rest kept meanwhile
                raise OriginError("some pages' Markdown could not be read")
            known.complete, known.failures = True, 0
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # tried again later; the blocks keep their guessed languages meanwhile
            known.failures += 1
            wait = min(MAX_RETRY_SECONDS, RETRY_SECONDS * 2 ** (known.failures - 1))
            known.retry_at = self._clock() + wait
            log.info("site %s: code fences not read (%s); trying again in %.0f s", site, type(exc).__name__, wait)
        finally:
            known.task = None


async def stored_fences(store: CopyStore, site: str, digest: str) -> Fences | None:
    """The site's stored fences when they are of this index version; None when none are (or unreadable)."""
    if not store.shared:
        return None
    try:
        entry = await store.read(fences_name(site))
    except StoreError:
        return None
    return loads(entry.payload, digest) if entry is not None else None


async def fences_stored(store: CopyStore, site: str, digest: str) -> bool:
    """Whether fences of this index version are stored, from the record's properties alone (no download)."""
    found = await store.stat(fences_name(site))
    return found is not None and found.built_from == digest


async def keep_fences(store: CopyStore, site: str, digest: str, found: Fences) -> bool:
    """Store the site's fences of this index version for every instance (whoever writes last wins: each reader
    checks the version); True when written. Never raises."""
    if not store.shared:
        return False
    try:
        existing = await store.stat(fences_name(site))
        entry = StoredCopy.derived(dumps(digest, found), datetime.now(UTC), built_from=digest, entries=len(found))
        written = await store.write(fences_name(site), entry, expected_version=existing.version if existing else None)
    except StoreError as exc:
        log.info("site %s: code fences not stored (%s)", site, exc)
        return False
    return written is not None


async def read_fences(
    client: OriginClient,
    url: Callable[[str, str], str | None],
    site: str,
    index: SiteIndex,
) -> tuple[dict[str, list[Fence]], bool]:
    """Each of the index's code pages' fences, read from its raw Markdown (`url`: site, page -> where), at most
    `CONCURRENCY` at a time, and whether every page was answered (a 404 is an answer: it publishes no Markdown)."""
    lane = asyncio.Semaphore(CONCURRENCY)
    pages = list(dict.fromkeys(block.page for block in index.code))
    answered = 0
    found: dict[str, list[Fence]] = {}

    async def one(page: str) -> None:
        nonlocal answered
        address = url(site, page)
        if address is None:
            answered += 1
            return
        async with lane:
            try:
                response = await client.get(address, scope=client.origin)
            except OriginError:
                return
        if response.status == 200:
            found[page] = fences(response.text())
        if response.status < 500 and response.status not in (408, 429):
            answered += 1

    await asyncio.gather(*(one(page) for page in pages))
    return found, answered == len(pages)
