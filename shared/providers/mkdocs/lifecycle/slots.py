"""A configured site's state in one process, changed only by its named transitions.

    not_loaded ──loaded──> loaded ──swapped | ranked | restamped──> loaded
        └──failed──> failed ──loaded (a retry)──> loaded
                        └──failed (a retry that failed too)──> failed

`SiteRegistry` (`sites.py`) decides when each transition happens; the slot only holds what it leads to.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from datetime import datetime

from shared.providers.mkdocs.lifecycle.health import SiteState
from shared.providers.mkdocs.lifecycle.loading import LoadedSite
from shared.providers.mkdocs.scoring.embeddings import Embedded


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
class SiteSlot:
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
