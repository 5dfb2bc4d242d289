"""Missing pages in the shared store: a site's record read and merged into, and one instance's view of every site's.

The record (`missing.MissingRecord`) lives under `shared.cache.missing_name(site)`. Writers merge: they read the
stored record, add their findings (a record for another index version is replaced by theirs) and
write conditionally on the version they read, trying again on a conflict, so two instances never lose each
other's findings. Findings are written only while the stored index is the version they were made in: a record
must describe the index every instance loads next.

`MissingPages` is what a serving instance knows: the stored record as last read (refreshed with the registry's
periodic store check, downloaded only when its version changed) plus what its own `get`s found, which are written
in the background, one writer per site; a storage failure, or conflicts outlasting the retries, leaves them to
the next store check. No request fails because of the store; a site's first load waits at most a second
(`sites.RECORD_WAIT`) for the record beside its index, and no later request waits for it at all.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from shared.cache import CopyStore, StoredCopy, missing_name
from shared.errors import StoreError
from shared.providers.mkdocs.fetching.unserved import MissingRecord, missing_for, start

log = logging.getLogger(__name__)

WRITE_ATTEMPTS = 3
CLOSE_WAIT = 2.0
"""Seconds closing waits for findings still being written before it gives them up."""


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """A site's record as the store holds it (None: absent or unreadable) and the store version it was read at."""

    record: MissingRecord | None
    version: str | None


async def read_record(store: CopyStore, site: str) -> StoredRecord:
    """The site's stored record; raises StoreError when the store cannot be read."""
    entry = await store.read(missing_name(site))
    if entry is None:
        return StoredRecord(None, None)
    return StoredRecord(MissingRecord.loads(entry.payload), entry.version)


async def save(store: CopyStore, site: str, findings: MissingRecord, *, index_name: str) -> StoredRecord | None:
    """Merge `findings` into the stored record, conditionally, merging again on a conflict.

    Returns what the store holds afterwards, or None when the stored index is another version than the one the
    findings were made in (they are not written). Raises StoreError, also when conflicts outlast `WRITE_ATTEMPTS`
    (the caller keeps the findings and writes them at its next store check).
    """
    stat = await store.stat(index_name)
    if stat is not None and stat.digest is not None and stat.digest != findings.index:
        return None
    for _ in range(WRITE_ATTEMPTS):
        current = await read_record(store, site)
        held = current.record
        # A record of another index version is replaced, not merged: its pages' validators would otherwise pile up
        # version after version.
        merged = held.merge(findings) if held is not None and held.index == findings.index else findings
        if merged == current.record:
            return current
        entry = StoredCopy(merged.dumps(), datetime.now(UTC), entries=len(merged.missing))
        written = await store.write(missing_name(site), entry, expected_version=current.version)
        if written is not None:
            return StoredRecord(merged, written)
    raise StoreError(f"the record changed under {WRITE_ATTEMPTS} writes in a row")


class MissingPages:
    """One instance's view of each site's missing pages: the stored record and its own `get`s' findings."""

    def __init__(self, store: CopyStore, index_name: Callable[[str], str]) -> None:
        self._store = store
        self._index_name = index_name
        self._stored: dict[str, StoredRecord] = {}
        self._found: dict[str, MissingRecord] = {}
        """This instance's own findings per site, for the index it served when it made them."""
        self._unsaved: set[str] = set()
        self._writers: dict[str, asyncio.Task[None]] = {}
        self._lookups: set[asyncio.Task[None]] = set()

    def pages(self, site: str, index: str) -> frozenset[str]:
        """The pages known missing from the site's index with digest `index` (no I/O)."""
        stored = self._stored.get(site)
        return missing_for(stored.record if stored else None, index) | missing_for(self._found.get(site), index)

    def found(self, site: str, index: str, page: str) -> None:
        """A `get` found `page` missing: hidden from this instance's searches now, written to the store soon."""
        if page in self.pages(site, index):
            return
        self._found[site] = start(self._found.get(site), index).with_missing([page])
        self._unsaved.add(site)
        log.info("site %s: a page its index lists is not served (%d known missing)", site, len(self.pages(site, index)))
        self._write_soon(site)

    def lookup(self, site: str) -> asyncio.Task[None]:
        """`refresh` in the background (a first load awaits it only briefly)."""
        task = asyncio.get_running_loop().create_task(self.refresh(site))
        self._lookups.add(task)
        task.add_done_callback(self._lookups.discard)
        return task

    async def refresh(self, site: str) -> None:
        """Pick up other instances' findings: a property check, and a download only when the record changed.

        Findings this instance could not write yet are written again. Never raises.
        """
        known = self._stored.get(site)
        try:
            if known is None:
                self._stored[site] = await read_record(self._store, site)
            else:
                stat = await self._store.stat(missing_name(site))
                if stat is None:
                    self._stored[site] = StoredRecord(None, None)
                elif stat.version != known.version:
                    self._stored[site] = await read_record(self._store, site)
        except StoreError as exc:
            log.info("site %s: the missing-pages record is unreadable (%s); keeping what is known", site, exc)
        except Exception as exc:  # a background refresh: nobody else would see it
            log.warning("site %s: reading the missing-pages record failed (%s)", site, type(exc).__name__)
        if site in self._unsaved:
            self._write_soon(site)

    def _write_soon(self, site: str) -> None:
        writer = self._writers.get(site)
        if writer is None or writer.done():
            self._writers[site] = asyncio.get_running_loop().create_task(self._write(site))

    async def _write(self, site: str) -> None:
        while site in self._unsaved:
            self._unsaved.discard(site)
            findings = self._found[site]
            try:
                saved = await save(self._store, site, findings, index_name=self._index_name(site))
            except Exception as exc:  # a background write: the findings stay, written again at the next store check
                self._unsaved.add(site)
                level = logging.INFO if isinstance(exc, StoreError) else logging.WARNING
                log.log(level, "site %s: could not record missing pages (%s); tried again later", site, _why(exc))
                return
            if saved is not None:
                self._stored[site] = saved

    async def settled(self) -> None:
        """Wait until findings being written and records being looked up are done (tests and tools use it)."""
        await asyncio.gather(*self._writers.values(), *self._lookups, return_exceptions=True)

    async def aclose(self) -> None:
        """Give findings being written a moment to reach the store, then stop everything still running."""
        tasks = [*self._writers.values(), *self._lookups]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=CLOSE_WAIT)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)


def _why(exc: Exception) -> str:
    """What a failure may say in a log: the store's own message, else only the exception's type."""
    return str(exc) if isinstance(exc, StoreError) else type(exc).__name__
