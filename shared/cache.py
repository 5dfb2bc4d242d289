"""Where copies of each site's search index are kept between loads: the store protocol and its in-memory form.

A store holds one entry per site, named by `cache_name`. `version` is the store's own opaque version (a blob's
ETag); writes are conditional on it, so an older copy never replaces a newer one. A store that cannot be reached
raises `StoreError`; callers treat that as "no cached copy" and carry on from the origin.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Protocol

from shared.errors import DocsError

_INVALID_FILE_CHARS = re.compile(r'[<>:"/\\|?*\x00-\x1f]')
WRITE_ATTEMPTS = 3


class StoreError(DocsError):
    """The cache store could not be reached or refused the request; never reaches a caller of the service."""


def digest(payload: bytes) -> str:
    """The content identity recorded beside a copy, so an unchanged index is never re-downloaded or rebuilt."""
    return hashlib.sha256(payload).hexdigest()


@dataclass(frozen=True, slots=True)
class CachedIndex:
    """One site's cached index and what it was copied from."""

    payload: bytes
    fetched_at: datetime
    """When the origin last vouched for this copy: the 200 that delivered it, or a later 304."""
    origin_etag: str | None = None
    origin_last_modified: str | None = None
    version: str | None = None
    entries: int | None = None

    def age_hours(self, now: datetime | None = None) -> float:
        return ((now or datetime.now(UTC)) - self.fetched_at).total_seconds() / 3600

    @property
    def digest(self) -> str:
        return digest(self.payload)


@dataclass(frozen=True, slots=True)
class CacheStat:
    """A stored copy's properties without its payload: what a cheap freshness check reads."""

    version: str
    fetched_at: datetime
    digest: str | None = None
    origin_etag: str | None = None
    origin_last_modified: str | None = None
    entries: int | None = None

    @property
    def complete(self) -> bool:
        """True when the copy carries the metadata this service writes, so conditional requests can trust it."""
        return self.digest is not None and bool(self.entries)


class IndexStore(Protocol):
    """A shared or local store of cached site indexes. Every method may raise StoreError."""

    kind: str

    async def read(self, site: str) -> CachedIndex | None:
        """The cached copy, or None when there is none."""

    async def stat(self, site: str) -> CacheStat | None:
        """The cached copy's properties without its payload (a cheap property check), or None."""

    async def version(self, site: str) -> str | None:
        """The cached copy's version without reading its payload."""

    async def write(self, site: str, entry: CachedIndex, *, expected_version: str | None) -> str | None:
        """Store `entry` if the current version is still `expected_version` (None: no copy yet).

        Returns the new version, or None when another writer got there first.
        """

    async def touch(self, site: str, fetched_at: datetime, *, expected_version: str) -> str | None:
        """Record that the origin confirmed the copy is current (HTTP 304); same race rule as `write`."""

    def describe(self) -> dict[str, object]:
        """What health reports about the store, from what it last saw; never does I/O."""

    async def aclose(self) -> None: ...


def cache_name(template: str, site: str) -> str:
    """The spec's cache file name: `{site}` substituted (sanitized), or the site prepended when absent."""
    safe = _INVALID_FILE_CHARS.sub("-", site)
    if "{site}" in template:
        return template.replace("{site}", safe)
    return f"{safe}-{template}"


async def store_newest(store: IndexStore, site: str, entry: CachedIndex, *, expected_version: str | None) -> str | None:
    """Write `entry` unless the store already holds a copy the origin vouched for at the same time or later.

    A lost race is re-examined rather than given up: when the winner's copy is older than ours, ours replaces it,
    still conditionally. Returns the version written, or None when a copy at least as new was already there.
    """
    for _ in range(WRITE_ATTEMPTS):
        written = await store.write(site, entry, expected_version=expected_version)
        if written is not None:
            return written
        current = await store.stat(site)
        if current is not None and current.fetched_at >= entry.fetched_at:
            return None
        expected_version = current.version if current is not None else None
    return None


class MemoryIndexStore:
    """Process-local store used when no storage account is configured; dies with the instance."""

    kind = "memory"

    def __init__(
        self,
        *,
        status: str = "memory-only",
        detail: str = "no storage configured; the cache lives in this process only",
    ) -> None:
        self._entries: dict[str, CachedIndex] = {}
        self._counter = 0
        self._status = status
        self._detail = detail

    async def read(self, site: str) -> CachedIndex | None:
        return self._entries.get(site)

    async def stat(self, site: str) -> CacheStat | None:
        entry = self._entries.get(site)
        if entry is None or entry.version is None:
            return None
        return CacheStat(
            entry.version,
            entry.fetched_at,
            entry.digest,
            entry.origin_etag,
            entry.origin_last_modified,
            entry.entries,
        )

    async def version(self, site: str) -> str | None:
        entry = self._entries.get(site)
        return entry.version if entry else None

    async def write(self, site: str, entry: CachedIndex, *, expected_version: str | None) -> str | None:
        if await self.version(site) != expected_version:
            return None
        self._counter += 1
        self._entries[site] = replace(entry, version=str(self._counter))
        return str(self._counter)

    async def touch(self, site: str, fetched_at: datetime, *, expected_version: str) -> str | None:
        current = self._entries.get(site)
        if current is None or current.version != expected_version:
            return None
        return await self.write(site, replace(current, fetched_at=fetched_at), expected_version=expected_version)

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "shared": False, "status": self._status, "detail": self._detail}

    async def aclose(self) -> None:
        self._entries.clear()
