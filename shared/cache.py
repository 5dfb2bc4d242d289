"""Where copies of each site's search index are kept between loads: the store protocol and its in-memory form.

A store holds one entry per site, named by `cache_name`. `version` is the store's own opaque version (a blob's
ETag); writes are conditional on it, so an older copy never replaces a newer one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Protocol

_INVALID_FILE_CHARS = re.compile(r'[<>:"/\\|?*\x00-\x1f]')


@dataclass(frozen=True, slots=True)
class CachedIndex:
    """One site's cached index and what it was copied from."""

    payload: bytes
    fetched_at: datetime
    origin_etag: str | None = None
    origin_last_modified: str | None = None
    version: str | None = None

    def age_hours(self, now: datetime | None = None) -> float:
        return ((now or datetime.now(UTC)) - self.fetched_at).total_seconds() / 3600


class IndexStore(Protocol):
    """A shared or local store of cached site indexes."""

    kind: str

    async def read(self, site: str) -> CachedIndex | None:
        """The cached copy, or None when there is none."""

    async def version(self, site: str) -> str | None:
        """The cached copy's version without reading its payload (a cheap property check)."""

    async def write(self, site: str, entry: CachedIndex, *, expected_version: str | None) -> str | None:
        """Store `entry` if the current version is still `expected_version` (None: no copy yet).

        Returns the new version, or None when another writer got there first.
        """

    async def touch(self, site: str, fetched_at: datetime, *, expected_version: str) -> str | None:
        """Record that the origin confirmed the copy is current (HTTP 304); same race rule as `write`."""

    def describe(self) -> dict[str, object]:
        """What health reports about the store."""

    async def aclose(self) -> None: ...


def cache_name(template: str, site: str) -> str:
    """The spec's cache file name: `{site}` substituted (sanitized), or the site prepended when absent."""
    safe = _INVALID_FILE_CHARS.sub("-", site)
    if "{site}" in template:
        return template.replace("{site}", safe)
    return f"{safe}-{template}"


class MemoryIndexStore:
    """Process-local store used when no storage account is configured; dies with the instance."""

    kind = "memory"

    def __init__(self) -> None:
        self._entries: dict[str, CachedIndex] = {}
        self._counter = 0

    async def read(self, site: str) -> CachedIndex | None:
        return self._entries.get(site)

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
        return {"kind": self.kind, "shared": False, "detail": "no storage configured; cache lives in this process"}

    async def aclose(self) -> None:
        return None
