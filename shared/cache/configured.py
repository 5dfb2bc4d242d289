"""Choosing the cache store from settings: the cache's own account, the host's storage, or memory only."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from pydantic import SecretStr

from shared.cache.blob import BlobStore, client_options
from shared.cache.memory import MemoryStore
from shared.cache.store import CopyStore, StoreStatus
from shared.identity import credential
from shared.settings import PREFIX, DocumentationSettings

log = logging.getLogger(__name__)


def open_store(settings: DocumentationSettings) -> CopyStore:
    """The configured store: the cache's own account, else the Functions host's storage, else memory only.

    No I/O happens here; the container is created on the first write that finds it missing.
    """
    chosen = account(settings)
    if chosen is None:
        return MemoryStore()
    source, connection_string, service_uri = chosen
    if connection_string:
        try:
            return BlobStore.from_connection_string(
                connection_string, settings.cache.container, source=source, proxy=settings.proxy_configured
            )
        except ValueError as exc:
            return _unusable(source, type(exc).__name__)
    return _identity_store(settings, source, service_uri or "")


def account(settings: DocumentationSettings) -> tuple[str, str | None, str | None] | None:
    """The storage account the cache (and what is kept beside it: usage insights) lives in, as the setting that
    names it and its connection string or blob service URI: the cache's own, else the Functions host's storage;
    None when nothing names one."""
    cache = settings.cache
    candidates: list[tuple[str, str | None, str | None]] = [
        (PREFIX + "Cache__ConnectionString", _secret(cache.connection_string), None),
        (PREFIX + "Cache__BlobServiceUri", None, cache.blob_service_uri),
        ("AzureWebJobsStorage", _secret(settings.host_storage), None),
        ("AzureWebJobsStorage__blobServiceUri", None, settings.host_storage_blob_service_uri),
    ]
    for source, connection_string, service_uri in candidates:
        if connection_string:
            return source, connection_string, None
        if service_uri and service_uri.strip():
            return source, None, service_uri.strip()
    return None


def _identity_store(settings: DocumentationSettings, source: str, service_uri: str) -> CopyStore:
    from azure.storage.blob.aio import BlobServiceClient

    parts = urlsplit(service_uri)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return _unusable(source, "not an absolute URL")
    token = credential(settings)
    client = BlobServiceClient(service_uri, credential=token, **client_options(proxy=settings.proxy_configured))
    return BlobStore(client, settings.cache.container, source=source, credential=token)


def _unusable(source: str, reason: str) -> CopyStore:
    log.warning("%s is not a usable storage setting (%s); the index cache lives in memory only", source, reason)
    return MemoryStore(
        status=StoreStatus.DEGRADED, detail=f"{source} is not usable ({reason}); cache lives in this process"
    )


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value().strip() if value is not None else None
