"""The provider chain: ordered providers, first non-empty answer wins, attribution, the result cap."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Protocol

from shared.blob_cache import open_store
from shared.cache import IndexStore
from shared.errors import InvalidRequestError, ResolutionError
from shared.fetch import OriginClient
from shared.mkdocs.provider import MkDocsProvider
from shared.mkdocs.sites import SiteRegistry
from shared.models import MAX_RESULTS, NO_PROVIDER, Document, Reason, Resolution, SearchResponse, SearchResult
from shared.settings import DocumentationSettings
from shared.telemetry import FETCH_PROVIDER, SEARCH_PROVIDER, attribute, query_shape
from shared.validation import check_limit, check_location, check_query

log = logging.getLogger(__name__)


class DocumentationProvider(Protocol):
    """What the chain needs from a provider. Search-only providers set `supports_fetch = False`."""

    name: str
    order: int
    supports_fetch: bool

    async def search(self, query: str, *, limit: int, site: str | None = None) -> list[SearchResult]: ...

    async def get(self, location: str) -> Document: ...

    def health(self) -> dict[str, dict[str, object]]: ...


class DocumentationService:
    """Runs search and get through the providers in ascending `order`."""

    def __init__(
        self, settings: DocumentationSettings, providers: Sequence[DocumentationProvider], store: IndexStore
    ) -> None:
        self.settings = settings
        self.providers = sorted(providers, key=lambda provider: provider.order)
        self.store = store

    async def search(self, query: str, *, limit: int = 10, site: str | None = None) -> SearchResponse:
        query, limit = check_query(query), check_limit(limit)
        effective = min(limit, MAX_RESULTS)
        for provider in self.providers:
            try:
                results = await provider.search(query, limit=effective, site=site)
            except (asyncio.CancelledError, InvalidRequestError):
                raise
            except Exception as exc:
                log.warning("search provider %s failed (%s); trying the next", provider.name, type(exc).__name__)
                continue
            if results:
                attribute(SEARCH_PROVIDER, provider.name)
                return SearchResponse(query=query, provider=provider.name, results=results[:effective])
        attribute(SEARCH_PROVIDER, NO_PROVIDER)
        shape = query_shape(query)
        log.info("search matched nothing (query length %d, %d terms)", shape["length"], shape["terms"])
        return SearchResponse(query=query, provider=NO_PROVIDER, results=[])

    async def get(self, location: str | None) -> Document:
        """The page at `location` as the first fetch-capable provider serves it; raises ResolutionError otherwise."""
        path = check_location(location, self.settings.origin)
        requested = location or ""
        miss: ResolutionError | None = None
        for provider in self.providers:
            if not provider.supports_fetch:
                continue
            try:
                document = await provider.get(path)
            except (asyncio.CancelledError, InvalidRequestError):
                raise
            except ResolutionError as exc:
                miss = miss or exc
                continue
            except Exception as exc:
                log.warning("fetch provider %s failed (%s); trying the next", provider.name, type(exc).__name__)
                continue
            attribute(FETCH_PROVIDER, provider.name)
            return document.model_copy(update={"requested_location": requested})
        attribute(FETCH_PROVIDER, NO_PROVIDER)
        resolution = (
            miss.resolution
            if miss is not None
            else Resolution(requested_location=requested, reason=Reason.NOT_FOUND, detail="no provider could fetch it")
        ).model_copy(update={"requested_location": requested})
        log.info("fetch found nothing: %s (location length %d)", resolution.reason.value, len(requested))
        raise ResolutionError(resolution)

    def health(self) -> dict[str, object]:
        """Provider and cache state, without loading anything."""
        return {
            "providers": {provider.name: provider.health() for provider in self.providers},
            "cache": self.store.describe(),
        }


@asynccontextmanager
async def create_service(
    settings: DocumentationSettings, *, store: IndexStore | None = None
) -> AsyncIterator[DocumentationService]:
    """The service with its providers and clients, closed on exit; the store is the configured one unless given."""
    client = OriginClient(settings.origin)
    store = store if store is not None else open_store(settings)
    registry = SiteRegistry(settings, client, store)
    try:
        yield DocumentationService(settings, [MkDocsProvider(settings, client, registry)], store)
    finally:
        await registry.aclose()  # embedding work may still write to the store
        await client.aclose()
        await store.aclose()
