"""The shared cache in Azure Blob Storage: one blob per stored name, conditional writes, fail-fast reachability.

Every instance reads and writes the same blobs, so one warm-up serves them all. A blob is written in a single
block-blob upload, which readers see whole or not at all, and only while its ETag is still the one the writer
read (or, for a first copy, only while no blob exists), so an older copy never replaces a newer one. Metadata
records when the origin last vouched for the copy and with which validators:

    fetchedat            ISO-8601 UTC
    originetag           the origin response's ETag, when it sent one
    originlastmodified   the origin response's Last-Modified, when it sent one
    entries              how many index entries, for people reading the container
    sha256               the payload's digest, so an unchanged copy is never downloaded or rebuilt again

A storage account that cannot be reached fails fast (short timeouts, no connect retries) and then is not asked
again for a cool-down period, so requests keep being answered from the origin without waiting on storage. One that
accepts connections and never answers (a stalled account) fails the same way after `ANSWER_TIMEOUT`: every call,
on a request's path or in the background, gives up once storage has sent nothing for that long (a large download
that keeps sending is not cut), so a stall costs one short wait (about the per-site wait), then the cool-down.
Health hears of a stall within seconds even with no call under way: asked while storage has not been heard from for
`PROBE_AFTER` seconds, the store asks it in the background (`probe`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

from azure.core import MatchConditions
from azure.core.credentials_async import AsyncTokenCredential
from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    HttpResponseError,
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
)
from azure.storage.blob import ContentSettings
from azure.storage.blob.aio import BlobClient, BlobServiceClient, LinearRetry

from shared.cache.store import CopyStat, StoredCopy, StoreHealth, StoreStatus
from shared.errors import StoreError
from shared.fetch import MAX_INDEX_BYTES

log = logging.getLogger(__name__)

T = TypeVar("T")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
CONNECT_TIMEOUT = 2.0
ANSWER_TIMEOUT = 2.0
"""Seconds storage may go without sending a byte once asked (the SDK's read timeout): past it the call fails and the
store is skipped for the cool-down. About `Search__SiteWaitSeconds`, so a stalled account costs a request no more
than a slow site does."""
OPERATION_TIMEOUT = 30.0
"""The most one call may take in all (a large upload to an account that stopped reading is bounded only by this)."""
COOL_DOWN_SECONDS = 30.0
PROBE_AFTER = 5.0
"""Seconds without hearing from storage after which health asks it again in the background."""

UNKNOWN, OK, UNREACHABLE, ERROR = StoreStatus.UNKNOWN, StoreStatus.OK, StoreStatus.UNREACHABLE, StoreStatus.ERROR


class BlobStore:
    """CopyStore over one container; owns its BlobServiceClient and any credential, closed by `aclose`."""

    shared = True

    def __init__(
        self,
        client: BlobServiceClient,
        container: str,
        *,
        source: str,
        credential: AsyncTokenCredential | None = None,
        operation_timeout: float = OPERATION_TIMEOUT,
        cool_down: float = COOL_DOWN_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._container = container
        self._source = source
        self._credential = credential
        self._operation_timeout = operation_timeout
        self._cool_down = cool_down
        self._clock = clock
        self._unreachable_until = 0.0
        self._heard = float("-inf")
        """On `clock`: when a call last ended, answered or not."""
        self._probing: asyncio.Task[None] | None = None
        self._status = UNKNOWN
        self._detail = "not contacted yet"

    @classmethod
    def from_connection_string(
        cls, connection_string: str, container: str, *, source: str, proxy: bool = False, **options: Any
    ) -> BlobStore:
        """A store on the account a connection string names (raises ValueError when it names none)."""
        client = BlobServiceClient.from_connection_string(connection_string, **client_options(proxy=proxy))
        return cls(client, container, source=source, **options)

    @property
    def container(self) -> str:
        return self._container

    def _blob(self, name: str) -> BlobClient:
        return self._client.get_blob_client(self._container, name)

    async def read(self, name: str) -> StoredCopy | None:
        blob = self._blob(name)

        async def download() -> StoredCopy | None:
            try:
                downloader = await blob.download_blob()
            except ResourceNotFoundError:
                return None
            properties = downloader.properties
            etag = str(properties.etag)
            if downloader.size > MAX_INDEX_BYTES:
                log.info("index cache %s is larger than any index; treating it as corrupt", blob.blob_name)
                return StoredCopy(b"", EPOCH, version=etag)
            # The first answer holds the whole blob (at most MAX_INDEX_BYTES, `client_options`), and `chunks` hands it
            # over as it is: `readall` copies it into a stream first (a cold instance at eight times the sample corpus
            # reads about 140 MB; the copy held the GIL for about 70 ms of its first search).
            payload = b"".join([chunk async for chunk in downloader.chunks()])
            stat = _stat(etag, properties.metadata or {})
            return StoredCopy(payload, stat.fetched_at, stat.origin_etag, stat.origin_last_modified, etag, stat.entries)

        return await self._guarded("read", download)

    async def stat(self, name: str) -> CopyStat | None:
        blob = self._blob(name)

        async def properties() -> CopyStat | None:
            try:
                found = await blob.get_blob_properties()
            except ResourceNotFoundError:
                return None
            return _stat(str(found.etag), found.metadata or {})

        return await self._guarded("stat", properties)

    async def write(self, name: str, entry: StoredCopy, *, expected_version: str | None) -> str | None:
        blob = self._blob(name)
        metadata = _metadata(entry.fetched_at, entry.origin_etag, entry.origin_last_modified, entry.entries)
        metadata["sha256"] = entry.digest
        # No expected copy: overwrite=False sends If-None-Match: *, so only the first copy is ever created.
        conditions: dict[str, Any] = (
            {"overwrite": False}
            if expected_version is None
            else {"overwrite": True, "etag": expected_version, "match_condition": MatchConditions.IfNotModified}
        )

        async def upload() -> str | None:
            for _ in range(2):
                try:
                    result = await blob.upload_blob(
                        entry.payload,
                        metadata=metadata,
                        content_settings=ContentSettings(content_type="application/json"),
                        **conditions,
                    )
                    return str(result["etag"])
                except (ResourceExistsError, ResourceModifiedError):
                    return None
                except ResourceNotFoundError as exc:
                    if getattr(exc, "error_code", None) != "ContainerNotFound":
                        return None  # the expected copy was deleted meanwhile: a race, like the others
                    await self._create_container()
            return None

        return await self._guarded("write", upload)

    async def touch(self, name: str, fetched_at: datetime, *, expected_version: str) -> str | None:
        blob = self._blob(name)

        async def set_metadata() -> str | None:
            try:
                found = await blob.get_blob_properties(
                    etag=expected_version, match_condition=MatchConditions.IfNotModified
                )
                metadata = dict(found.metadata or {})
                metadata["fetchedat"] = fetched_at.astimezone(UTC).isoformat()
                result = await blob.set_blob_metadata(
                    metadata, etag=expected_version, match_condition=MatchConditions.IfNotModified
                )
            except (ResourceModifiedError, ResourceNotFoundError):
                return None
            return str(result["etag"])

        return await self._guarded("touch", set_metadata)

    async def _create_container(self) -> None:
        try:
            await self._client.create_container(self._container)
            log.info("created the index cache container %s", self._container)
        except ResourceExistsError:
            pass

    async def _guarded(self, operation: str, call: Callable[[], Awaitable[T]]) -> T:
        """Run one storage call with a deadline; record reachability; translate failures to StoreError."""
        if self._clock() < self._unreachable_until:
            raise StoreError(f"index cache storage unreachable; not retried until the cool-down ends ({operation})")
        try:
            result = await asyncio.wait_for(call(), self._operation_timeout)
        except (AzureError, OSError, TimeoutError) as exc:
            self._heard = self._clock()
            self._unreachable_until = self._heard + self._cool_down
            self._record(*_diagnose(exc))
            raise StoreError(f"index cache {operation} failed: {type(exc).__name__}") from exc
        self._heard = self._clock()
        self._record(OK, "shared by every instance")
        return result

    def probe(self) -> None:
        """Ask storage in the background whether it still answers, when nothing was heard from it for PROBE_AFTER
        seconds and it is not cooling down; health calls it, so a stalled account shows within seconds."""
        now = self._clock()
        if now - self._heard < PROBE_AFTER or now < self._unreachable_until:
            return
        if self._probing is not None and not self._probing.done():
            return
        try:
            self._probing = asyncio.get_running_loop().create_task(self._probe(), name="index cache probe")
        except RuntimeError:  # no loop (a synchronous caller): the next call tells
            return

    async def _probe(self) -> None:
        container = self._client.get_container_client(self._container)

        async def properties() -> None:
            with contextlib.suppress(ResourceNotFoundError):  # no container yet is an answer too
                await container.get_container_properties()

        with contextlib.suppress(StoreError):
            await self._guarded("probe", properties)

    def _record(self, status: StoreStatus, detail: str) -> None:
        if status != self._status:
            level = logging.INFO if status == OK else logging.WARNING
            log.log(level, "index cache storage is %s: %s", status, detail)
        self._status, self._detail = status, detail

    def describe(self) -> StoreHealth:
        return StoreHealth(
            kind="blob",
            shared=True,
            status=self._status,
            detail=self._detail,
            source=self._source,
            account=self._client.account_name or urlsplit(self._client.url).netloc,
            container=self._container,
        )

    async def aclose(self) -> None:
        if self._probing is not None:
            self._probing.cancel()
            await asyncio.gather(self._probing, return_exceptions=True)
        await self._client.close()
        if self._credential is not None:
            await self._credential.close()


def _diagnose(exc: BaseException) -> tuple[StoreStatus, str]:
    """Health's status and detail for a failed storage call; the origin answers meanwhile."""
    if isinstance(exc, ClientAuthenticationError):
        return ERROR, f"storage refused the credentials ({type(exc).__name__}); serving from the origin"
    if isinstance(exc, HttpResponseError):
        code = getattr(exc, "error_code", None) or "no code"
        return ERROR, f"storage answered HTTP {exc.status_code} ({code}); serving from the origin"
    return UNREACHABLE, f"storage could not be reached ({type(exc).__name__}); serving from the origin"


def _metadata(fetched_at: datetime, etag: str | None, last_modified: str | None, entries: int | None) -> dict[str, str]:
    metadata = {"fetchedat": fetched_at.astimezone(UTC).isoformat()}
    if (value := _ascii(etag)) is not None:
        metadata["originetag"] = value
    if (value := _ascii(last_modified)) is not None:
        metadata["originlastmodified"] = value
    if entries is not None:
        metadata["entries"] = str(entries)
    return metadata


def _ascii(value: str | None) -> str | None:
    """Metadata travels as HTTP headers: a value that is not printable ASCII is left out rather than mangled."""
    if value is None or not value.isascii() or not value.isprintable():
        return None
    return value


def _stat(etag: str, metadata: dict[str, str]) -> CopyStat:
    """Properties of a stored copy; missing or unreadable metadata makes it look old, never fresh."""
    try:
        fetched_at = datetime.fromisoformat(metadata["fetchedat"])
        if fetched_at.tzinfo is None:
            fetched_at = fetched_at.replace(tzinfo=UTC)
    except (KeyError, ValueError):
        fetched_at = EPOCH
    entries = metadata.get("entries", "")
    return CopyStat(
        version=etag,
        fetched_at=fetched_at,
        digest=metadata.get("sha256"),
        origin_etag=metadata.get("originetag"),
        origin_last_modified=metadata.get("originlastmodified"),
        entries=int(entries) if entries.isdigit() else None,
    )


def client_options(*, proxy: bool) -> dict[str, Any]:
    """The storage client's options. The SDK's defaults (20 s connect, 60 s read, ten retries from a 15 s back-off)
    would hold a request for minutes when storage is down; the origin is the fallback, so fail fast and let it answer:
    a connection or a silence longer than two seconds fails the call, and a silence is not retried (one retry for
    whatever else may be passing).

    The SDK's aiohttp session reads the environment (a netrc lookup and the proxy variables, two worker-thread hops
    per request: about 0.3 s of a cold instance's start at eight times the sample corpus) only when a `proxy` is
    configured (`DocumentationSettings.proxy_configured`); storage requests carry their own authorization.
    """
    return {
        "connection_timeout": CONNECT_TIMEOUT,
        "read_timeout": ANSWER_TIMEOUT,
        "retry_policy": LinearRetry(backoff=1, random_jitter_range=1, retry_total=1, retry_connect=0, retry_read=0),
        "use_env_settings": proxy,
        "max_single_get_size": MAX_INDEX_BYTES,
        "max_chunk_get_size": MAX_INDEX_BYTES,
    }
