"""Each site's index, loaded lazily behind its own gate, from the shared cache or the origin.

A site loads on first use: a cached copy younger than CacheDurationHours is used without touching the origin;
otherwise the origin's copy is fetched, validated and written back; when the origin fails, a stale copy is the
fallback. A loaded site re-checks the store's version at most every `check_interval` seconds and swaps in a newer
copy whole, so no request sees a half-built index.

A site that cannot load fails alone: the other sites keep answering. Unlike the spec's CLI, it is tried again at
most every `SiteRetrySeconds` (with jitter), an unpublished one (the origin answers 404) every
`UnpublishedRetrySeconds`, and at once when the store holds a copy newer than the failure (the warm-up wrote one).

Each site's state is one slot (`_Site`), changed only by its named transitions:

    not_loaded ──loaded──> loaded ──swapped | ranked | restamped──> loaded
        └──failed──> failed ──loaded (a retry)──> loaded
                        └──failed (a retry that failed too)──> failed

With semantic matching on, embeddings are attached in the background (`embeddings.EmbeddingJobs`): a first load
is served at once; a newer index for a site that ranks semantically waits for its job, whose outcome the registry
installs (`swapped`), so a republish never drops a warm instance back to lexical ranking.

Pages an index lists but the origin does not serve (`missing_store.MissingPages`) are looked up beside the index
while a site first loads (waited for at most `RECORD_WAIT` more), re-checked with each store check, and added to by
`get`s that find one; searches leave them out and health counts them.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from shared.cache import CachedIndex, IndexStore, index_name, store_newest
from shared.embedding import EmbeddingModel
from shared.errors import IndexFormatError, OriginError, SiteUnavailableError, StoreError
from shared.fetch import OriginClient
from shared.providers.mkdocs.embeddings import Embedded, EmbeddingJobs, Semantic
from shared.providers.mkdocs.health import RankerState, Ranking, SiteFailed, SiteHealth, SiteLoaded, SiteState
from shared.providers.mkdocs.index import SiteIndex
from shared.providers.mkdocs.kinds import configured
from shared.providers.mkdocs.loading import LoadedSite, build, fetch_index, load_prebuilt, rank, try_parse
from shared.providers.mkdocs.missing_store import MissingPages
from shared.settings import DocumentationSettings

log = logging.getLogger(__name__)

T = TypeVar("T")

RECORD_WAIT = 1.0
"""Seconds a first load waits, beyond its own, for the site's missing-pages record to be looked up."""


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a site is not loaded, and when it is tried again."""

    reason: str
    unpublished: bool
    failed_at: datetime
    """Wall-clock time of the failure: a stored copy fetched later than this is worth loading at once."""
    retry_at: float
    """On the registry's clock."""
    retry_after: float
    """Seconds from the failure to the next try, for health."""
    store_checked: float


@dataclass(slots=True, eq=False)
class _Site:
    """One configured site's state. Only the transitions below change it: `served` is set from the first `loaded`
    on, `failure` only while `failed`."""

    name: str
    check_interval: float
    state: SiteState = SiteState.NOT_LOADED
    served: LoadedSite | None = None
    """The index requests are answered from."""
    failure: Failure | None = None
    check_at: float = float("-inf")
    """On the registry's clock: when the store is next asked for a newer copy."""
    gate: asyncio.Lock = field(default_factory=asyncio.Lock)
    """One load, retry or store check at a time."""
    building: asyncio.Lock = field(default_factory=asyncio.Lock)
    """One build of deferred search structures at a time."""
    searched: bool = False
    """A search has reached the site: its newer versions are loaded with their search structures at once."""
    load: asyncio.Task[LoadedSite | None] | None = None
    """Its one load or store check running in the background, however many requests wait on it."""
    incoming: LoadedSite | None = None
    """A newer index being embedded before it replaces `served`."""
    swap: asyncio.Task[None] | None = None
    """Installs `incoming` once its embedding job is done."""

    def loading(self, task: asyncio.Task[LoadedSite | None]) -> asyncio.Task[LoadedSite | None]:
        """A load (or a store check) now runs in the background."""
        self.load = task
        return task

    def loaded(self, index: LoadedSite, now: float) -> None:
        """The first load, or a retry, succeeded."""
        self.state, self.served, self.failure = SiteState.LOADED, index, None
        self.check_at = now + self.check_interval

    def failed(self, failure: Failure) -> None:
        """The first load, or a retry, failed."""
        self.state, self.failure = SiteState.FAILED, failure

    def swapped(self, newer: LoadedSite, now: float) -> None:
        """A newer index replaces the served one, whole: a request holds either the old index or the new one."""
        self.served, self.incoming, self.swap = newer, None, None
        self.check_at = now + self.check_interval

    def ranked(self, index: LoadedSite) -> None:
        """The served index gained the search structures it was loaded without."""
        self.served = index

    def restamped(self, index: LoadedSite) -> None:
        """The served index stays, relabelled with the store's version (the same content, or an older copy)."""
        self.served = index

    def reached(self) -> None:
        """A search reached the site."""
        self.searched = True

    def embedding(self, fresh: LoadedSite, swap: asyncio.Task[None]) -> None:
        """`fresh` waits for its vectors before it replaces the served index; `swap` installs it."""
        self.incoming, self.swap = fresh, swap

    def embedded(self, fresh: LoadedSite, outcome: Embedded | None, now: float) -> None:
        """`fresh`'s job ended: serve it (with its vectors, or ranking lexically when they failed); an outcome of
        None says a newer index took its place."""
        if self.incoming is not fresh:
            return
        if outcome is None:
            self.incoming, self.swap = None, None
        else:
            self.swapped(outcome.index, now)

    def checking(self, now: float) -> None:
        """The store is being asked for a newer copy now."""
        self.check_at = now + self.check_interval

    def check_due(self, now: float) -> bool:
        return now >= self.check_at

    def check_now(self, now: float) -> None:
        """A newer copy was just written: check the store at once, and try a failed site again at once."""
        self.check_at = float("-inf")
        if self.failure is not None:
            self.failure = replace(self.failure, retry_at=now, store_checked=float("-inf"))

    def store_asked(self, now: float) -> None:
        """A failed site asked the store whether it holds a copy newer than the failure."""
        if self.failure is not None:
            self.failure = replace(self.failure, store_checked=now)

    @property
    def shown(self) -> SiteState:
        """The state health shows: a site never loaded whose load runs in the background is `loading`."""
        if self.state is SiteState.NOT_LOADED and self.load is not None and not self.load.done():
            return SiteState.LOADING
        return self.state


class SiteRegistry:
    """Per-site load state for one process: each site's slot, and the embeddings of their indexes."""

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
        self._deferred = False
        """A provider ahead of MkDocs answers searches: build search structures only when a search falls through."""
        self._client = client
        self._store = store
        self._jobs = (
            EmbeddingJobs(store, embedding, retry_seconds=settings.site_retry_seconds)
            if embedding is not None
            else None
        )
        self._weights = configured(settings.search.path_weights, tuple(settings.sites))
        self._clock = clock
        interval = settings.cache.check_interval_seconds
        self._sites = {site: _Site(site, interval) for site in settings.sites}
        self._missing = MissingPages(store, self._name)

    @property
    def store(self) -> IndexStore:
        """The store the sites' indexes and what is derived from them are kept in."""
        return self._store

    def add_version(self, key: str) -> None:
        """A versioned site's version (`models.version_key`) as a site of its own, loaded on its first use."""
        if key not in self._sites:
            self._sites[key] = _Site(key, self._settings.cache.check_interval_seconds)

    @property
    def embedding(self) -> EmbeddingModel | None:
        """The model this registry embeds with; None when semantic matching is off."""
        return self._jobs.model if self._jobs is not None else None

    def defer_search(self) -> None:
        """A provider ahead of MkDocs answers searches: load indexes without their search structures, which the
        first search that falls through builds (`searchable`). Said once, before anything loads."""
        self._deferred = True

    def _rank_now(self, slot: _Site) -> bool:
        return not self._deferred or slot.searched

    async def searchable(self, site: str) -> LoadedSite | None:
        """The site's loaded index with its search structures, building (or loading the prebuilt) ones on the first
        search that reaches it when they were deferred; None when the site is not loaded."""
        slot = self._sites.get(site)
        current = slot.served if slot is not None else None
        if slot is None or current is None or current.ranker is not None:
            return current
        async with slot.building:
            slot.reached()
            current = slot.served
            if current is None or current.ranker is not None:
                return current
            ranked = await self._prebuilt_for(site, current) or replace(
                current, ranker=await rank(current, self._weights)
            )
            if slot.served is current:  # not swapped meanwhile
                slot.ranked(ranked)
                self._embed(site, ranked)
            log.info("site %s: search structures built on the first search that reached it", site)
            newest = slot.served
            # A newer index swapped in meanwhile without them (its load began before this search): this search
            # ranks on the one just built, and the next search builds the newer one's.
            return newest if newest is not None and newest.ranker is not None else ranked

    async def _prebuilt_for(self, site: str, current: LoadedSite) -> LoadedSite | None:
        try:
            stat = await self._store.stat(self._name(site))
        except StoreError:
            return None
        if stat is None or stat.digest != current.digest:
            return None
        prebuilt = await load_prebuilt(self._store, site, stat, self._weights, source=current.source)
        return replace(prebuilt, version=current.version, fetched_at=current.fetched_at) if prebuilt else None

    def current(self, site: str) -> LoadedSite | None:
        """The index served for the site right now, without loading or checking anything."""
        slot = self._sites.get(site)
        return slot.served if slot is not None else None

    def _name(self, site: str) -> str:
        """The store's name for the site's index: the spec's cache file name."""
        return index_name(self._settings.cache_file_name_template, site)

    async def get(self, site: str) -> LoadedSite | None:
        """The site's loaded index, loading it on first use; None when the site failed to load.

        A loaded site is returned at once unless its store check is due; then the check runs in the background (one
        per site, however many requests ask) and this request waits for it at most `Search__SiteWaitSeconds`, as a
        search does (`within`), before it is answered from the index in hand: a slow or stalled store, or a newer
        copy being built, never holds it longer.
        """
        slot = self._sites[site]
        if slot.served is not None and slot.failure is None and slot.check_due(self._clock()):
            await asyncio.wait([self._ready(site)], timeout=self._settings.search.site_wait_seconds)
            return slot.served
        return await self._settle(site)

    async def _settle(self, site: str) -> LoadedSite | None:
        """The site's first load, retry or due store check, behind its gate; the index to serve afterwards."""
        slot = self._sites[site]
        if slot.failure is not None:
            return None if slot.gate.locked() else await self._retry(slot)  # one request retries, none waits
        loaded = slot.served
        if loaded is not None and (not slot.check_due(self._clock()) or slot.gate.locked()):
            return loaded
        async with slot.gate:
            if slot.failure is not None:  # it failed while this request waited
                return None
            current = slot.served
            if current is None:
                return await self._first_load(slot)
            if slot.check_due(self._clock()):
                self._missing.lookup(site)  # other instances' findings, in the background: no request waits on it
                try:
                    await self._refresh(slot, current)
                except Exception as exc:  # a bad newer copy must not cost the site the index it has
                    log.warning("site %s: checking for a newer index failed (%s)", site, type(exc).__name__)
            return slot.served

    async def within(self, sites: Sequence[str], seconds: float) -> dict[str, LoadedSite | None]:
        """The sites whose index is ready (or failed: None) after at most `seconds`, longer only while none is.

        A site still loading is left out and keeps loading in the background (one load per site, however many
        requests wait on it), so one hung site costs its own results, never everyone's answer; when no site is
        ready yet (a cold instance), the wait goes on until the first is, within the request's deadline. A loaded
        site whose check for a newer copy outlasts the wait is searched with the index in hand.
        """
        pending = {site: self._ready(site) for site in sites}
        if all(future.done() for future in pending.values()):  # the usual case: every site loaded, nothing to wait on
            return {site: _result(future) for site, future in pending.items()}
        done, waiting = await asyncio.wait(pending.values(), timeout=seconds)
        held = any(self._sites[site].served is not None for site in sites)  # a check, not a cold load
        while waiting and not held and not any(_result(future) is not None for future in done):
            more, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            done |= more
        ready: dict[str, LoadedSite | None] = {}
        for site, future in pending.items():
            if future.done():
                ready[site] = _result(future)
            elif (in_hand := self._sites[site].served) is not None:  # a slow check for a newer copy: serve this one
                ready[site] = in_hand
        return ready

    def _ready(self, site: str) -> asyncio.Future[LoadedSite | None]:
        """The site's index as a future: done now when it is loaded and needs no check, else its one load or check."""
        slot = self._sites[site]
        settled = not slot.check_due(self._clock()) or slot.gate.locked()
        if slot.state is SiteState.LOADED and slot.served is not None and settled:
            answered: asyncio.Future[LoadedSite | None] = asyncio.get_running_loop().create_future()
            answered.set_result(slot.served)
            return answered
        task = slot.load
        if task is None or task.done():
            task = slot.loading(asyncio.create_task(self._settle(site), name=f"load {site}"))
        return task

    def check_soon(self, site: str) -> None:
        """A newer copy was just written (a publish refresh): check the store now, in the background, rather than at
        the next interval; requests keep being answered from the index in hand meanwhile."""
        slot = self._sites.get(site)
        if slot is None:
            return
        slot.check_now(self._clock())
        if slot.state is not SiteState.NOT_LOADED:
            self._ready(site)

    async def checked(self, site: str) -> None:
        """Wait for the site's load or store check running in the background, if any (a publish refresh waits for
        the check it started; tests and tools use it too)."""
        slot = self._sites.get(site)
        if slot is not None and slot.load is not None:
            await asyncio.wait([slot.load])

    async def index(self, site: str) -> SiteIndex | None:
        loaded = await self.get(site)
        return loaded.index if loaded else None

    async def _retry(self, slot: _Site) -> LoadedSite | None:
        async with slot.gate:
            failure = slot.failure
            if failure is None:
                return slot.served  # another request brought it back meanwhile
            if not await self._retry_due(slot, failure):
                return None
            log.info("site %s: trying its index again", slot.name)
            return await self._first_load(slot)

    async def _retry_due(self, slot: _Site, failure: Failure) -> bool:
        """The backoff has passed, or the store holds a copy fetched after the failure (the warm-up's)."""
        now = self._clock()
        if now >= failure.retry_at:
            return True
        if now - failure.store_checked < self._settings.cache.check_interval_seconds:
            return False
        slot.store_asked(now)
        try:
            stat = await self._store.stat(self._name(slot.name))
        except StoreError:
            return False
        return stat is not None and stat.fetched_at > failure.failed_at

    async def _first_load(self, slot: _Site) -> LoadedSite | None:
        site = slot.name
        lookup = self._missing.lookup(site)  # beside the index's own load, so it rarely adds a wait
        try:
            loaded = await self._load(slot)
        except SiteUnavailableError as exc:
            slot.failed(self._failure(site, exc.reason, unpublished=exc.unpublished))
            return None
        except Exception as exc:  # whatever breaks one site's load must leave the other sites answering
            log.warning("site %s: loading its index failed (%s)", site, type(exc).__name__)
            slot.failed(self._failure(site, f"its index could not be loaded ({type(exc).__name__})", unpublished=False))
            return None
        slot.loaded(loaded, self._clock())
        self._embed(site, loaded)
        await asyncio.wait([lookup], timeout=RECORD_WAIT)
        return loaded

    def _failure(self, site: str, reason: str, *, unpublished: bool) -> Failure:
        base = self._settings.unpublished_retry_seconds if unpublished else self._settings.site_retry_seconds
        delay = base * random.uniform(1.0, 1.2)  # noqa: S311  jitter, not cryptography: instances spread out
        now = self._clock()
        if unpublished:
            log.debug("site %s is not published (%s); rechecked in %.0f s", site, reason, delay)
        else:
            log.warning("site %s is unavailable (%s); tried again in %.0f s", site, reason, delay)
        return Failure(reason, unpublished, datetime.now(UTC), now + delay, delay, now)

    def _embed(self, site: str, served: LoadedSite) -> None:
        """Attach the served index's vectors in the background (its ranker gains them in place)."""
        if self._jobs is not None and served.ranker is not None:
            self._jobs.start(site, served)

    def _replace(self, slot: _Site, fresh: LoadedSite) -> None:
        """Serve a newer index: at once when the current one ranks lexically, else once `fresh` has its vectors."""
        current = slot.served
        semantic = current.ranker.semantic if current is not None and current.ranker is not None else None
        if self._jobs is None or semantic is None or fresh.ranker is None:
            slot.swapped(fresh, self._clock())
            self._embed(slot.name, fresh)
            return
        job = self._jobs.start(slot.name, fresh, replacing=True)
        swap = asyncio.create_task(self._swap_when_embedded(slot, fresh, job), name=f"swap {slot.name}")
        slot.embedding(fresh, swap)

    async def _swap_when_embedded(self, slot: _Site, fresh: LoadedSite, job: asyncio.Task[Embedded | None]) -> None:
        """Install the job's outcome: `fresh` with its vectors, or without them when they failed."""
        await asyncio.wait([job])
        slot.embedded(fresh, _result(job), self._clock())

    async def looked_up(self, sites: list[str]) -> None:
        """Wait a moment for just-loaded sites' stored vectors (never for vectors being computed)."""
        if self._jobs is not None:
            await self._jobs.looked_up(sites)

    def missing(self, loaded: LoadedSite) -> frozenset[str]:
        """The pages of this loaded index that the origin is known not to serve (no I/O)."""
        return self._missing.pages(loaded.index.site, loaded.digest)

    def page_missing(self, site: str, page: str) -> None:
        """A `get` found a page of the served index missing: searches drop it now, the store learns it soon."""
        loaded = self.current(site)
        if loaded is not None:
            self._missing.found(site, loaded.digest, page)

    async def recorded(self) -> None:
        """Wait until missing pages found or looked up are settled with the store (tests and tools use it)."""
        await self._missing.settled()

    async def embedded(self, site: str) -> None:
        """Wait until the site's embedding job has finished and its outcome is installed (tests and tools use it)."""
        if self._jobs is not None:
            await self._jobs.finished(site)
        slot = self._sites.get(site)
        if slot is not None and slot.swap is not None:
            await asyncio.wait([slot.swap])

    async def aclose(self) -> None:
        """Stop loads and embedding work still running (its thread stops at the next batch); let findings reach
        the store."""
        tasks = [task for slot in self._sites.values() for task in (slot.load, slot.swap) if task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._jobs is not None:
            await self._jobs.aclose()
        await self._missing.aclose()

    async def _load(self, slot: _Site) -> LoadedSite:
        site, name, rank_now = slot.name, self._name(slot.name), self._rank_now(slot)
        prebuilt = await self._prebuilt(site, name) if rank_now else None
        if prebuilt is not None:
            return prebuilt
        cached = await self._read_cache(site, name)
        # Parsing validates the copy; the ranker, the costly part, is built only for the copy actually served.
        parsed = await try_parse(site, cached) if cached is not None else None
        if parsed is not None and cached is not None and cached.age_hours() < self._settings.cache_duration_hours:
            return await build(cached, "cache", parsed, self._weights, rank=rank_now)
        try:
            fetched = await fetch_index(self._client, self._settings, site, conditional=cached if parsed else None)
        except (OriginError, IndexFormatError) as exc:
            if parsed is not None and cached is not None:
                log.info("site %s: origin failed (%s); serving the stale cached index", site, type(exc).__name__)
                return await build(cached, "stale-cache", parsed, self._weights, rank=rank_now)
            unpublished = isinstance(exc, OriginError) and exc.status == 404
            raise SiteUnavailableError(site, str(exc), unpublished=unpublished) from exc
        if fetched is None:
            assert parsed is not None and cached is not None  # a 304 only answers a conditional request
            usable = await build(cached, "cache", parsed, self._weights, rank=rank_now)
            return await self._revalidated(site, usable, cached.version)
        version = await self._write_back(site, fetched.entry, cached)
        built = await build(fetched.entry, "origin", fetched.index, self._weights, rank=rank_now)
        return replace(built, version=version)

    async def _prebuilt(self, site: str, name: str) -> LoadedSite | None:
        """A fresh stored copy's prebuilt ranker (the warm-up's), loaded instead of parsing and building; None when
        there is no fresh copy or no usable prebuilt ranker for it."""
        try:
            stat = await self._store.stat(name)
        except StoreError:
            return None
        if stat is None or not stat.complete or stat.age_hours() >= self._settings.cache_duration_hours:
            return None
        return await load_prebuilt(self._store, site, stat, self._weights)

    async def _revalidated(self, site: str, usable: LoadedSite, version: str | None) -> LoadedSite:
        """The origin answered 304 for a stale copy: it is current again; record that for other instances."""
        now = datetime.now(UTC)
        touched = None
        try:
            if version is not None:
                touched = await self._store.touch(self._name(site), now, expected_version=version)
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
                self._store, self._name(site), entry, expected_version=cached.version if cached else None
            )
        except StoreError as exc:
            log.info("site %s: could not write the index cache (%s)", site, exc)
            return None

    async def _refresh(self, slot: _Site, current: LoadedSite) -> None:
        """Swap in a newer stored copy; an unchanged one costs one property check, never a download."""
        site = slot.name
        slot.checking(self._clock())
        known = slot.incoming or current  # the newest copy in hand
        try:
            stat = await self._store.stat(self._name(site))
            if stat is None or stat.version in (current.version, known.version):
                return
            if stat.digest == known.digest:  # revalidated or rewritten with the same content
                fetched_at = max(current.fetched_at, stat.fetched_at)
                slot.restamped(replace(current, version=stat.version, fetched_at=fetched_at))
                return
            if stat.fetched_at < known.fetched_at:  # older than what this instance already holds
                slot.restamped(replace(current, version=stat.version))
                return
            prebuilt = (
                await load_prebuilt(self._store, site, stat, self._weights, likely_current=False)
                if self._rank_now(slot)
                else None
            )
            if prebuilt is not None:
                self._replace(slot, prebuilt)
                log.info(
                    "site %s: a newer cached index is in, prebuilt (%d entries)", site, len(prebuilt.index.entries)
                )
                return
            cached = await self._store.read(self._name(site))
        except StoreError as exc:
            log.info("site %s: cache check failed (%s); keeping the loaded index", site, exc)
            return
        parsed = await try_parse(site, cached) if cached is not None else None
        if parsed is not None and cached is not None and cached.fetched_at >= known.fetched_at:
            fresh = await build(cached, "cache", parsed, self._weights, rank=self._rank_now(slot))
            self._replace(slot, fresh)
            log.info("site %s: a newer cached index is in (%d entries)", site, len(fresh.index.entries))
        elif cached is not None:
            slot.restamped(replace(current, version=cached.version))

    def failure(self, site: str) -> Failure | None:
        """Why the site is not loaded, if it failed."""
        slot = self._sites.get(site)
        return slot.failure if slot is not None else None

    def health(self) -> dict[str, SiteHealth]:
        """Per-site state without loading anything: how each site ranks and, when lexically, why."""
        report: dict[str, SiteHealth] = {}
        for site, slot in self._sites.items():
            if (failure := slot.failure) is not None:
                retry = failure.failed_at + timedelta(seconds=failure.retry_after)
                report[site] = SiteFailed(reason=failure.reason, unpublished=failure.unpublished, retry_at=retry)
            elif (loaded := slot.served) is not None:
                ranking, semantic, why, updating = self._ranking(slot, loaded)
                built = RankerState.PREBUILT if loaded.prebuilt else RankerState.BUILT
                report[site] = SiteLoaded(
                    source=loaded.source,
                    index_format=loaded.index.format,
                    ranker=RankerState.DEFERRED if loaded.ranker is None else built,
                    entries=len(loaded.index.entries),
                    pages=len(loaded.index.pages),
                    code_blocks=len(loaded.index.code),
                    fetched_at=loaded.fetched_at,
                    missing_pages=len(self.missing(loaded)),
                    ranking=ranking,
                    semantic=semantic,
                    why=why,
                    updating=updating,
                )
            else:
                report[site] = SiteHealth(state=slot.shown)
        return report

    def _ranking(self, slot: _Site, loaded: LoadedSite) -> tuple[Ranking, Semantic | None, str | None, str | None]:
        """How the site ranks, where its embeddings stand, why it ranks lexically, and whether a newer index is
        being embedded."""
        if loaded.ranker is None:
            why = (
                "a provider ahead of MkDocs answers searches: the search structures are built when a search falls "
                "through to MkDocs; resolution and get use the index"
            )
            return Ranking.DEFERRED, None, why, None
        state, reason = self._jobs.state(slot.name) if self._jobs is not None else (Semantic.OFF, "")
        if loaded.ranker.semantic is None:
            why = {
                Semantic.OFF: "semantic matching is off (Search__Semantic=false)",
                Semantic.PENDING: "its embeddings are being computed in the background",
                Semantic.UNAVAILABLE: f"the embedding model is unavailable: {reason}",
                Semantic.FAILED: f"embedding its index failed: {reason}; it is tried again later (backing off)",
                Semantic.READY: "",
            }[state]
            return Ranking.LEXICAL, state, why, None
        updating = None
        if slot.incoming is not None:
            updating = "a newer index is being embedded; it is served with its vectors once they are ready"
        return Ranking.SEMANTIC, state, None, updating


def _result(future: asyncio.Future[T]) -> T | None:
    """A finished task's result; None for a failed or cancelled one (`get` reports its own failures)."""
    if not future.done() or future.cancelled() or future.exception() is not None:
        return None
    return future.result()
