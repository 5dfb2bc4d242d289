"""The process-local cache store, used when no storage account is configured; it dies with the instance."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from shared.cache.store import CopyStat, StoredCopy, StoreHealth, StoreStatus


class MemoryStore:
    """CopyStore in a dict, with versions counted up, so the cache semantics hold without storage."""

    def __init__(
        self,
        *,
        status: StoreStatus = StoreStatus.MEMORY_ONLY,
        detail: str = "no storage configured; the cache lives in this process only",
        shared: bool = False,
    ) -> None:
        self.shared = shared
        """False but in tests standing in for a shared store."""
        self._entries: dict[str, StoredCopy] = {}
        self._counter = 0
        self._status = status
        self._detail = detail

    async def read(self, name: str) -> StoredCopy | None:
        return self._entries.get(name)

    async def stat(self, name: str) -> CopyStat | None:
        entry = self._entries.get(name)
        if entry is None or entry.version is None:
            return None
        return CopyStat(
            entry.version,
            entry.fetched_at,
            entry.digest,
            entry.origin_etag,
            entry.origin_last_modified,
            entry.entries,
        )

    async def write(self, name: str, entry: StoredCopy, *, expected_version: str | None) -> str | None:
        current = self._entries.get(name)
        if (current.version if current else None) != expected_version:
            return None
        self._counter += 1
        self._entries[name] = replace(entry, version=str(self._counter))
        return str(self._counter)

    async def touch(self, name: str, fetched_at: datetime, *, expected_version: str) -> str | None:
        current = self._entries.get(name)
        if current is None or current.version != expected_version:
            return None
        return await self.write(name, replace(current, fetched_at=fetched_at), expected_version=expected_version)

    def probe(self) -> None:
        """Nothing to ask: the process holds it."""

    def describe(self) -> StoreHealth:
        return StoreHealth(kind="memory", shared=self.shared, status=self._status, detail=self._detail)

    async def aclose(self) -> None:
        self._entries.clear()
