"""Each site's index, loaded lazily behind its own gate, from the shared cache or the origin.

A site loads on first use: a cached copy younger than CacheDurationHours is used without touching the origin;
otherwise the origin's copy is fetched, validated and written back; when the origin fails, a stale copy is the
fallback. A site that cannot load is failed for the process lifetime. A loaded site re-checks the store's version
at most every `check_interval` seconds and swaps in a newer copy whole, so no request sees a half-built index.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum

from shared.cache import CachedIndex, CacheStat, IndexStore, StoreError, store_newest
from shared.errors import OriginError, SiteUnavailableError
from shared.fetch import MAX_INDEX_BYTES, OriginClient
from shared.mkdocs.index import IndexFormatError, SiteIndex, parse_index
from shared.mkdocs.ranking import Ranker
from shared.mkdocs.semantic import Encoder, SemanticUnavailableError, SiteVectors, ensure_vectors
from shared.settings import DocumentationSettings

log = logging.getLogger(__name__)


class SiteState(StrEnum):
    NOT_LOADED = "not_loaded"
    LOADED = "loaded"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class LoadedSite:
    """An index and its ranker, built together and swapped together."""

    index: SiteIndex
    ranker: Ranker
    version: str | None
    """The store version this copy was last compared with; the periodic check looks for a different one."""
    source: str
    fetched_at: datetime
    digest: str


@dataclass(frozen=True, slots=True)
class FetchedIndex:
    """A validated copy of a site's index straight from the origin."""

    entry: CachedIndex
    index: SiteIndex


def validators(cached: CachedIndex | CacheStat | None) -> dict[str, str]:
    """Conditional-request headers from what the origin said when the cached copy was taken."""
    headers: dict[str, str] = {}
    if cached is not None and cached.origin_etag:
        headers["If-None-Match"] = cached.origin_etag
    if cached is not None and cached.origin_last_modified:
        headers["If-Modified-Since"] = cached.origin_last_modified
    return headers


async def fetch_index(
    client: OriginClient,
    settings: DocumentationSettings,
    site: str,
    *,
    conditional: CachedIndex | CacheStat | None = None,
) -> FetchedIndex | None:
    """GET the site's published index and validate it; None on 304 (only when `conditional` is given).

    Raises OriginError when the origin fails and IndexFormatError when the copy is malformed or empty, so a bad
    origin copy never gets as far as the cache.
    """
    headers = validators(conditional)
    response = await client.get(settings.index_url(site), max_bytes=MAX_INDEX_BYTES, headers=headers)
    if response.status == 304 and headers:
        return None
    if response.status != 200:
        raise OriginError(f"index request answered HTTP {response.status}", status=response.status)
    index = await asyncio.to_thread(parse_index, site, response.body)
    entry = CachedIndex(
        response.body, datetime.now(UTC), response.etag, response.last_modified, entries=len(index.entries)
    )
    return FetchedIndex(entry, index)


class SiteRegistry:
    """Per-site load state for one process: gates, loaded indexes, failures."""

    def __init__(
        self,
        settings: DocumentationSettings,
        client: OriginClient,
        store: IndexStore,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings
        self._client = client
        self._store = store
        self._clock = clock
        self._gates = {site: asyncio.Lock() for site in settings.sites}
        self._loaded: dict[str, LoadedSite] = {}
        self._checked: dict[str, float] = {}
        self._failed: dict[str, str] = {}
        self._semantic: dict[str, str] = {}
        """Site -> state of its entry embeddings: pending, ready, or why they are unavailable."""
        self._embedding: dict[str, asyncio.Task[None]] = {}
        self._encode_gate = asyncio.Semaphore(1)  # one site embeds at a time: it keeps every core busy

    @property
    def sites(self) -> tuple[str, ...]:
        return self._settings.sites

    async def get(self, site: str) -> LoadedSite | None:
        """The site's loaded index, loading it on first use; None when the site failed to load.

        A loaded site is returned at once unless its store check is due; then one request checks while the others
        keep being answered from the index in hand.
        """
        if site in self._failed:
            return None
        gate = self._gates[site]
        loaded = self._loaded.get(site)
        if loaded is not None and (not self._check_due(site) or gate.locked()):
            return loaded
        async with gate:
            if site in self._failed:
                return None
            current = self._loaded.get(site)
            if current is None:
                return await self._first_load(site)
            if self._check_due(site):
                await self._refresh(site, current)
            return self._loaded[site]

    def _check_due(self, site: str) -> bool:
        return self._clock() - self._checked.get(site, 0.0) >= self._settings.cache.check_interval_seconds

    async def index(self, site: str) -> SiteIndex | None:
        loaded = await self.get(site)
        return loaded.index if loaded else None

    async def _first_load(self, site: str) -> LoadedSite | None:
        try:
            loaded = await self._load(site)
        except SiteUnavailableError as exc:
            self._failed[site] = exc.reason
            log.debug("site %s failed to load and is skipped: %s", site, exc.reason)
            return None
        self._install(site, loaded)
        return loaded

    def _install(self, site: str, loaded: LoadedSite) -> None:
        previous = self._loaded.get(site)
        self._loaded[site] = loaded  # one assignment: a request holds either the old index or the new one
        self._checked[site] = self._clock()
        if self._settings.search.semantic:  # `loaded` is always freshly built: a new ranker to embed for
            self._semantic[site] = "pending"
            replaced = self._embedding.get(site)
            if replaced is not None:
                replaced.cancel()  # embeddings of an index no longer served: its thread stops at the next batch
            reuse = previous.ranker.semantic.vectors if previous and previous.ranker.semantic else None
            self._embedding[site] = asyncio.get_running_loop().create_task(self._embed(site, loaded, reuse))

    async def _embed(self, site: str, loaded: LoadedSite, reuse: SiteVectors | None) -> None:
        """Attach the site's entry embeddings: stored ones for exactly these entries, else computed and stored.

        Runs beside the requests; a search waits for it, within a bound (`wait_embedded`). Rows of unchanged
        entries are reused from the previous index's vectors or the stored ones. A failure leaves the site ranked
        lexically and says why in health.
        """
        stop = threading.Event()
        state = "ready"
        try:
            await asyncio.to_thread(Encoder.shared)  # queries need the model even when the vectors are stored
            vectors, _ = await ensure_vectors(
                self._store, site, loaded.index, gate=self._encode_gate, reuse=reuse, stop=stop
            )
            loaded.ranker.attach(vectors)
        except asyncio.CancelledError:
            stop.set()
            raise
        except SemanticUnavailableError as exc:
            state = f"unavailable: {exc}"
            log.warning("site %s: semantic matching is off: %s", site, exc)
        except Exception as exc:  # a background task: nobody else would see it
            state = f"failed: {type(exc).__name__}"
            log.exception("site %s: embedding the index failed; ranking stays lexical", site)
        if self._embedding.get(site) is asyncio.current_task():  # not superseded by a newer index meanwhile
            self._semantic[site] = state

    async def embedded(self, site: str) -> None:
        """Wait until the loaded site's embeddings are attached or known to be unavailable (tests use it)."""
        task = self._embedding.get(site)
        if task is not None:
            await asyncio.shield(task)

    async def wait_embedded(self, sites: list[str], seconds: float) -> bool:
        """Wait, at most `seconds`, for embeddings still being attached to these sites; True when none is pending.

        Stored embeddings attach within a blob download; computing them takes up to a minute for a large site,
        which only a process without stored ones (no storage, or the first after an index change) pays once.
        """
        pending = [task for site in sites if (task := self._embedding.get(site)) is not None and not task.done()]
        if pending:
            _, still = await asyncio.wait(pending, timeout=seconds)
            return not still
        return True

    async def aclose(self) -> None:
        """Stop embedding work still running (its thread stops at the next batch)."""
        for task in self._embedding.values():
            task.cancel()
        await asyncio.gather(*self._embedding.values(), return_exceptions=True)

    async def _load(self, site: str) -> LoadedSite:
        cached = await self._read_cache(site)
        # Parsing validates the copy; the ranker, the costly part, is built only for the copy actually served.
        parsed = await _try_parse(site, cached) if cached is not None else None
        if parsed is not None and cached is not None and cached.age_hours() < self._settings.cache_duration_hours:
            return await _build(cached, "cache", parsed)
        try:
            fetched = await fetch_index(self._client, self._settings, site, conditional=cached if parsed else None)
        except (OriginError, IndexFormatError) as exc:
            if parsed is not None and cached is not None:
                log.info("site %s: origin failed (%s); serving the stale cached index", site, type(exc).__name__)
                return await _build(cached, "stale-cache", parsed)
            raise SiteUnavailableError(site, str(exc)) from exc
        if fetched is None:
            assert parsed is not None and cached is not None  # a 304 only answers a conditional request
            return await self._revalidated(site, await _build(cached, "cache", parsed), cached.version)
        version = await self._write_back(site, fetched.entry, cached)
        return replace(await _build(fetched.entry, "origin", fetched.index), version=version)

    async def _revalidated(self, site: str, usable: LoadedSite, version: str | None) -> LoadedSite:
        """The origin answered 304 for a stale copy: it is current again; record that for other instances."""
        now = datetime.now(UTC)
        touched = None
        try:
            if version is not None:
                touched = await self._store.touch(site, now, expected_version=version)
        except StoreError as exc:
            log.info("site %s: could not record the revalidation (%s)", site, exc)
        return replace(usable, source="cache", fetched_at=now, version=touched or version)

    async def _read_cache(self, site: str) -> CachedIndex | None:
        try:
            return await self._store.read(site)
        except StoreError as exc:  # a broken store degrades to the origin, never to a 500
            log.info("site %s: index cache unreadable (%s); using the origin", site, exc)
            return None

    async def _write_back(self, site: str, entry: CachedIndex, cached: CachedIndex | None) -> str | None:
        try:
            return await store_newest(self._store, site, entry, expected_version=cached.version if cached else None)
        except StoreError as exc:
            log.info("site %s: could not write the index cache (%s)", site, exc)
            return None

    async def _refresh(self, site: str, current: LoadedSite) -> None:
        """Swap in a newer stored copy; an unchanged one costs one property check, never a download."""
        self._checked[site] = self._clock()
        try:
            stat = await self._store.stat(site)
            if stat is None or stat.version == current.version:
                return
            if stat.digest == current.digest:  # revalidated or rewritten with the same content
                fetched_at = max(current.fetched_at, stat.fetched_at)
                self._loaded[site] = replace(current, version=stat.version, fetched_at=fetched_at)
                return
            if stat.fetched_at < current.fetched_at:  # older than what this instance already holds
                self._loaded[site] = replace(current, version=stat.version)
                return
            cached = await self._store.read(site)
        except StoreError as exc:
            log.info("site %s: cache check failed (%s); keeping the loaded index", site, exc)
            return
        parsed = await _try_parse(site, cached) if cached is not None else None
        if parsed is not None and cached is not None and cached.fetched_at >= current.fetched_at:
            fresh = await _build(cached, "cache", parsed)
            self._install(site, fresh)
            log.info("site %s: swapped in the newer cached index (%d entries)", site, len(fresh.index.entries))
        elif cached is not None:
            self._loaded[site] = replace(current, version=cached.version)

    def health(self) -> dict[str, dict[str, object]]:
        """Per-site state without loading anything."""
        report: dict[str, dict[str, object]] = {}
        for site in self._settings.sites:
            if site in self._failed:
                report[site] = {"state": SiteState.FAILED, "reason": self._failed[site]}
            elif (loaded := self._loaded.get(site)) is not None:
                report[site] = {
                    "state": SiteState.LOADED,
                    "source": loaded.source,
                    "entries": len(loaded.index.entries),
                    "pages": len(loaded.index.pages),
                    "fetchedAt": loaded.fetched_at.isoformat(),
                    "semantic": self._semantic.get(site, "off"),
                }
            else:
                report[site] = {"state": SiteState.NOT_LOADED}
        return report


async def _try_parse(site: str, cached: CachedIndex) -> SiteIndex | None:
    """The cached copy parsed off the event loop, or None when it is unusable (corrupt, empty)."""
    try:
        return await asyncio.to_thread(parse_index, site, cached.payload)
    except IndexFormatError as exc:
        log.info("site %s: cached index is unusable (%s); ignoring it", site, exc)
        return None


async def _build(entry: CachedIndex, source: str, index: SiteIndex) -> LoadedSite:
    """Rank off the event loop, so a cold load does not stall requests for sites already loaded."""
    ranker = await asyncio.to_thread(Ranker.build, index)
    return LoadedSite(index, ranker, entry.version, source, entry.fetched_at, entry.digest)
