"""The `ai_search` provider: semantic search over an Azure AI Search index with the SDK's async client; never fetches.

Options are read once, at construction (a change takes effect on restart, as the spec says). Each search is one
`POST /indexes('NAME')/docs/search.post.search` with the query type `semantic`, the configured semantic
configuration, `top` = the limit (twice it without a configured filter, so `.md`/`.html` twins dropped still leave
the limit), and a `$filter` only when there is one to send: a non-whitespace `SearchFilter`,
and for a search within one `site` an equality on `SiteField`, both together when both apply. Without `SiteField`
a search for one site is declined, so the chain asks the next provider; so is the listing query `*`.

Every call is bounded by `TimeoutSeconds` or the request's remaining deadline, whichever is sooner, both around
the call and as the SDK's own connection and read timeouts, and is never retried: the next provider is the retry.
Any failure raises `AiSearchError` (see `errors`), is remembered for health, and is logged without the query.

The SDK is imported when a provider is built, not when this module is: hosts without AI Search never load it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from shared.deadline import capped
from shared.errors import ConfigurationError, ProviderDeclinedError
from shared.identity import credential as identity_credential
from shared.models import Document, Found, SearchKind, SiteAnswer, SiteSearched, VersionSet
from shared.providers.ai_search.errors import translate
from shared.providers.ai_search.mapping import PROVIDER, Fields, Mapper
from shared.providers.base import Capabilities, Instant, LastCalls, LastError, ProviderHealth, Status, absent
from shared.requests import ReadRequest, SearchRequest
from shared.settings import PREFIX, AiSearchSettings, DocumentationSettings
from shared.telemetry import query_shape

if TYPE_CHECKING:
    from azure.core.credentials import AzureKeyCredential
    from azure.core.credentials_async import AsyncTokenCredential

    Credential = AzureKeyCredential | AsyncTokenCredential

log = logging.getLogger(__name__)

MAX_TOP = 50
"""The most hits one search asks for: the chain returns at most 25 results."""

SEMANTIC = "semantic"
LIST_ALL = "*"
"""The listing query: semantic ranking has nothing to rank it by, so it is declined."""


def credential(settings: DocumentationSettings) -> Credential:
    """The API key when one is configured (local development only), else the app's managed identity."""
    options = settings.ai_search
    if options is not None and options.api_key is not None:
        from azure.core.credentials import AzureKeyCredential

        return AzureKeyCredential(options.api_key.get_secret_value())
    return identity_credential(settings)


class AiSearchHealth(ProviderHealth):
    """Configuration (never a key) and the outcome of the latest search."""

    endpoint: str
    index: str
    semantic_configuration: str
    filter: bool
    site_field: str | None
    authentication: str
    timeout_seconds: float
    last_success_at: Instant | None
    last_error: LastError | None = absent()


def odata_string(value: str) -> str:
    """`value` as an OData string literal: quoted, each single quote doubled."""
    return "'" + value.replace("'", "''") + "'"


class AiSearchProvider:
    """Search-only provider over one Azure AI Search index; it owns (and closes) the client and the credential."""

    name = PROVIDER
    order = 0

    def __init__(self, options: AiSearchSettings, *, sites: Sequence[str], credential: Credential) -> None:
        if not options.endpoint:
            raise ConfigurationError(f"{PREFIX}AiSearch__Endpoint", "must be set to register the AI Search provider")
        from azure.core.credentials import AzureKeyCredential
        from azure.search.documents.aio import SearchClient

        self.sites = tuple(sites)
        """Every configured site: a search for one is filtered on `SiteField`, or declined when it is unset."""
        self._options = options
        self._fields = Fields(
            url=options.url_field,
            content=options.content_field,
            title=options.title_field,
            description=options.description_field,
            version=options.version_field,
            language=options.language_field,
        )
        self._mapper = Mapper(self._fields, options.platform_docs_base_url, options.mkdocs_site_prefix)
        self._filter = options.search_filter.strip()
        self._credential = credential
        self._authentication = "api-key" if isinstance(credential, AzureKeyCredential) else "entra-id"
        self._client = SearchClient(options.endpoint, options.index_name, credential, retry_total=0)
        self._calls = LastCalls()

    @property
    def capabilities(self) -> Capabilities:
        """Search only. A search naming a version is filtered on `VersionField` when the index has one, and a code
        search answered when the index marks its code chunks (`CodeFilter`); without them, the chain passes this
        provider over for those."""
        return Capabilities(versions=bool(self._options.version_field), code=bool(self._options.code_filter))

    async def search(self, request: SearchRequest) -> Found:
        """Results from the index, with every site in scope `searched` (the service cannot say when it indexed)."""
        query, limit, site, version = request.query, request.limit, request.site, request.version
        kind, language = request.kind, request.language
        if query.strip() == LIST_ALL:
            raise ProviderDeclinedError("listing every page is left to a provider that knows the sites' pages")
        code = kind is SearchKind.CODE
        request_filter = self._request_filter(site, version)
        if code:
            request_filter = self._code_filter(request_filter, language)
        seconds = capped(self._options.timeout_seconds)
        shape = query_shape(query)
        log.debug(
            "ai_search search (query length %d, %d terms, limit %d, filtered %s)",
            shape["length"],
            shape["terms"],
            limit,
            request_filter is not None,
        )
        started = time.monotonic()
        try:
            if seconds <= 0:
                raise TimeoutError
            async with asyncio.timeout(seconds):
                hits = await self._hits(query, self._fetched(limit), request_filter, seconds)
            results = self._mapper.results(hits, query, limit, code=code)
        except Exception as exc:
            error = translate(exc)
            self._calls.failed(error)
            log.warning(
                "ai_search search failed: %s (%s) after %.0f ms",
                error.kind,
                error.status or type(exc).__name__,
                (time.monotonic() - started) * 1000,
            )
            raise error from exc
        self._calls.succeeded()
        log.debug("ai_search answered %d hits, %d results", len(hits), len(results))
        scope = (site,) if site is not None else self.sites
        return Found(results, sites={name: SiteSearched(state=SiteAnswer.SEARCHED) for name in scope})

    async def _hits(
        self, query: str, limit: int, request_filter: str | None, seconds: float
    ) -> list[dict[str, object]]:
        pages = await self._client.search(
            search_text=query,
            query_type=SEMANTIC,
            semantic_configuration_name=self._options.semantic_configuration_name,
            filter=request_filter,
            top=limit,
            select=self._fields.selected(),
            connection_timeout=seconds,
            read_timeout=seconds,
        )
        hits: list[dict[str, object]] = []
        async for hit in pages:
            hits.append(hit)
            if len(hits) >= limit:  # never ask for a next page
                break
        return hits

    def _fetched(self, limit: int) -> int:
        """How many hits to ask for: the limit with a configured filter (the spec's `format eq '.html'` keeps one
        twin of each page); without one, twice it (at most `MAX_TOP`), so dropping the `.md` twin of each page
        still leaves `limit` results."""
        return limit if self._filter else min(2 * limit, MAX_TOP)

    def _request_filter(self, site: str | None, version: str | None = None) -> str | None:
        """The `$filter` to send: the configured one, the site's and the version's, whichever apply; None sends none."""
        if version is not None and self._options.version_field:
            on_version = f"{self._options.version_field} eq {odata_string(version)}"
            rest = self._request_filter(site)
            return f"({rest}) and {on_version}" if rest else on_version
        if site is None:
            return self._filter or None
        if not self._options.site_field:
            raise ProviderDeclinedError("AI Search has no SiteField configured to search one site")
        on_site = f"{self._options.site_field} eq {odata_string(site)}"
        return f"({self._filter}) and {on_site}" if self._filter else on_site

    def _code_filter(self, request_filter: str | None, language: str | None) -> str:
        """`request_filter` narrowed to the code chunks (`CodeFilter`), and to `language` on `LanguageField`; declined
        when the index marks no code, or names no language and one is asked for."""
        marked = (self._options.code_filter or "").strip()
        if not marked:
            raise ProviderDeclinedError("AI Search has no CodeFilter configured to find code chunks")
        parts = [f"({request_filter})"] if request_filter else []
        parts.append(f"({marked})")
        if language is not None:
            if not self._options.language_field:
                raise ProviderDeclinedError("AI Search has no LanguageField configured to filter code by language")
            parts.append(f"{self._options.language_field} eq {odata_string(language)}")
        return " and ".join(parts)

    async def get(self, request: ReadRequest) -> Document:
        raise ProviderDeclinedError("AI Search is search-only: pages are fetched by another provider")

    async def versions(self, site: str) -> VersionSet | None:
        raise ProviderDeclinedError("AI Search does not list versions")

    def health(self) -> AiSearchHealth:
        """Configuration (never a key) and the outcome of the latest search: `degraded` while the latest failed."""
        return AiSearchHealth(
            status=Status.DEGRADED if self._calls.failing else Status.OK,
            endpoint=urlsplit(self._options.endpoint or "").netloc,
            index=self._options.index_name,
            semantic_configuration=self._options.semantic_configuration_name,
            filter=bool(self._filter),
            site_field=self._options.site_field,
            authentication=self._authentication,
            timeout_seconds=self._options.timeout_seconds,
            last_success_at=self._calls.succeeded_at,
            last_error=self._calls.error,
        )

    async def aclose(self) -> None:
        try:
            await self._client.close()
        finally:
            close = getattr(self._credential, "close", None)
            if close is not None:
                result = close()
                if inspect.isawaitable(result):
                    await result
