"""Each site's index, loaded lazily behind its own gate, from the shared cache or the origin.

A site loads on first use: a cached copy younger than CacheDurationHours is used without touching the origin;
otherwise the origin's copy is fetched, validated and written back; when the origin fails, a stale copy is the
fallback. A loaded site re-checks the store's version at most every `check_interval` seconds and swaps in a newer
copy whole, so no request sees a half-built index.

A site that cannot load, for whatever reason, fails alone: the other sites keep answering. Unlike the spec's CLI
(failed for the process lifetime), a long-lived service tries it again: at most every `SiteRetrySeconds` (with
jitter), an unpublished site (the origin answers 404) only every `UnpublishedRetrySeconds`, and at once when the
store holds a copy newer than the failure (the warm-up wrote one), checked at most every `check_interval`.

With semantic matching on, each index's embeddings are attached in the background (`embeddings.EmbeddingJobs`):
a first load is served at once, and a newer index for a site that ranks semantically is served only once it has
its vectors, so a republish never drops a warm instance back to lexical ranking.

Pages an index lists but the origin does not serve (`phantoms.MissingPages`) are looked up in the store beside
the index while a site first loads (waited for at most `RECORD_WAIT` more), re-checked with each periodic store
check, and added to by `get`s that find one; searches leave them out and health counts them.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from shared.cache import CachedIndex, IndexStore, index_name, store_newest
from shared.embedding import EmbeddingModel
from shared.errors import IndexFormatError, OriginError, SiteUnavailableError, StoreError
from shared.fetch import OriginClient
from shared.providers.mkdocs.embeddings import EmbeddingJobs, Semantic
from shared.providers.mkdocs.index import SiteIndex
from shared.providers.mkdocs.loading import LoadedSite, build, fetch_index, load_prebuilt, rank, try_parse
from shared.providers.mkdocs.phantoms import MissingPages
from shared.settings import DocumentationSettings

log = logging.getLogger(__name__)

RECORD_WAIT = 1.0
"""Seconds a first load waits, beyond its own, for the site's missing-pages record to be looked up."""


class SiteState(StrEnum):
    NOT_LOADED = "not_loaded"
    LOADING = "loading"
    LOADED = "loaded"
    FAILED = "failed"


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
        self._deferred = False
        """A provider ahead of MkDocs answers searches: build search structures only when a search falls through."""
        self._searched: set[str] = set()
        """Sites a search has reached: their newer versions are loaded with search structures at once."""
        self._building = {site: asyncio.Lock() for site in settings.sites}
        self._client = client
        self._store = store
        self._jobs = (
            EmbeddingJobs(store, embedding, retry_seconds=settings.site_retry_seconds)
            if embedding is not None
            else None
        )
        self._weights = settings.search.path_weights
        self._clock = clock
        self._gates = {site: asyncio.Lock() for site in settings.sites}
        self._loaded: dict[str, LoadedSite] = {}
        self._checked: dict[str, float] = {}
        self._failed: dict[str, Failure] = {}
        self._inflight: dict[str, asyncio.Task[LoadedSite | None]] = {}
        self._missing = MissingPages(store, self._name)

    @property
    def embedding(self) -> EmbeddingModel | None:
        """The model this registry embeds with; None when semantic matching is off."""
        return self._jobs.model if self._jobs is not None else None

    def defer_search(self) -> None:
        """A provider ahead of MkDocs answers searches: load indexes without their search structures, which the
        first search that falls through builds (`searchable`). Said once, before anything loads."""
        self._deferred = True

    def _rank_now(self, site: str) -> bool:
        return not self._deferred or site in self._searched

    async def searchable(self, site: str) -> LoadedSite | None:
        """The site's loaded index with its search structures, building (or loading the prebuilt) ones on the first
        search that reaches it when they were deferred; None when the site is not loaded."""
        current = self._loaded.get(site)
        if current is None or current.ranker is not None:
            return current
        async with self._building[site]:
            self._searched.add(site)
            current = self._loaded.get(site)
            if current is None or current.ranker is not None:
                return current
            ranked = await self._prebuilt_for(site, current) or replace(
                current, ranker=await rank(current, self._weights)
            )
            if self._loaded.get(site) is current:  # not swapped meanwhile
                self._loaded[site] = ranked
                if self._jobs is not None:
                    self._jobs.start(site, ranked)
            log.info("site %s: search structures built on the first search that reached it", site)
            newest = self._loaded.get(site)
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
        return self._loaded.get(site)

    def _name(self, site: str) -> str:
        """The store's name for the site's index: the spec's cache file name."""
        return index_name(self._settings.cache_file_name_template, site)

    async def get(self, site: str) -> LoadedSite | None:
        """The site's loaded index, loading it on first use; None when the site failed to load.

        A loaded site is returned at once unless its store check is due; then one request checks while the others
        keep being answered from the index in hand.
        """
        gate = self._gates[site]
        if site in self._failed:
            return None if gate.locked() else await self._retry(site, gate)  # one request retries, none waits
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
                self._missing.lookup(site)  # other instances' findings, in the background: no request waits on it
                try:
                    await self._refresh(site, current)
                except Exception as exc:  # a bad newer copy must not cost the site the index it has
                    log.warning("site %s: checking for a newer index failed (%s)", site, type(exc).__name__)
            return self._loaded[site]

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
        while waiting and not any(_result(future) is not None for future in done):
            more, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            done |= more
        ready: dict[str, LoadedSite | None] = {}
        for site, future in pending.items():
            if future.done():
                ready[site] = _result(future)
            elif (in_hand := self._loaded.get(site)) is not None:  # a slow check for a newer copy: serve this one
                ready[site] = in_hand
        return ready

    def _ready(self, site: str) -> asyncio.Future[LoadedSite | None]:
        """The site's index as a future: done now when it is loaded and needs no check, else its one load or check."""
        loaded = self._loaded.get(site)
        settled = not self._check_due(site) or self._gates[site].locked()
        if loaded is not None and site not in self._failed and settled:
            answered: asyncio.Future[LoadedSite | None] = asyncio.get_running_loop().create_future()
            answered.set_result(loaded)
            return answered
        task = self._inflight.get(site)
        if task is None or task.done():
            task = self._inflight[site] = asyncio.create_task(self.get(site), name=f"load {site}")
        return task

    def loading(self, site: str) -> bool:
        """A first load or a retry is running (a loaded site being checked is not `loading`: it is served)."""
        task = self._inflight.get(site)
        return task is not None and not task.done() and site not in self._loaded

    def check_soon(self, site: str) -> None:
        """A newer copy was just written (a publish refresh): check the store now, in the background, rather than at
        the next interval; requests keep being answered from the index in hand meanwhile."""
        if site not in self._gates:
            return
        self._checked[site] = float("-inf")
        if site in self._loaded or site in self._failed:
            if site in self._failed:
                failure = self._failed[site]
                self._failed[site] = replace(failure, retry_at=self._clock(), store_checked=float("-inf"))
            self._ready(site)

    async def checked(self, site: str) -> None:
        """Wait for the site's load or store check running in the background, if any (tests and tools use it)."""
        task = self._inflight.get(site)
        if task is not None:
            await asyncio.wait([task])

    def _check_due(self, site: str) -> bool:
        return self._clock() - self._checked.get(site, 0.0) >= self._settings.cache.check_interval_seconds

    async def index(self, site: str) -> SiteIndex | None:
        loaded = await self.get(site)
        return loaded.index if loaded else None

    async def _retry(self, site: str, gate: asyncio.Lock) -> LoadedSite | None:
        async with gate:
            failure = self._failed.get(site)
            if failure is None:
                return self._loaded.get(site)  # another request brought it back meanwhile
            if not await self._retry_due(site, failure):
                return None
            log.info("site %s: trying its index again", site)
            return await self._first_load(site)

    async def _retry_due(self, site: str, failure: Failure) -> bool:
        """The backoff has passed, or the store holds a copy fetched after the failure (the warm-up's)."""
        now = self._clock()
        if now >= failure.retry_at:
            return True
        if now - failure.store_checked < self._settings.cache.check_interval_seconds:
            return False
        self._failed[site] = replace(failure, store_checked=now)
        try:
            stat = await self._store.stat(self._name(site))
        except StoreError:
            return False
        return stat is not None and stat.fetched_at > failure.failed_at

    async def _first_load(self, site: str) -> LoadedSite | None:
        lookup = self._missing.lookup(site)  # beside the index's own load, so it rarely adds a wait
        try:
            loaded = await self._load(site)
        except SiteUnavailableError as exc:
            self._fail(site, exc.reason, unpublished=exc.unpublished)
            return None
        except Exception as exc:  # whatever breaks one site's load must leave the other sites answering
            log.warning("site %s: loading its index failed (%s)", site, type(exc).__name__)
            self._fail(site, f"its index could not be loaded ({type(exc).__name__})", unpublished=False)
            return None
        self._failed.pop(site, None)
        self._install(site, loaded)
        if self._jobs is not None and loaded.ranker is not None:
            self._jobs.start(site, loaded)
        await asyncio.wait([lookup], timeout=RECORD_WAIT)
        return loaded

    def _fail(self, site: str, reason: str, *, unpublished: bool) -> None:
        base = self._settings.unpublished_retry_seconds if unpublished else self._settings.site_retry_seconds
        delay = base * random.uniform(1.0, 1.2)  # noqa: S311  jitter, not cryptography: instances spread out
        now = self._clock()
        self._failed[site] = Failure(reason, unpublished, datetime.now(UTC), now + delay, delay, now)
        if unpublished:
            log.debug("site %s is not published (%s); rechecked in %.0f s", site, reason, delay)
        else:
            log.warning("site %s is unavailable (%s); tried again in %.0f s", site, reason, delay)

    def _install(self, site: str, loaded: LoadedSite) -> None:
        self._loaded[site] = loaded  # one assignment: a request holds either the old index or the new one
        self._checked[site] = self._clock()

    def _replace(self, site: str, fresh: LoadedSite) -> None:
        """Serve a newer index: at once when the current one ranks lexically, else once `fresh` has its vectors."""
        current = self._loaded.get(site)
        semantic = current.ranker.semantic if current is not None and current.ranker is not None else None
        vectors = semantic.vectors if semantic is not None else None
        if self._jobs is None or vectors is None or fresh.ranker is None:
            self._install(site, fresh)
            if self._jobs is not None and fresh.ranker is not None:
                self._jobs.start(site, fresh)
            return
        self._jobs.start(site, fresh, reuse=vectors, install=lambda ready: self._install(site, ready))

    async def looked_up(self, sites: list[str]) -> None:
        """Wait a moment for just-loaded sites' stored vectors (never for vectors being computed)."""
        if self._jobs is not None:
            await self._jobs.looked_up(sites)

    def missing(self, loaded: LoadedSite) -> frozenset[str]:
        """The pages of this loaded index that the origin is known not to serve (no I/O)."""
        return self._missing.pages(loaded.index.site, loaded.digest)

    def page_missing(self, site: str, page: str) -> None:
        """A `get` found a page of the served index missing: searches drop it now, the store learns it soon."""
        loaded = self._loaded.get(site)
        if loaded is not None:
            self._missing.found(site, loaded.digest, page)

    async def recorded(self) -> None:
        """Wait until missing pages found or looked up are settled with the store (tests and tools use it)."""
        await self._missing.settled()

    async def embedded(self, site: str) -> None:
        """Wait until the site's embedding job has finished, whatever its outcome (tests and tools use it)."""
        if self._jobs is not None:
            await self._jobs.finished(site)

    async def aclose(self) -> None:
        """Stop loads and embedding work still running (its thread stops at the next batch); let findings reach
        the store."""
        for task in self._inflight.values():
            task.cancel()
        await asyncio.gather(*self._inflight.values(), return_exceptions=True)
        if self._jobs is not None:
            await self._jobs.aclose()
        await self._missing.aclose()

    async def _load(self, site: str) -> LoadedSite:
        name = self._name(site)
        prebuilt = await self._prebuilt(site, name) if self._rank_now(site) else None
        if prebuilt is not None:
            return prebuilt
        cached = await self._read_cache(site, name)
        # Parsing validates the copy; the ranker, the costly part, is built only for the copy actually served.
        parsed = await try_parse(site, cached) if cached is not None else None
        if parsed is not None and cached is not None and cached.age_hours() < self._settings.cache_duration_hours:
            return await build(cached, "cache", parsed, self._weights, rank=self._rank_now(site))
        try:
            fetched = await fetch_index(self._client, self._settings, site, conditional=cached if parsed else None)
        except (OriginError, IndexFormatError) as exc:
            if parsed is not None and cached is not None:
                log.info("site %s: origin failed (%s); serving the stale cached index", site, type(exc).__name__)
                return await build(cached, "stale-cache", parsed, self._weights, rank=self._rank_now(site))
            unpublished = isinstance(exc, OriginError) and exc.status == 404
            raise SiteUnavailableError(site, str(exc), unpublished=unpublished) from exc
        if fetched is None:
            assert parsed is not None and cached is not None  # a 304 only answers a conditional request
            usable = await build(cached, "cache", parsed, self._weights, rank=self._rank_now(site))
            return await self._revalidated(site, usable, cached.version)
        version = await self._write_back(site, fetched.entry, cached)
        built = await build(fetched.entry, "origin", fetched.index, self._weights, rank=self._rank_now(site))
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

    async def _refresh(self, site: str, current: LoadedSite) -> None:
        """Swap in a newer stored copy; an unchanged one costs one property check, never a download."""
        self._checked[site] = self._clock()
        known = (self._jobs.replacing(site) if self._jobs else None) or current  # the newest copy in hand
        try:
            stat = await self._store.stat(self._name(site))
            if stat is None or stat.version in (current.version, known.version):
                return
            if stat.digest == known.digest:  # revalidated or rewritten with the same content
                fetched_at = max(current.fetched_at, stat.fetched_at)
                self._loaded[site] = replace(current, version=stat.version, fetched_at=fetched_at)
                return
            if stat.fetched_at < known.fetched_at:  # older than what this instance already holds
                self._loaded[site] = replace(current, version=stat.version)
                return
            prebuilt = await load_prebuilt(self._store, site, stat, self._weights) if self._rank_now(site) else None
            if prebuilt is not None:
                self._replace(site, prebuilt)
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
            fresh = await build(cached, "cache", parsed, self._weights, rank=self._rank_now(site))
            self._replace(site, fresh)
            log.info("site %s: a newer cached index is in (%d entries)", site, len(fresh.index.entries))
        elif cached is not None:
            self._loaded[site] = replace(current, version=cached.version)

    def failure(self, site: str) -> Failure | None:
        """Why the site is not loaded, if it failed."""
        return self._failed.get(site)

    def health(self) -> dict[str, dict[str, object]]:
        """Per-site state without loading anything: how each site ranks and, when lexically, why."""
        report: dict[str, dict[str, object]] = {}
        for site in self._settings.sites:
            if (failure := self._failed.get(site)) is not None:
                retry = failure.failed_at + timedelta(seconds=failure.retry_after)
                report[site] = {
                    "state": SiteState.FAILED,
                    "reason": failure.reason,
                    "unpublished": failure.unpublished,
                    "retryAt": retry.isoformat(timespec="seconds"),
                }
            elif (loaded := self._loaded.get(site)) is not None:
                report[site] = {
                    "state": SiteState.LOADED,
                    "source": loaded.source,
                    "ranker": "deferred" if loaded.ranker is None else "prebuilt" if loaded.prebuilt else "built",
                    "entries": len(loaded.index.entries),
                    "pages": len(loaded.index.pages),
                    "fetchedAt": loaded.fetched_at.isoformat(),
                    "missingPages": len(self.missing(loaded)),
                    **self._ranking(site, loaded),
                }
            else:
                report[site] = {"state": SiteState.LOADING if self.loading(site) else SiteState.NOT_LOADED}
        return report

    def _ranking(self, site: str, loaded: LoadedSite) -> dict[str, object]:
        if loaded.ranker is None:
            return {
                "ranking": "deferred",
                "why": "a provider ahead of MkDocs answers searches: the search structures are built when a search "
                "falls through to MkDocs; resolution and get use the index",
            }
        state, reason = self._jobs.state(site) if self._jobs is not None else (Semantic.OFF, "")
        ranked = "semantic" if loaded.ranker.semantic is not None else "lexical"
        report: dict[str, object] = {"ranking": ranked, "semantic": state.value}
        if ranked == "lexical":
            report["why"] = {
                Semantic.OFF: "semantic matching is off (Search__Semantic=false)",
                Semantic.PENDING: "its embeddings are being computed in the background",
                Semantic.UNAVAILABLE: f"the embedding model is unavailable: {reason}",
                Semantic.FAILED: f"embedding its index failed: {reason}; it is tried again later (backing off)",
                Semantic.READY: "",
            }[state]
        elif self._jobs is not None and self._jobs.replacing(site) is not None:
            report["updating"] = "a newer index is being embedded; it is served with its vectors once they are ready"
        return report


def _result(future: asyncio.Future[LoadedSite | None]) -> LoadedSite | None:
    """A finished load's index; None for a failed one (`get` reports its own failures)."""
    if not future.done() or future.cancelled() or future.exception() is not None:
        return None
    return future.result()
