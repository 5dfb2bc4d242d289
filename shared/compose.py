"""The composition root: everything the service needs, built from settings and closed in reverse order.

Two lifetimes:

- Process-wide resources are built once, without I/O, by the host when it starts (`process_embedding`): the
  Functions host builds them at import, because its timer may fire before the first HTTP request runs the ASGI
  lifespan; uvicorn's host builds them with the app.
- `compose` opens the per-app parts inside one AsyncExitStack, which the ASGI lifespan (or a CLI command) holds:
  the origin client, the cache store, each configured provider, and the chain over them.

Providers are registered here and nowhere else: the chain (`shared.service`) never names one. Tests pass their
own providers, encoders and stores through the same functions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from shared import memory
from shared.cache import CopyStore, StoreHealth, open_store
from shared.embedding import MINILM, EmbeddingModel, EncoderHealth, EncoderState, ModelRecord, load_bulk
from shared.fetch import OriginClient
from shared.graph_sharing import fetch_graph, share_graph
from shared.graphs import LOCAL_GRAPHS, GraphCache
from shared.insights.recorder import InsightsHealth, Recorder
from shared.insights.store import open_usage_store
from shared.providers import ai_search, remote
from shared.providers.base import DocumentationProvider, Report, Status, absent, roll_up
from shared.providers.mkdocs import (
    MkDocsProvider,
    PageCache,
    Refresher,
    SiteRegistry,
    blob_events,
    configured,
    published_sites,
    warming,
)
from shared.service import DocumentationService, InChain
from shared.settings import DocumentationSettings, unresolved
from shared.usage import NO_USAGE

log = logging.getLogger(__name__)


MIN_SEMANTIC_MB = 1024
"""Below this much memory an instance ranks lexically: the model, every site's vectors and the request working set
measured 326 MB resident after 2,000 requests on the sample corpus and 452 MB at peak (tools/load-latest.txt), so
a 512 MB Flex Consumption instance would be killed at the first burst or a larger corpus."""


def checked(settings: DocumentationSettings) -> DocumentationSettings:
    """The settings, once each provider has checked what only it parses (the MkDocs page-kind rules,
    `Search__PathWeights`): a bad value stops start-up with its key, like any other setting's. Raises
    ConfigurationError."""
    configured(settings.search.path_weights, tuple(settings.sites))
    return settings


def semantic_refused(settings: DocumentationSettings, limit_mb: int | None = None) -> str | None:
    """Why this process ranks lexically although `Search__Semantic` is on, or None when it may embed."""
    limit = memory.limit_mb() if limit_mb is None else limit_mb
    if not settings.search.semantic or limit is None or limit >= MIN_SEMANTIC_MB:
        return None
    return f"the instance has {limit} MB of memory, less than the {MIN_SEMANTIC_MB} MB semantic matching needs"


def process_embedding(settings: DocumentationSettings) -> EmbeddingModel | None:
    """The process's embedding model when semantic matching is on and the instance has the memory for it (it loads
    on first use, not here)."""
    refused = semantic_refused(settings)
    if refused is not None:
        log.warning("semantic matching is off: %s (Search__Semantic=true is not honoured)", refused)
        return None
    return EmbeddingModel(load_bulk=load_bulk) if settings.search.semantic else None


class UnresolvedSecrets(Report):
    """Secret settings whose value is still a Key Vault reference: what each guards stays off."""

    keys: tuple[str, ...]
    detail: str = (
        "Key Vault references the platform could not resolve: what they guard stays off "
        "(docs/deployment.md says how to make the app read them again)"
    )


class Health(Report):
    """The service's health: its status, the providers in chain order, the cache store and the embedding model."""

    status: Status
    providers: dict[str, InChain]
    cache: StoreHealth
    embedding: EncoderHealth
    unresolved_secrets: UnresolvedSecrets | None = absent()
    insights: InsightsHealth | None = absent()
    """With usage insights on: events queued, written and dropped (never a question)."""


@dataclass(frozen=True, slots=True)
class Composition:
    """The composed service and the shared parts health reports on."""

    settings: DocumentationSettings
    service: DocumentationService
    store: CopyStore
    embedding: EmbeddingModel | None
    refresher: Refresher
    """Publish refreshes of the MkDocs sites' cached indexes (the hook and the queue)."""
    client: OriginClient
    """The one origin session (the warm-up timer uses it too, rather than opening its own)."""
    insights: Recorder | None = None
    """Usage insights (`Insights__Enabled`): the service's usage sink, the report's store."""

    def published(self, message: bytes | str) -> list[str]:
        """The sites whose index an Event Grid `BlobCreated` queue message reports written (none for anything else);
        raises ValueError when the message is not JSON."""
        blobs = blob_events(message)
        return sorted({site for blob in blobs for site in published_sites(self.settings, blob)})

    async def purge_usage(self) -> int:
        """Delete the usage events past `Insights__RetentionDays` and earlier periods' pseudonym keys (the warm-up's
        last step); how many blobs. A store that does not answer is logged, and tried again next warm-up."""
        if self.insights is None:
            return 0
        try:
            deleted = await self.insights.purge(self.settings.insights.retention_days)
        except Exception as exc:
            log.warning("usage insights: deleting what is past retention failed (%s)", type(exc).__name__)
            return 0
        log.info("usage insights: %d blobs past retention deleted", deleted)
        return deleted

    def health(self, hidden: frozenset[str] = frozenset()) -> Health:
        """Overall status, providers in chain order, the cache store and the embedding model, without waiting on I/O.

        The status rolls up the providers' (`roll_up`): `unavailable` when one is and none is `ok` (nothing can be
        searched: MkDocs down and AI Search or the remote failing too), `degraded` when any is not `ok`, the cache
        store is failing (every instance then loads from the origin) or a secret is unresolved, else `ok`. The
        `hidden` sites (above the asking caller's ceiling) are not named.
        """
        providers = {
            name: entry.model_copy(update={"health": entry.health.without(hidden)})
            for name, entry in self.service.health().items()
        }
        self.store.probe()  # in the background: a stalled store shows in the next health a few seconds on
        cache = self.store.describe()
        pending = self.settings.unresolved_secrets()
        statuses = [entry.health.status for entry in providers.values()]
        statuses += [Status.DEGRADED] if cache.status.failing else []
        statuses += [Status.DEGRADED] if pending else []
        return Health(
            status=roll_up(statuses),
            providers=providers,
            cache=cache,
            embedding=self.embedding.describe() if self.embedding is not None else _off(self.settings),
            unresolved_secrets=UnresolvedSecrets(keys=pending) if pending else None,
            insights=self.insights.health() if self.insights is not None else None,
        )


def recorder_of(settings: DocumentationSettings) -> Recorder | None:
    """The usage recorder when `Insights__Enabled` is on and a storage account is configured; else None."""
    if not settings.insights.enabled:
        return None
    store = open_usage_store(settings)
    if store is None:
        return None
    return Recorder(store, retention_days=settings.insights.retention_days)


def _off(settings: DocumentationSettings) -> EncoderHealth:
    return EncoderHealth(state=EncoderState.OFF, reason=semantic_refused(settings) or None)


def site_registry(
    settings: DocumentationSettings,
    client: OriginClient,
    store: CopyStore,
    *,
    embedding: EmbeddingModel | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> SiteRegistry:
    """The process's sites, from the settings: what the registry takes of them, and nothing else."""
    return SiteRegistry(
        client,
        store,
        policy=settings.index_policy,
        timings=settings.site_timings,
        weights=configured(settings.search.path_weights, tuple(settings.sites)),
        embedding=embedding,
        clock=clock,
    )


def mkdocs_provider(
    settings: DocumentationSettings, client: OriginClient, registry: SiteRegistry, *, pages: PageCache | None = None
) -> MkDocsProvider:
    """The MkDocs provider over the registry's sites, from the settings: the few values it reads."""
    return MkDocsProvider(
        client,
        registry,
        sites=settings.site_map,
        raw_pattern=settings.raw_markdown_url_pattern,
        version_defaults=settings.version_defaults,
        min_score=settings.search.min_score,
        site_wait=settings.search.site_wait_seconds,
        check_interval=settings.cache.check_interval_seconds,
        pages=pages,
    )


def refresher_of(
    settings: DocumentationSettings,
    client: OriginClient,
    store: CopyStore,
    registry: SiteRegistry,
    *,
    embedding: EmbeddingModel | None = None,
    **timing: Any,
) -> Refresher:
    """The publish refreshes of this app's sites: the warm-up's steps bound to what it serves from (`timing`: the
    refresher's clock, sleep and rechecks, for tests and tools)."""
    return Refresher(
        store,
        registry,
        sites=settings.sites,
        site_wait=settings.search.site_wait_seconds,
        warming=warming(settings, client, store, embedding),
        **timing,
    )


@asynccontextmanager
async def compose(
    settings: DocumentationSettings,
    *,
    embedding: EmbeddingModel | None = None,
    store: CopyStore | None = None,
    providers: Sequence[DocumentationProvider] = (),
) -> AsyncIterator[Composition]:
    """The service over the configured providers plus `providers`; everything opened here is closed on exit.

    `embedding` is the process's model (None: lexical only). A `store` passed in stays the caller's to close.
    """
    memory.tune()  # before the worker threads that load and rank start
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(OriginClient(settings.origin))
        if store is None:
            store = open_store(settings)
            stack.push_async_callback(store.aclose)
        registered: list[DocumentationProvider] = []

        def register(provider: DocumentationProvider) -> None:
            # Closed before the store and client (LIFO), as soon as it exists: a later provider failing to build
            # still closes this one.
            stack.push_async_callback(provider.aclose)
            registered.append(provider)

        pending = settings.unresolved_secrets()
        registry = site_registry(settings, client, store, embedding=embedding)
        mkdocs = mkdocs_provider(settings, client, registry)
        register(mkdocs)
        refresher = refresher_of(settings, client, store, registry, embedding=embedding)
        stack.push_async_callback(refresher.aclose)  # before the provider closes its registry (LIFO)
        for given in providers:
            register(given)
        search = settings.ai_search
        for key in pending:
            log.warning("%s is an unresolved Key Vault reference: what it guards stays off until it resolves", key)
        if search is not None and search.endpoint and not unresolved(search.api_key):
            credential = ai_search.credential(settings)
            try:
                searcher = ai_search.AiSearchProvider(search, sites=settings.sites, credential=credential)
            except BaseException:
                await _close_quietly(credential)  # no provider owns it yet
                raise
            register(searcher)  # the provider owns the credential from here, and is its one closer
        configured_remote = settings.remote
        remote_pending = configured_remote is not None and (
            unresolved(configured_remote.token) or unresolved(configured_remote.functions_key)
        )
        if settings.remote is not None and settings.remote.endpoint and not remote_pending:
            token_source = remote.credential(settings)  # None with a static token
            try:
                forwarder = remote.RemoteProvider(settings.remote, sites=settings.sites, credential=token_source)
            except BaseException:
                await _close_quietly(token_source)  # no provider owns it yet
                raise
            register(forwarder)  # the provider owns the credential from here, and is its one closer
        if any(provider.order < mkdocs.order for provider in registered if provider is not mkdocs):
            # A provider answers searches ahead of MkDocs: MkDocs builds its search structures (and embeds) only
            # for searches that fall through to it; resolution and get need the index alone.
            registry.defer_search()
        elif embedding is not None:
            # The query encoder loads while the first sites do, not after them: the first search ranks by meaning
            # without waiting for it. No request waits on this; a failure is remembered and reported by health.
            if embedding.model_id == MINILM.model_id:  # begun here, so nothing that needs it first begins another
                embedding.start_loading(fetch_graph(store, MINILM))
            preload = asyncio.create_task(_preload(embedding, store), name="load the query encoder")
            stack.push_async_callback(_settle, preload)
        insights = recorder_of(settings)
        if insights is not None:
            stack.push_async_callback(insights.aclose)
        service = DocumentationService(
            registered, origin=settings.origin, usage=insights or NO_USAGE, audiences=settings.site_audiences
        )
        yield Composition(settings, service, store, embedding, refresher, client, insights)


async def _preload(
    embedding: EmbeddingModel, store: CopyStore, record: ModelRecord = MINILM, graphs: GraphCache = LOCAL_GRAPHS
) -> None:
    """Load the query encoder, from the rewritten graph another instance shared when this one has none, and share
    it when the store has none: only the first instance pays for the rewrite (`shared.graph_sharing`). Whatever
    needs the model meanwhile (a site's embedding job, a search) waits for this very load (`start_loading`) rather
    than beginning one that would rewrite the graph itself. `graphs`: the local cache the encoder loads from."""
    ours = embedding.model_id == record.model_id
    loading = embedding.start_loading(fetch_graph(store, record, graphs) if ours else None)
    with contextlib.suppress(Exception):
        await asyncio.shield(loading)
    if ours:
        await share_graph(store, record, graphs)


async def _settle(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _close_quietly(credential: object) -> None:
    """Close an async credential no provider took over (its constructor raised), whatever closing it raises."""
    close = getattr(credential, "close", None)
    if close is not None:
        with contextlib.suppress(Exception):
            result = close()
            if hasattr(result, "__await__"):
                await result
