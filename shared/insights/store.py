"""Usage events in Blob Storage, beside the index cache: append blobs of JSON lines, one per instance per hour.

    events/2026-12-06/14-3f2a9c1b7d04.jsonl.gz   the events one instance wrote in that hour (UTC), one JSON line each
    keys/1003                                  the pseudonym key of retention period 1003 (`pseudonyms`)

Why blobs rather than Table Storage: no second SDK on every instance's cold start, the account, the app identity's
role and the private endpoint the cache already has, a period read in a few large downloads (a table would page
1,000 entities a request), and retention as one delete per blob. Each instance appends only to its own blobs, so
writers never contend; a reader lists the days it needs. Each append is one gzip member (a blob is a multi-member
gzip stream, `zcat` reads it): the locations that repeat from event to event cost a fraction of their text.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
import os
import zlib
from datetime import UTC, date, datetime, timedelta

from azure.core.credentials_async import AsyncTokenCredential
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.storage.blob.aio import BlobServiceClient, ContainerClient

from shared.cache.blob import client_options
from shared.cache.configured import account
from shared.identity import credential
from shared.insights.events import Event, parse
from shared.settings import DocumentationSettings

log = logging.getLogger(__name__)

EVENTS = "events/"
KEYS = "keys/"
MAX_APPEND_BYTES = 4 * 1024 * 1024
"""The most one append block takes (the service's limit)."""
READ_CONCURRENCY = 8
MAX_EVENTS = 300_000
"""The most events a report reads (the most recent days first): about 150 MB of them in memory at most."""


class UsageStore:
    """One container of usage events and pseudonym keys; owns its client (and credential), closed by `aclose`."""

    def __init__(
        self,
        client: BlobServiceClient,
        container: str,
        *,
        source: str,
        credential: AsyncTokenCredential | None = None,
        instance: str | None = None,
    ) -> None:
        self._client = client
        self._container: ContainerClient = client.get_container_client(container)
        self.source = source
        self._credential = credential
        self._instance = instance or os.urandom(6).hex()
        """This process's own blob names: no two writers ever append to one blob."""

    @property
    def container(self) -> str:
        return self._container.container_name

    async def append(self, lines: list[str], at: datetime) -> int:
        """The lines appended to this instance's blob of `at`'s hour; the bytes written. Raises the SDK's error."""
        name = f"{EVENTS}{at.astimezone(UTC):%Y-%m-%d/%H}-{self._instance}.jsonl.gz"
        blob = self._container.get_blob_client(name)
        written = 0
        for block in _blocks(lines):
            try:
                await blob.append_block(block)
            except ResourceNotFoundError:
                await self._ensure_container()
                with contextlib.suppress(ResourceExistsError, ResourceModifiedError):
                    await blob.create_append_blob(if_none_match="*")  # never truncates one another call made
                await blob.append_block(block)
            written += len(block)
        return written

    async def events(self, since: datetime, until: datetime, limit: int = MAX_EVENTS) -> tuple[list[Event], bool]:
        """The events from `since` to `until` (UTC), the most recent days first, and whether that is all of them:
        reading stops after the day that brings them past `limit` (a report's memory stays bounded)."""
        start, end = int(since.timestamp() * 1000), int(until.timestamp() * 1000)
        lanes = asyncio.Semaphore(READ_CONCURRENCY)

        async def read(name: str) -> list[Event]:
            async with lanes:
                try:
                    data = await (await self._container.download_blob(name)).readall()
                except ResourceNotFoundError:  # purged since it was listed
                    return []
            parsed = (parse(text) for text in _unzipped(data).decode("utf-8", "replace").splitlines() if text)
            return [event for event in parsed if event is not None and start <= event.at <= end]

        found: list[Event] = []
        day, first = until.astimezone(UTC).date(), since.astimezone(UTC).date()
        while day >= first:
            if len(found) >= limit:
                return found, False
            names = await self._names(day)
            for batch in await asyncio.gather(*(read(name) for name in names)):
                found.extend(batch)
            day -= timedelta(days=1)
        return found, True

    async def _names(self, day: date) -> list[str]:
        try:
            return [blob.name async for blob in self._container.list_blobs(name_starts_with=f"{EVENTS}{day:%Y-%m-%d}/")]
        except ResourceNotFoundError:  # no container yet: nothing was ever kept
            return []

    async def key(self, period: int) -> bytes:
        """The pseudonym key of `period`: the one stored, or a new one stored now (the first instance to store one
        wins; every other reads it)."""
        blob = self._container.get_blob_client(f"{KEYS}{period}")
        for _ in range(2):
            try:
                return bytes.fromhex((await (await blob.download_blob()).readall()).decode("ascii"))
            except ResourceNotFoundError:
                pass
            await self._ensure_container()
            with contextlib.suppress(ResourceExistsError, ResourceModifiedError):
                await blob.upload_blob(os.urandom(32).hex(), overwrite=False)
        return bytes.fromhex((await (await blob.download_blob()).readall()).decode("ascii"))

    async def purge(self, before: date, period: int) -> int:
        """Delete the events of days before `before` and the keys of periods before `period`; how many blobs."""
        deleted = 0
        try:
            async for blob in self._container.list_blobs():
                if _expired(blob.name, before, period):
                    with contextlib.suppress(ResourceNotFoundError):
                        await self._container.delete_blob(blob.name)
                        deleted += 1
        except ResourceNotFoundError:
            return deleted
        return deleted

    async def _ensure_container(self) -> None:
        with contextlib.suppress(ResourceExistsError):
            await self._container.create_container()
            log.info("created the usage insights container %s", self.container)

    async def aclose(self) -> None:
        await self._client.close()
        if self._credential is not None:
            await self._credential.close()


def _blocks(lines: list[str]) -> list[bytes]:
    """The lines as gzip members, each an append block of at most `MAX_APPEND_BYTES` (whole lines, each far below
    it: a question and a feedback text are bounded, and so is what an event holds)."""
    blocks: list[bytes] = []
    current = bytearray()
    for text in lines:
        encoded = (text + "\n").encode("utf-8")
        if current and len(current) + len(encoded) > MAX_APPEND_BYTES:
            blocks.append(gzip.compress(bytes(current)))
            current = bytearray()
        current += encoded
    if current:
        blocks.append(gzip.compress(bytes(current)))
    return blocks


def _unzipped(data: bytes) -> bytes:
    """A blob's gzip members, one after another, as far as they decompress (an unreadable tail is left out)."""
    out = bytearray()
    while data:
        member = zlib.decompressobj(wbits=31)
        try:
            text = member.decompress(data)
        except zlib.error:
            break
        if not member.eof:  # cut short: its checksum never came
            break
        out += text
        data = member.unused_data
    return bytes(out)


def _expired(name: str, before: date, period: int) -> bool:
    """Whether a blob of the container is past retention: an events blob of an earlier day, an earlier period's key."""
    if name.startswith(EVENTS):
        try:
            return date.fromisoformat(name[len(EVENTS) :].split("/", 1)[0]) < before
        except ValueError:
            return False
    if name.startswith(KEYS):
        tail = name[len(KEYS) :]
        return tail.isdigit() and int(tail) < period
    return False


def open_usage_store(settings: DocumentationSettings) -> UsageStore | None:
    """The usage store in the index cache's account (`shared.cache.configured.account`), in `Insights__Container`;
    None when no account is configured or its setting is unusable (the reason is logged). No I/O here."""
    chosen = account(settings)
    if chosen is None:
        log.warning("usage insights are on but no storage account is configured: nothing is kept")
        return None
    source, connection_string, service_uri = chosen
    options = client_options(proxy=settings.proxy_configured)
    container = settings.insights.container
    if connection_string:
        try:
            client = BlobServiceClient.from_connection_string(connection_string, **options)
        except ValueError as exc:
            log.warning("%s is not a usable storage setting (%s): no usage kept", source, type(exc).__name__)
            return None
        return UsageStore(client, container, source=source)
    token = credential(settings)
    return UsageStore(BlobServiceClient(service_uri or "", credential=token, **options), container, source=source)
