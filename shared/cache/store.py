"""What a cache store is: named copies with versions and conditional writes.

A store holds named entries (`shared.cache.names`): each site's search index and the artifacts derived from it.
`version` is the store's own opaque version (a blob's ETag); writes are conditional on it, so an older copy never
replaces a newer one. A store that cannot be reached raises `StoreError`; callers treat that as "no cached copy" and
carry on from the origin.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

WRITE_ATTEMPTS = 3


def digest(payload: bytes) -> str:
    """The content identity recorded beside a copy, so an unchanged index is never re-downloaded or rebuilt."""
    return hashlib.sha256(payload).hexdigest()


def age_hours(fetched_at: datetime, now: datetime | None = None) -> float:
    """Hours since the origin last vouched for a copy."""
    return ((now or datetime.now(UTC)) - fetched_at).total_seconds() / 3600


@dataclass(frozen=True, slots=True)
class StoredCopy:
    """One stored copy: a site's index and what it was copied from, or data derived from an index (a prebuilt
    ranker, vectors, code fences) and what it was built from (`derived`, `built_from`)."""

    payload: bytes
    fetched_at: datetime
    """When the origin last vouched for this copy: the 200 that delivered it, or a later 304."""
    origin_etag: str | None = None
    origin_last_modified: str | None = None
    version: str | None = None
    entries: int | None = None

    @classmethod
    def derived(
        cls, payload: bytes, fetched_at: datetime, *, built_from: str, entries: int | None = None
    ) -> StoredCopy:
        """Data derived from an index, recording what it was built from where an index records its origin's ETag
        (one metadata field, so stored copies keep one layout)."""
        return cls(payload, fetched_at, origin_etag=built_from, entries=entries)

    @property
    def built_from(self) -> str | None:
        """What derived data was built from (`derived`)."""
        return self.origin_etag

    def age_hours(self, now: datetime | None = None) -> float:
        return age_hours(self.fetched_at, now)

    @property
    def digest(self) -> str:
        return digest(self.payload)


@dataclass(frozen=True, slots=True)
class CopyStat:
    """A stored copy's properties without its payload: what a cheap freshness check reads."""

    version: str
    fetched_at: datetime
    digest: str | None = None
    origin_etag: str | None = None
    origin_last_modified: str | None = None
    entries: int | None = None

    @property
    def built_from(self) -> str | None:
        """What derived data was built from (`StoredCopy.derived`)."""
        return self.origin_etag

    def age_hours(self, now: datetime | None = None) -> float:
        return age_hours(self.fetched_at, now)

    @property
    def complete(self) -> bool:
        """True when the copy carries the metadata this service writes, so conditional requests can trust it."""
        return self.digest is not None and bool(self.entries)


class StoreStatus(StrEnum):
    """Where a store stands, from what it last saw."""

    UNKNOWN = "unknown"
    """Not contacted yet."""
    OK = "ok"
    UNREACHABLE = "unreachable"
    ERROR = "error"
    DEGRADED = "degraded"
    """Storage is configured but not usable: the cache lives in this process."""
    MEMORY_ONLY = "memory-only"
    """No storage configured: the cache lives in this process."""

    @property
    def failing(self) -> bool:
        """Every instance loads from the origin meanwhile: health is `degraded` (`unknown` is not failing)."""
        return self in (StoreStatus.ERROR, StoreStatus.UNREACHABLE, StoreStatus.DEGRADED)


def _absent() -> Any:
    return Field(None, exclude_if=lambda value: value is None)


class StoreHealth(BaseModel):
    """What health says of the cache store (never from I/O of its own)."""

    model_config = ConfigDict(frozen=True)

    kind: str
    """`blob` or `memory`."""
    shared: bool
    """Other instances read what it holds (the warm-up writes derived data only to such a store)."""
    status: StoreStatus
    detail: str
    source: str | None = _absent()
    """Which setting configured it."""
    account: str | None = _absent()
    container: str | None = _absent()


class CopyStore(Protocol):
    """A shared or local store of named copies (indexes and their artifacts). Every method may raise StoreError."""

    shared: bool
    """Other instances read what it holds; a process-local store's derived data would die with it."""

    async def read(self, name: str) -> StoredCopy | None:
        """The cached copy, or None when there is none."""

    async def stat(self, name: str) -> CopyStat | None:
        """The cached copy's properties without its payload (a cheap property check), or None."""

    async def write(self, name: str, entry: StoredCopy, *, expected_version: str | None) -> str | None:
        """Store `entry` if the current version is still `expected_version` (None: no copy yet).

        Returns the new version, or None when another writer got there first.
        """

    async def touch(self, name: str, fetched_at: datetime, *, expected_version: str) -> str | None:
        """Record that the origin confirmed the copy is current (HTTP 304); same race rule as `write`."""

    def describe(self) -> StoreHealth:
        """What health reports about the store, from what it last saw; never does I/O."""

    def probe(self) -> None:
        """Ask the store in the background, without waiting, whether it still answers, when it has not been heard
        from for a while (health calls it before `describe`, so a stalled store shows within seconds)."""

    async def aclose(self) -> None: ...


async def store_newest(store: CopyStore, name: str, entry: StoredCopy, *, expected_version: str | None) -> str | None:
    """Write `entry` unless the store already holds a copy the origin vouched for at the same time or later.

    A lost race is re-examined rather than given up: when the winner's copy is older than ours, ours replaces it,
    still conditionally. Returns the version written, or None when a copy at least as new was already there.
    """
    for _ in range(WRITE_ATTEMPTS):
        written = await store.write(name, entry, expected_version=expected_version)
        if written is not None:
            return written
        current = await store.stat(name)
        if current is not None and current.fetched_at >= entry.fetched_at:
            return None
        expected_version = current.version if current is not None else None
    return None
