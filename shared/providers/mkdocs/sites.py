"""Each site's index, loaded lazily behind its own gate, from the shared cache or the origin, with its embeddings.

A site loads on first use: a cached copy younger than CacheDurationHours is used without touching the origin;
otherwise the origin's copy is fetched, validated and written back; when the origin fails, a stale copy is the
fallback. A site that cannot load is failed for the process lifetime. A loaded site re-checks the store's version
at most every `check_interval` seconds and swaps in a newer copy whole, so no request sees a half-built index.

Embeddings never hold a request up. A first load is served lexically at once while its vectors are found in the
store (a search waits for that lookup at most `STORED_VECTORS_WAIT`) or computed in the background. A newer index
for a site that already ranks semantically is embedded before it is swapped in: until then the previous index
keeps serving with its vectors, then index and vectors change together. If embedding the newer index fails, it is
swapped in anyway and ranks lexically.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum

from shared.cache import CachedIndex, CacheStat, IndexStore, index_name, store_newest
from shared.embedding import EmbeddingModel
from shared.errors import (
    EmbeddingStopped,
    EmbeddingUnavailableError,
    IndexFormatError,
    OriginError,
    SiteUnavailableError,
    StoreError,
)
from shared.fetch import MAX_INDEX_BYTES, OriginClient
from shared.providers.mkdocs.embeddings import compute_and_store, read_stored
from shared.providers.mkdocs.index import SiteIndex, parse_index
from shared.providers.mkdocs.ranking import Ranker
from shared.providers.mkdocs.vectors import SiteVectors
from shared.settings import DocumentationSettings

log = logging.getLogger(__name__)


STORED_VECTORS_WAIT = 1.0
"""Seconds a search waits for a just-loaded site's stored vectors to be looked up and attached (one download)."""


class SiteState(StrEnum):
    NOT_LOADED = "not_loaded"
    LOADED = "loaded"
    FAILED = "failed"


class Semantic(StrEnum):
    """Where a site's entry embeddings stand; health adds the reason to the last two."""

    OFF = "off"
    PENDING = "pending"
    READY = "ready"
    UNAVAILABLE = "unavailable"
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
    """Per-site load state for one process: gates, loaded indexes, failures, and their embeddings."""

    def __init__(
        self,
        settings: DocumentationSettings,
        client: OriginClient,
        store: IndexStore,
        *,
        embedding: EmbeddingModel | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings
        self._client = client
        self._store = store
        self._embedding = embedding
        self._clock = clock
        self._gates = {site: asyncio.Lock() for site in settings.sites}
        self._loaded: dict[str, LoadedSite] = {}
        self._checked: dict[str, float] = {}
        self._failed: dict[str, str] = {}
        self._semantic: dict[str, tuple[Semantic, str]] = {}
        """Site -> where the embeddings of the index it serves (or is about to serve) stand, and why."""
        self._jobs: dict[str, _Job] = {}
        """Site -> the embedding job of its served index (first load) or of the index waiting to replace it."""

    @property
    def sites(self) -> tuple[str, ...]:
        return self._settings.sites

    @property
    def embedding(self) -> EmbeddingModel | None:
        """The model this registry embeds with; None when semantic matching is off."""
        return self._embedding

    def current(self, site: str) -> LoadedSite | None:
        """The index served for the site right now, without loading or checking anything."""
        return self._loaded.get(site)

    def name(self, site: str) -> str:
        """The store's name for the site's index: the spec's cache file name."""
        return index_name(self._settings.cache_file_name_template, site)

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
        self._start_embedding(site, loaded, reuse=None, swap=False)
        return loaded

    def _install(self, site: str, loaded: LoadedSite) -> None:
        self._loaded[site] = loaded  # one assignment: a request holds either the old index or the new one
        self._checked[site] = self._clock()

    def _replace(self, site: str, fresh: LoadedSite) -> None:
        """Serve a newer index: at once when the current one ranks lexically, else once `fresh` has its vectors."""
        current = self._loaded.get(site)
        vectors = current.ranker.semantic.vectors if current and current.ranker.semantic else None
        if vectors is None:
            self._install(site, fresh)
        self._start_embedding(site, fresh, reuse=vectors, swap=vectors is not None)

    def _start_embedding(self, site: str, loaded: LoadedSite, *, reuse: SiteVectors | None, swap: bool) -> None:
        """Replace the site's embedding job (a superseded index's job stops at its next batch)."""
        previous = self._jobs.pop(site, None)
        if previous is not None:
            previous.cancel()
        if self._embedding is None:
            return
        self._semantic[site] = (Semantic.PENDING, "")
        job = _Job(loaded, swap)
        job.task = asyncio.get_running_loop().create_task(self._embed(site, job, self._embedding, reuse))
        self._jobs[site] = job

    async def _embed(self, site: str, job: _Job, model: EmbeddingModel, reuse: SiteVectors | None) -> None:
        """Attach the index's entry embeddings: the stored ones for exactly these entries, else computed and stored.

        A failure leaves the index ranked lexically (swapped in all the same) and says why in health.
        """
        loaded = job.loaded
        state: tuple[Semantic, str] = (Semantic.READY, "")
        try:
            # The model loads while the stored vectors download: queries need it even when vectors are stored.
            loading = asyncio.ensure_future(model.ready())
            loading.add_done_callback(lambda done: done.cancelled() or done.exception())  # retrieved, never lost
            try:
                stored = await read_stored(self._store, model, site, loaded.index)
                if stored.current is None:
                    job.looked_up.set()  # nothing stored: searches stop waiting and rank lexically meanwhile
                await loading
            finally:
                loading.cancel()
            vectors = stored.current
            if vectors is None:
                vectors = await compute_and_store(
                    self._store,
                    model,
                    site,
                    loaded.index,
                    reuse=reuse or stored.reusable,
                    expected_version=stored.version,
                    stop=job.stop,
                )
            loaded.ranker.attach(vectors)
        except asyncio.CancelledError:
            job.stop.set()
            raise
        except EmbeddingStopped:  # superseded: the newer index's job reports the state
            return
        except EmbeddingUnavailableError as exc:
            state = (Semantic.UNAVAILABLE, str(exc))
            log.warning("site %s: semantic matching is off: %s", site, exc)
        except Exception as exc:  # a background task: nobody else would see it
            state = (Semantic.FAILED, type(exc).__name__)
            log.exception("site %s: embedding the index failed; it ranks lexically", site)
        finally:
            job.looked_up.set()
        if self._jobs.get(site) is job:  # not superseded by a newer index meanwhile
            if job.swap:
                self._loaded[site] = loaded  # index and vectors change together
            self._semantic[site] = state

    async def looked_up(self, sites: list[str], seconds: float = STORED_VECTORS_WAIT) -> None:
        """Wait, at most `seconds`, until these sites' stored vectors have been looked up (and attached if found).

        Never waits for vectors being computed: a search ranks lexically meanwhile.
        """
        events = [
            job.looked_up
            for site in sites
            if (job := self._jobs.get(site)) is not None and not job.swap and not job.looked_up.is_set()
        ]
        if not events:
            return
        waiters = [asyncio.ensure_future(event.wait()) for event in events]
        try:
            await asyncio.wait(waiters, timeout=seconds)
        finally:
            for waiter in waiters:
                waiter.cancel()

    async def embedded(self, site: str) -> None:
        """Wait until the site's embedding job has finished, whatever its outcome (tests and tools use it)."""
        job = self._jobs.get(site)
        if job is not None and job.task is not None:
            await asyncio.wait([job.task])

    async def aclose(self) -> None:
        """Stop embedding work still running (its thread stops at the next batch)."""
        jobs = list(self._jobs.values())
        for job in jobs:
            job.cancel()
        await asyncio.gather(*(job.task for job in jobs if job.task is not None), return_exceptions=True)

    async def _load(self, site: str) -> LoadedSite:
        name = self.name(site)
        cached = await self._read_cache(site, name)
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
                touched = await self._store.touch(self.name(site), now, expected_version=version)
        except StoreError as exc:
            log.info("site %s: could not record the revalidation (%s)", site, exc)
        return replace(usable, source="cache", fetched_at=now, version=touched or version)

    async def _read_cache(self, site: str, name: str) -> CachedIndex | None:
        try:
            return await self._store.read(name)
        except StoreError as exc:  # a broken store degrades to the origin, never to a 500
            log.info("site %s: index cache unreadable (%s); using the origin", site, exc)
            return None

    async def _write_back(self, site: str, entry: CachedIndex, cached: CachedIndex | None) -> str | None:
        try:
            return await store_newest(
                self._store, self.name(site), entry, expected_version=cached.version if cached else None
            )
        except StoreError as exc:
            log.info("site %s: could not write the index cache (%s)", site, exc)
            return None

    async def _refresh(self, site: str, current: LoadedSite) -> None:
        """Swap in a newer stored copy; an unchanged one costs one property check, never a download."""
        self._checked[site] = self._clock()
        pending = self._jobs.get(site)
        known = pending.loaded if pending is not None and pending.swap else current  # the newest copy in hand
        try:
            stat = await self._store.stat(self.name(site))
            if stat is None or stat.version in (current.version, known.version):
                return
            if stat.digest == known.digest:  # revalidated or rewritten with the same content
                fetched_at = max(current.fetched_at, stat.fetched_at)
                self._loaded[site] = replace(current, version=stat.version, fetched_at=fetched_at)
                return
            if stat.fetched_at < known.fetched_at:  # older than what this instance already holds
                self._loaded[site] = replace(current, version=stat.version)
                return
            cached = await self._store.read(self.name(site))
        except StoreError as exc:
            log.info("site %s: cache check failed (%s); keeping the loaded index", site, exc)
            return
        parsed = await _try_parse(site, cached) if cached is not None else None
        if parsed is not None and cached is not None and cached.fetched_at >= known.fetched_at:
            fresh = await _build(cached, "cache", parsed)
            self._replace(site, fresh)
            log.info("site %s: a newer cached index is in (%d entries)", site, len(fresh.index.entries))
        elif cached is not None:
            self._loaded[site] = replace(current, version=cached.version)

    def health(self) -> dict[str, dict[str, object]]:
        """Per-site state without loading anything: how each site ranks and, when lexically, why."""
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
                    **self._ranking(site, loaded),
                }
            else:
                report[site] = {"state": SiteState.NOT_LOADED}
        return report

    def _ranking(self, site: str, loaded: LoadedSite) -> dict[str, object]:
        state, reason = self._semantic.get(site, (Semantic.OFF, ""))
        job = self._jobs.get(site)
        updating = job is not None and job.swap and state is Semantic.PENDING
        ranked = "semantic" if loaded.ranker.semantic is not None else "lexical"
        report: dict[str, object] = {"ranking": ranked, "semantic": state.value}
        if ranked == "lexical":
            report["why"] = {
                Semantic.OFF: "semantic matching is off (Search__Semantic=false)",
                Semantic.PENDING: "its embeddings are being computed in the background",
                Semantic.UNAVAILABLE: f"the embedding model is unavailable: {reason}",
                Semantic.FAILED: f"embedding its index failed: {reason}",
                Semantic.READY: "",
            }[state]
        elif updating:
            report["updating"] = "a newer index is being embedded; it is swapped in with its vectors"
        return report


@dataclass(slots=True)
class _Job:
    """One index's embedding work: `looked_up` once its stored vectors were searched for, `stop` to end it early."""

    loaded: LoadedSite
    swap: bool
    """True when `loaded` waits to replace a served index that ranks semantically, False when it is served."""
    looked_up: asyncio.Event = field(default_factory=asyncio.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    task: asyncio.Task[None] | None = None

    def cancel(self) -> None:
        self.stop.set()
        if self.task is not None:
            self.task.cancel()


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
