"""Test doubles around real components: a store that counts calls, and a loopback port nobody listens on."""

from __future__ import annotations

import asyncio
import socket
from collections import Counter
from datetime import datetime

from shared.cache import CopyStat, CopyStore, StoredCopy, StoreHealth


class CountingStore:
    """A real store that also counts what the registry asks of it."""

    def __init__(self, inner: CopyStore) -> None:
        self.inner = inner
        self.shared = inner.shared
        self.calls: Counter[str] = Counter()
        self.names: list[tuple[str, str]] = []
        """Each read, stat and write, with the name it was for."""

    async def read(self, name: str) -> StoredCopy | None:
        self.calls["read"] += 1
        self.names.append(("read", name))
        return await self.inner.read(name)

    async def stat(self, name: str) -> CopyStat | None:
        self.calls["stat"] += 1
        self.names.append(("stat", name))
        return await self.inner.stat(name)

    async def write(self, name: str, entry: StoredCopy, *, expected_version: str | None) -> str | None:
        self.calls["write"] += 1
        self.names.append(("write", name))
        return await self.inner.write(name, entry, expected_version=expected_version)

    async def touch(self, name: str, fetched_at: datetime, *, expected_version: str) -> str | None:
        self.calls["touch"] += 1
        return await self.inner.touch(name, fetched_at, expected_version=expected_version)

    def describe(self) -> StoreHealth:
        return self.inner.describe()

    def probe(self) -> None:
        self.inner.probe()

    async def aclose(self) -> None:
        await self.inner.aclose()


class StallingStore(CountingStore):
    """A real store that, once `stalled`, never answers a read or a property check (until cancelled)."""

    def __init__(self, inner: CopyStore) -> None:
        super().__init__(inner)
        self.stalled = False

    async def read(self, name: str) -> StoredCopy | None:
        await self._stall()
        return await super().read(name)

    async def stat(self, name: str) -> CopyStat | None:
        await self._stall()
        return await super().stat(name)

    async def _stall(self) -> None:
        if self.stalled:
            await asyncio.Event().wait()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
