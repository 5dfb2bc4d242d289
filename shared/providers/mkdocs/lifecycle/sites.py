"""Each site's index, loaded lazily behind its own gate, from the shared cache or the origin.

A site loads on first use, from the copy the load policy chooses (`loading.SiteLoader`). A loaded site re-checks the
store's version at most every `check_interval` seconds and swaps in a newer copy whole, so no request sees a
half-built index.

A site that cannot load fails alone: the other sites keep answering. Unlike the spec's CLI, it is tried again at
most every `SiteRetrySeconds` (with jitter), an unpublished one (the origin answers 404) every
`UnpublishedRetrySeconds`, and at once when the store holds a copy newer than the failure (the warm-up wrote one).

Each site's state is one slot (`slots.SiteSlot`), changed only by its named transitions.

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
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from shared.cache import CopyStore
from shared.embedding import EmbeddingModel
from shared.errors import SiteUnavailableError
from shared.fetch import OriginClient
from shared.providers.mkdocs.fetching.unserved_store import MissingPages
from shared.providers.mkdocs.indexes.index import SiteIndex
from shared.providers.mkdocs.indexes.kinds import PathWeights
from shared.providers.mkdocs.lifecycle.health import Semantic, SiteFailed, SiteHealth, SiteState, site_loaded
from shared.providers.mkdocs.lifecycle.layouts import Layouts
from shared.providers.mkdocs.lifecycle.loading import LoadedSite, SiteLoader, rank
from shared.providers.mkdocs.lifecycle.parts import read_code_part
from shared.providers.mkdocs.lifecycle.slots import Failure, SiteSlot
from shared.providers.mkdocs.scoring.embeddings import Embedded, EmbeddingJobs
from shared.settings import IndexPolicy, SiteTimings

log = logging.getLogger(__name__)

T = TypeVar("T")

RECORD_WAIT = 1.0
"""Seconds a first load waits, beyond its own, for the site's missing-pages record to be looked up."""


class SiteRegistry:
    """Per-site load state for one process: each site's slot, and the embeddings of their indexes."""

    def __init__(
        self,
        client: OriginClient,
        store: CopyStore,
        *,
        policy: IndexPolicy,
        timings: SiteTimings,
        weights: PathWeights,
        embedding: EmbeddingModel | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._timings = timings
        sites = policy.sites.sites
        self._deferred = False
        """A provider ahead of MkDocs answers searches: build search structures only when a search falls through."""
        self._store = store
        self._policy = policy
        self._jobs = (
            EmbeddingJobs(store, embedding, retry_seconds=timings.retry, sites=sites, read_code=self._read_code)
            if embedding is not None
            else None
        )
        self._code_reads: dict[str, asyncio.Lock] = {}
        self._loader = SiteLoader(client, store, policy=policy, weights=weights)
        self._clock = clock
        self._sites = {site: SiteSlot(site, timings.check_interval) for site in sites}
        self._missing = MissingPages(store, self._loader.name)

    @property
    def store(self) -> CopyStore:
        """The store the sites' indexes and what is derived from them are kept in."""
        return self._store

    @property
    def layouts(self) -> Layouts:
        """Which layout each site publishes, shared with the versions lookup (`layouts.py`)."""
        return self._loader.layouts

    def add_version(self, key: str) -> None:
        """A versioned site's version (`shared.site_key.SiteKey`) as a site of its own, loaded on its first use."""
        if key not in self._sites:
            self._sites[key] = SiteSlot(key, self._timings.check_interval)

    @property
    def embedding(self) -> EmbeddingModel | None:
        """The model this registry embeds with; None when semantic matching is off."""
        return self._jobs.model if self._jobs is not None else None

    def defer_search(self) -> None:
        """A provider ahead of MkDocs answers searches: load indexes without their search structures, which the
        first search that falls through builds (`searchable`). Said once, before anything loads."""
        self._deferred = True

    def _rank_now(self, slot: SiteSlot) -> bool:
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
            ranked = await self._loader.prebuilt_for(site, current) or replace(
                current, ranker=await rank(current, self._loader.weights)
            )
            if slot.served is current:  # not swapped meanwhile
                slot.ranked(ranked)
                self._embed(site, ranked)
            log.info("site %s: search structures built on the first search that reached it", site)
            newest = slot.served
            # A newer index swapped in meanwhile without them (its load began before this search): this search
            # ranks on the one just built, and the next search builds the newer one's.
            return newest if newest is not None and newest.ranker is not None else ranked

    async def code_side(self, loaded: LoadedSite) -> None:
        """What code search reads of a site beside its page ranker, read by the first code search that reaches it
        (once, however many ask): a prebuilt site's code blocks (`parts.read_code_part`), then their rows
        (`EmbeddingJobs.code_rows`). Held with the loaded index, so released with it. Raises SiteUnavailableError
        when the blocks cannot be read: that search goes on without the site's code, and the next one reads again."""
        async with self._code_reads.setdefault(loaded.index.site, asyncio.Lock()):
            await self._read_code(loaded)
            if self._jobs is not None:
                await self._jobs.code_rows(loaded)

    async def _read_code(self, loaded: LoadedSite) -> None:
        await read_code_part(self._store, loaded, self._policy)

    def current(self, site: str) -> LoadedSite | None:
        """The index served for the site right now, without loading or checking anything."""
        slot = self._sites.get(site)
        return slot.served if slot is not None else None

    async def get(self, site: str) -> LoadedSite | None:
        """The site's loaded index, loading it on first use; None when the site failed to load.

        A loaded site is returned at once unless its store check is due; then the check runs in the background (one
        per site, however many requests ask) and this request waits for it at most `Search__SiteWaitSeconds`, as a
        search does (`within`), before it is answered from the index in hand: a slow or stalled store, or a newer
        copy being built, never holds it longer.
        """
        slot = self._sites[site]
        if slot.served is not None and slot.failure is None and slot.check_due(self._clock()):
            await asyncio.wait([self._ready(site)], timeout=self._timings.site_wait)
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

    async def _retry(self, slot: SiteSlot) -> LoadedSite | None:
        async with slot.gate:
            failure = slot.failure
            if failure is None:
                return slot.served  # another request brought it back meanwhile
            if not await self._retry_due(slot, failure):
                return None
            log.info("site %s: trying its index again", slot.name)
            return await self._first_load(slot)

    async def _retry_due(self, slot: SiteSlot, failure: Failure) -> bool:
        """The backoff has passed, or the store holds a copy fetched after the failure (the warm-up's)."""
        now = self._clock()
        if now >= failure.retry_at:
            return True
        if now - failure.store_checked < self._timings.check_interval:
            return False
        slot.store_asked(now)
        return await self._loader.written_since(slot.name, failure.failed_at)

    async def _first_load(self, slot: SiteSlot) -> LoadedSite | None:
        site = slot.name
        lookup = self._missing.lookup(site)  # beside the index's own load, so it rarely adds a wait
        rank = self._rank_now(slot)
        if rank and self._jobs is not None:
            self._jobs.prefetch(site)  # its scan rows download beside the index, not after it
        try:
            loaded = await self._loader.load(site, rank=rank)
        except SiteUnavailableError as exc:
            self._forget(site)
            slot.failed(self._failure(site, exc.reason, unpublished=exc.unpublished))
            return None
        except Exception as exc:  # whatever breaks one site's load must leave the other sites answering
            self._forget(site)
            log.warning("site %s: loading its index failed (%s)", site, type(exc).__name__)
            slot.failed(self._failure(site, f"its index could not be loaded ({type(exc).__name__})", unpublished=False))
            return None
        slot.loaded(loaded, self._clock())
        self._embed(site, loaded)
        await asyncio.wait([lookup], timeout=RECORD_WAIT)
        return loaded

    def _forget(self, site: str) -> None:
        if self._jobs is not None:
            self._jobs.forget(site)

    def _failure(self, site: str, reason: str, *, unpublished: bool) -> Failure:
        base = self._timings.unpublished_retry if unpublished else self._timings.retry
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

    def _replace(self, slot: SiteSlot, fresh: LoadedSite) -> None:
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

    async def _swap_when_embedded(self, slot: SiteSlot, fresh: LoadedSite, job: asyncio.Task[Embedded | None]) -> None:
        """Install the job's outcome: `fresh` with its vectors, or without them when they failed."""
        await asyncio.wait([job])
        slot.embedded(fresh, _result(job), self._clock())

    def searching(self) -> AbstractContextManager[None]:
        """Brackets a search (`EmbeddingJobs.searching`: background reads that can wait, wait for it to end)."""
        return self._jobs.searching() if self._jobs is not None else nullcontext()

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

    async def _refresh(self, slot: SiteSlot, current: LoadedSite) -> None:
        """Swap in a newer stored copy; an unchanged one costs one property check, never a download."""
        slot.checking(self._clock())
        found = await self._loader.newer(slot.name, current, slot.incoming or current, rank=self._rank_now(slot))
        if found is None:
            return
        if found.fresh:
            self._replace(slot, found.copy)
        else:
            slot.restamped(found.copy)

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
                semantic, reason = self._jobs.state(site) if self._jobs is not None else (Semantic.OFF, "")
                updating, missing = slot.incoming is not None, len(self.missing(loaded))
                report[site] = site_loaded(loaded, semantic, reason, updating=updating, missing=missing)
            else:
                report[site] = SiteHealth(state=slot.shown)
        return report


def _result(future: asyncio.Future[T]) -> T | None:
    """A finished task's result; None for a failed or cancelled one (`get` reports its own failures)."""
    if not future.done() or future.cancelled() or future.exception() is not None:
        return None
    return future.result()
