"""The only reader of the environment: app settings parsed and validated once, at start-up.

Keys follow the spec's `Forge:Documentation:<Key>` in app-setting form (`:` becomes `__`), for example
`Forge__Documentation__Origin`. Matching is case-insensitive, like the Functions host's configuration.
Lists accept a comma-separated value or the indexed form `Key__0`, `Key__1`, ...

`load_settings(environ)` reads `environ` and nothing else; only `load_settings()` reads the process environment.
pydantic-settings does the reading (nested keys, case, lists left as text for the validators below); what is ours
is which names are read, what an empty value means, and that the indexed form of a list wins.

A setting is one field: its docstring's first paragraph is what an operator reads, in the sample settings and the
Bicep that `tools/settings_artifacts.py` generates from this model (`examples` gives a sample value other than the
default); the rest of the docstring says why.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

from shared.errors import ConfigurationError

PREFIX = "Forge__Documentation__"
DEFAULT_SITES = ("forge", "cloud-foundations", "iac-azure-modules", "iac-okta-modules", "iac-aws-modules")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_RAW_PLACEHOLDERS = {"base", "path", "site", "origin"}
_EMPTY_IS_MEANINGFUL = {
    ("rawmarkdownurlpattern",),
    ("aisearch", "searchfilter"),
    ("aisearch", "mkdocssiteprefix"),
}
"""Setting paths (lower case) where an empty value means something (no raw Markdown, no filter, no stripping)
 instead of "unset"."""
EMBEDDINGS_PREFIX = "embeddings/"
"""Where the cache keeps embeddings (each site's vectors, the encoder's rewritten graph: `shared.cache.names`)."""
DERIVED_PREFIX = "derived/"
"""Where the cache keeps what else it derives from indexes (prebuilt rankers, missing-page records, refresh runs)."""
RESERVED_PREFIXES = (EMBEDDINGS_PREFIX, DERIVED_PREFIX)
"""Defined here, because a cache file name template that reaches under one is refused at start-up."""
_HOST_NAMES = {
    "azurewebjobsstorage": "AzureWebJobsStorage",
    "azurewebjobsstorage__blobserviceuri": "AzureWebJobsStorageBlobServiceUri",
    "website_hostname": "WEBSITE_HOSTNAME",
    "applicationinsights_connection_string": "APPLICATIONINSIGHTS_CONNECTION_STRING",
    "http_proxy": "HTTP_PROXY",
    "https_proxy": "HTTPS_PROXY",
    "all_proxy": "ALL_PROXY",
}
"""The platform's own app settings the model reads (lower case), and the alias of the field each one fills."""
HOST_OWNED = frozenset(_HOST_NAMES.values())
"""Aliases of fields the hosting platform sets, not `Forge__Documentation__*` app settings."""


STORAGE_NAME = re.compile(r"[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]")
"""A blob container's or a storage queue's name: 3-63 lowercase letters, digits and single hyphens."""


def absolute_url(value: str, what: str) -> str:
    """`value` trimmed, when it is an absolute http(s) URL with a host and no query or fragment; else ValueError
    saying it must be `what`."""
    value = value.strip()
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(f"must be {what}")
    return value


class _Section(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)


class CacheSettings(_Section):
    """`Forge__Documentation__Cache__*`: where the shared index cache lives."""

    container: str = Field("docs-index-cache", alias="Container")
    """Blob container for cached indexes (created if missing)."""
    connection_string: SecretStr | None = Field(None, alias="ConnectionString")
    """Storage connection string for the cache; overrides AzureWebJobsStorage."""
    blob_service_uri: str | None = Field(None, alias="BlobServiceUri")
    """Blob service URI for the cache, reached with managed identity (DefaultAzureCredential)."""
    check_interval_seconds: float = Field(15.0, alias="CheckIntervalSeconds", ge=0)
    """How often a warm instance checks the cache for a newer copy of a loaded index (one blob property read per site,
    and one for its missing-pages record, only while requests arrive); a refresh written by any instance is served by
    every instance within this many seconds."""

    @field_validator("container")
    @classmethod
    def _container_name(cls, value: str) -> str:
        if not STORAGE_NAME.fullmatch(value):
            raise ValueError("must be a valid blob container name (3-63 lowercase letters, digits, hyphens)")
        return value


class WarmupSettings(_Section):
    """`Forge__Documentation__Warmup__*`: the scheduled cache refresh."""

    schedule: str = Field("0 */30 * * * *", alias="Schedule")
    """NCRONTAB schedule of the warm-up timer (six fields)."""
    page_check_concurrency: int = Field(8, alias="PageCheckConcurrency", ge=1, le=64)
    """Page requests the warm-up keeps in flight at once while checking which indexed pages the origin no longer serves
    (1-64).

    The limit holds across all sites: the page check is one lane of requests.
    """
    page_check_seconds: float = Field(120.0, alias="PageCheckSeconds", gt=0, le=1800)
    """How long the warm-up checks one site's pages per run; the rest is checked next run."""


def _names(value: Any) -> Any:
    """A list of names: comma-separated, indexed (`Key__0`, ...) or a sequence; trimmed, empty entries dropped."""
    if isinstance(value, str):
        value = value.split(",")
    if isinstance(value, Mapping):
        value = [value[k] for k in sorted(value, key=int)]
    return tuple(str(name).strip() for name in value if str(name).strip())


def _secret_list(value: Any) -> Any:
    """Like `_names`, each a SecretStr."""
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if not isinstance(value, str | Mapping):
        value = [item.get_secret_value() if isinstance(item, SecretStr) else item for item in value]
    return tuple(SecretStr(token) for token in _names(value))


class RefreshSettings(_Section):
    """`Forge__Documentation__Refresh__*`: the publish hook (`POST /api/admin/refresh`) and its queue."""

    tokens: tuple[SecretStr, ...] = Field((), alias="Tokens")
    """Bearer tokens the publish hook POST /api/admin/refresh accepts, comma-separated (a secret: a Key Vault reference
    in Azure). Apart from Inbound__Tokens: a docs pipeline holds one and nothing that reads. Unset: the hook answers
    401 to every caller.

    The indexed form (`Tokens__0`, ...) is read too.
    """
    wait_seconds: float = Field(100.0, alias="WaitSeconds", gt=0, le=220)
    """How long the publish hook waits for its refresh before answering 202 with where to read the outcome (more than 0,
    at most 220: below the Functions front end's 230 s limit)."""
    queue_name: str = Field("", alias="QueueName")
    """Storage queue in the host storage (AzureWebJobsStorage) that Event Grid drops the docs container's BlobCreated
    events of search indexes into; set, the Functions app reads it and refreshes the site whose index was written
    (the Bicep option refreshOnPublish sets it). Empty: no queue trigger."""

    app_roles: tuple[str, ...] = Field((), alias="AppRoles")
    """With Entra sign-in (Auth__TenantId and Auth__Audience set): app roles, comma-separated, whose app-only tokens may
    also call the publish hook, such as Docs.Refresh for a pipeline's managed identity or workload identity instead
    of a shared Refresh__Tokens secret. Such a role grants no reading. Empty: only Refresh__Tokens."""

    @field_validator("tokens", mode="before")
    @classmethod
    def _tokens(cls, value: Any) -> Any:
        return _secret_list(value)

    @field_validator("app_roles", mode="before")
    @classmethod
    def _roles(cls, value: Any) -> Any:
        return _names(value)

    @field_validator("queue_name")
    @classmethod
    def _queue(cls, value: str) -> str:
        value = value.strip()
        if value and not STORAGE_NAME.fullmatch(value):
            raise ValueError("must be a valid storage queue name (3-63 lowercase letters, digits, hyphens)")
        return value


class SearchSettings(_Section):
    """`Forge__Documentation__Search__*`: ranking knobs of the MkDocs provider."""

    min_score: float = Field(0.015, alias="MinScore", ge=0)
    """Relevance floor of the MkDocs provider; empty uses the built-in default.

    Results scoring below it are dropped, so an off-topic query returns nothing. Off-topic questions mostly
    top out below 0.015 while the weakest correct top-5 hit of the dev eval set scores 0.042: the default sits just
    above the off-topic cluster, leaving margin for unseen on-topic queries.
    """
    path_weights: str | None = Field(None, alias="PathWeights", examples=[""])
    """Page-kind rules, a JSON list such as [{"pattern": "blog/", "weight": 0.5, "unless": ["blog"]}]; empty uses the
    built-in default (docs/configuration.md), [] restores the spec's ranking.

    Each rule is a `{"pattern", "weight", "unless", "when", "site"}` object: pages whose path matches its pattern
    have their score multiplied by its weight unless the query names that kind of page. The text is kept as given:
    the MkDocs provider parses and checks it at start-up (`shared.providers.mkdocs.kinds.configured`). The default
    halves proposals, upgrade notes, release notes, blogs and archives.
    """
    site_wait_seconds: float = Field(2.0, alias="SiteWaitSeconds", gt=0, le=60)
    """How long a search waits for a site whose index is still loading before answering from the sites that are ready
    (the slow one keeps loading and the answer says so).

    A first load or a retry; never the whole request deadline: one hung site must not cost every answer.
    """
    semantic: bool = Field(True, alias="Semantic")
    """Also rank by meaning (sentence embeddings, computed once per index version by the warm-up and stored beside the
    index); false keeps ranking lexical.

    Sentence embeddings of every entry (`shared/providers/mkdocs/vectors.py`): about 8 ms of CPU per query on two
    cores and, once per index version, a minute of CPU for a large site.
    """

    @field_validator("path_weights", mode="before")
    @classmethod
    def _path_weights(cls, value: object) -> str | None:
        if value is None or isinstance(value, str):
            return value
        raise ValueError("PathWeights must be one JSON list in one setting (the indexed __0 form is not accepted)")


class AiSearchSettings(_Section):
    """`Forge__Documentation__AiSearch__*`: the Azure AI Search provider, registered only when `Endpoint` is set.

    Defaults are the spec's code defaults. An empty `SearchFilter` (or whitespace) sends no filter; an empty
    `MkDocsSitePrefix` disables stripping.
    """

    endpoint: str | None = Field(None, alias="Endpoint")
    """Azure AI Search endpoint (https://NAME.search.windows.net). The ai_search provider is registered only when this
    is set."""
    index_name: str = Field("saif-docs", alias="IndexName")
    """Index over the platform docs."""
    semantic_configuration_name: str = Field("docs-semantic", alias="SemanticConfigurationName")
    """Semantic configuration used for ranking."""
    platform_docs_base_url: str = Field("https://docs.saif.com", alias="PlatformDocsBaseUrl")
    """Base URL that blob-storage paths are rewritten to."""
    mkdocs_site_prefix: str = Field("forge", alias="MkDocsSitePrefix")
    """Leading path segment stripped from locations so the MkDocs provider can resolve them; empty disables stripping.
    """
    search_filter: str = Field("", alias="SearchFilter")
    """OData $filter sent with every search request; empty or whitespace sends no filter (for example: format eq
    '.html')."""
    api_key: SecretStr | None = Field(None, alias="ApiKey")
    """Local development only: an admin or query key. In Azure the managed identity authenticates; never deploy a key.
    """
    url_field: str = Field("metadata_storage_path", alias="UrlField")
    """Index field holding each document's blob URL (the Azure Blob indexer's metadata_storage_path, or that URL
    base64-encoded); it becomes the result's url and location."""
    content_field: str = Field("content", alias="ContentField")
    """Index field holding the page's text extract; previews are cut from it around the query."""
    title_field: str = Field("title", alias="TitleField")
    """Index field holding the page title."""
    description_field: str = Field("description", alias="DescriptionField")
    """Index field shown as the preview only when the content yields none."""
    version_field: str | None = Field(None, alias="VersionField")
    """The index field holding each document's version of a versioned site (mike), when the index carries one: a
    search naming a version is then filtered on it and its results carry it. Unset: such a search is left to the
    MkDocs provider, and results carry no version."""
    code_filter: str | None = Field(None, alias="CodeFilter")
    """An OData filter selecting the index's code chunks, when it holds code blocks as documents of their own (an
    indexer skillset that splits pages at their fences, marking each chunk, for example `chunk_kind eq 'code'`): a
    `kind=code` search is then answered here, each hit's content being the block. Unset: code searches are left to
    the MkDocs provider."""
    language_field: str | None = Field(None, alias="LanguageField")
    """The filterable index field holding a code chunk's language (lower-case names, as the Markdown fence wrote
    it): a code search's `language` is filtered on it and each result's `code.language` read from it. Unset: a code
    search naming a language is left to the MkDocs provider, and a result's language is guessed from its text."""
    site_field: str | None = Field(None, alias="SiteField")
    """Filterable index field holding each document's site name, used for searches within one site (site eq '<site>').
    Empty: such searches skip AI Search and are answered by MkDocs."""
    timeout_seconds: float = Field(5.0, alias="TimeoutSeconds", gt=0)
    """Upper bound of one AI Search call in seconds; the request's own deadline wins when sooner. A timeout falls
    through to MkDocs."""

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return absolute_url(value, "the service's absolute URL, such as https://NAME.search.windows.net").rstrip("/")

    @field_validator("mkdocs_site_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        """Surrounding whitespace and slashes trimmed: a single space (how an azd user writes "empty", since azd
        reads an empty variable as its default) disables stripping like an empty value does."""
        return value.strip().strip("/")

    @field_validator("url_field", "content_field", "title_field", "description_field", "site_field")
    @classmethod
    def _field_name(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", value.strip()):
            raise ValueError(f"{value!r} is not an index field name (letters, digits and underscores)")
        return value.strip()


class RemoteSettings(_Section):
    """`Forge__Documentation__Remote__*`: another deployment over MCP, registered only when `Endpoint` is set."""

    endpoint: str | None = Field(None, alias="Endpoint")
    """Full URL of another deployment's /api/mcp; the remote provider is registered only when this is set."""
    token: SecretStr | None = Field(None, alias="Token")
    """Bearer token for the remote deployment, one of its Inbound__Tokens (a secret: a Key Vault reference in Azure).
    Wins over Remote__Scope."""
    scope: str | None = Field(None, alias="Scope")
    """Entra ID scope of the remote deployment (such as api://APP-ID/.default): without Remote__Token, a bearer token
    for it comes from the app's identity (Identity__ClientId), or locally from your own sign-in."""
    functions_key: SecretStr | None = Field(None, alias="FunctionsKey")
    """The remote deployment's Functions key, sent as x-functions-key (a secret: a Key Vault reference in Azure)."""
    order: int = Field(50, alias="Order")
    """The remote provider's place in the chain: after AI Search (0), before MkDocs (100)."""
    timeout_seconds: float = Field(10.0, alias="TimeoutSeconds", gt=0)
    """Upper bound of one remote call in seconds (connect, MCP handshake, tool call); the request's own deadline wins
    when sooner."""
    cooldown_seconds: float = Field(300.0, alias="CooldownSeconds", ge=0)
    """After a failed connection (unreachable, timeout, refused credentials), remote calls fall through without
    connecting for this long. 0: no cooldown."""

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return absolute_url(value, "the other deployment's absolute MCP URL, such as https://APP/api/mcp")

    @field_validator("scope")
    @classmethod
    def _scope(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None


LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


class AuthSettings(_Section):
    """`Forge__Documentation__Auth__*`: Entra ID sign-in; every `/api/*` route but health (and the publish hook, which
    has its own credential) then requires a Microsoft identity platform v2.0 access token issued for this app."""

    tenant_id: str | None = Field(None, alias="TenantId")
    """Entra ID sign-in: the tenant (directory) id whose access tokens are accepted. With Auth__Audience it turns
    sign-in on: every /api/* route but /api/health then requires a Microsoft identity platform v2.0 access token for
    this app, and the protected resource metadata is served at /.well-known/oauth-protected-resource. The Bicep
    option entraAuth sets it. Empty: no sign-in."""
    audience: str | None = Field(None, alias="Audience")
    """What the tokens are issued for: the app registration's Application ID URI api://<client id> (tokens whose aud is
    the bare client id, as v2.0 tokens carry it, are accepted too), or the client id itself. Scopes are advertised as
    <Audience>/<scope>."""
    scopes: tuple[str, ...] = Field((), alias="Scopes")
    """Delegated scopes, comma-separated (docs.read): a signed-in user's token must carry one of them in scp. The
    Bicep's app registration exposes docs.read."""
    app_roles: tuple[str, ...] = Field((), alias="AppRoles")
    """App roles, comma-separated (Docs.Read.All), accepted from app-only callers in roles, such as another deployment's
    managed identity (its Remote__Scope is <Audience>/.default). With neither scopes nor roles set, any valid token
    for the audience is accepted."""
    authority: str = Field("https://login.microsoftonline.com", alias="Authority")
    """The identity platform's host: tokens come from {Authority}/{TenantId}/v2.0, signing keys from
    {Authority}/{TenantId}/discovery/v2.0/keys. Another cloud's login host for sovereign clouds; plain http only for
    a loopback host (tests)."""
    resource: str | None = Field(None, alias="Resource")
    """The MCP endpoint's public URL as the protected resource metadata names it (a custom domain, a proxy). Empty:
    https://{WEBSITE_HOSTNAME}/api/mcp in Azure, else the address the server is bound to."""

    @field_validator("tenant_id", "audience")
    @classmethod
    def _trimmed(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @field_validator("tenant_id")
    @classmethod
    def _tenant(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.-]{0,253}", value):
            raise ValueError("must be a tenant id (a GUID) or a verified domain name")
        return value

    @field_validator("scopes", "app_roles", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return _names(value)

    @field_validator("authority")
    @classmethod
    def _authority(cls, value: str) -> str:
        value = absolute_url(value, "an absolute URL such as https://login.microsoftonline.com").rstrip("/")
        parts = urlsplit(value)
        if parts.scheme != "https" and parts.hostname not in LOOPBACK_HOSTS:
            raise ValueError("must be https (plain http only for a loopback host)")
        return value

    @field_validator("resource")
    @classmethod
    def _resource(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        return absolute_url(value, "the MCP endpoint's absolute public URL, such as https://docs.example.com/api/mcp")

    @property
    def enabled(self) -> bool:
        return self.tenant_id is not None and self.audience is not None

    @property
    def issuer(self) -> str:
        return f"{self.authority}/{self.tenant_id}/v2.0"

    @property
    def keys_url(self) -> str:
        return f"{self.authority}/{self.tenant_id}/discovery/v2.0/keys"

    def scopes_supported(self) -> list[str]:
        """The scopes in the form Entra clients request them: `{Audience}/{scope}`."""
        return [f"{(self.audience or '').rstrip('/')}/{scope}" for scope in self.scopes]


class InboundSettings(_Section):
    """`Forge__Documentation__Inbound__*`: bearer tokens this app requires, for hosts without Functions keys."""

    tokens: tuple[SecretStr, ...] = Field((), alias="Tokens")
    """Bearer tokens this app accepts, comma-separated (a secret). When set, every /api/* route but /api/health requires
    Authorization: Bearer <one of them>; for hosts without Functions keys (a container, python -m shared serve on a
    shared machine). Unset: no check.

    The indexed form (`Tokens__0`, ...) is read too.
    """
    max_concurrent_per_client: int = Field(64, alias="MaxConcurrentPerClient", ge=1, le=10_000)
    """Requests one client (its X-Forwarded-For, else its address) may have in flight at once on an instance; the next
    is answered 429 with Retry-After.

    So a client that holds requests open cannot take every worker.
    """

    @field_validator("tokens", mode="before")
    @classmethod
    def _tokens(cls, value: Any) -> Any:
        return _secret_list(value)


class McpSettings(_Section):
    """`Forge__Documentation__Mcp__*`: the MCP endpoint at `/api/mcp`."""

    allowed_hosts: tuple[str, ...] = Field((), alias="AllowedHosts")
    """Host names the MCP endpoint answers besides WEBSITE_HOSTNAME and loopback (custom domains, container hosts),
    comma-separated; any other Host header is refused with 421.

    The check is the endpoint's DNS-rebinding protection.
    """
    answer_budget_chars: int = Field(24_000, alias="AnswerBudgetChars", ge=4_000, le=1_000_000)
    """The most characters an MCP answer takes as the client receives it (text and structured content together): a
    get_doc answer or a page resource without an explicit maxChars, an outline, a search; a longer page answers its
    first part with the next call and the outline of the rest, a search its best results and how many it left out.

    A page resource takes the same; `docs/api/mcp.md` says how the default was chosen against what agent hosts
    accept.
    """

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _hosts(cls, value: Any) -> Any:
        hosts = tuple(host.lower() for host in _names(value))
        for host in hosts:
            if "/" in host or "://" in host:
                raise ValueError(f"{host!r} is not a host name (no scheme or path; a port may follow ':')")
        return hosts


class IdentitySettings(_Section):
    """`Forge__Documentation__Identity__*`: the app's managed identity, handed to every Azure credential."""

    client_id: str | None = Field(None, alias="ClientId")
    """Client id of the app's user-assigned managed identity, handed to every Azure credential (storage, AI Search,
    telemetry). Empty: system-assigned identity, or the developer's own sign-in locally."""


class DocumentationSettings(BaseSettings):
    """Every setting the service reads. Built once at the edge and passed down."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True, enable_decoding=False, use_attribute_docstrings=True)

    origin: str = Field("https://docs.saif.com", alias="Origin", examples=["http://127.0.0.1:8000"])
    """Origin hosting every documentation site; a site's base URL is {Origin}/{site}. Nothing is requested outside it.
    """
    default_site: str = Field("forge", alias="DefaultSite")
    """Site tried first for a location without a site segment; always served, inserted into Sites if missing."""
    sites: tuple[str, ...] = Field(DEFAULT_SITES, alias="Sites")
    """Sites published under the origin: comma-separated, or indexed as Forge__Documentation__Sites__0, __1, ..."""
    search_index_path: str = Field("/search/search_index.json", alias="SearchIndexPath")
    """Search index path relative to a site's base URL."""
    cache_file_name_template: str = Field("{site}-docs-search-index.json", alias="CacheFileNameTemplate")
    """Per-site cache blob name; {site} is the placeholder, the site is prepended when it is absent."""
    cache_duration_hours: float = Field(1.0, alias="CacheDurationHours")
    """How long a cached index counts as fresh on a site's first load; <= 0 means 1."""
    raw_markdown_url_pattern: str | None = Field("{base}/{path}.md", alias="RawMarkdownUrlPattern")
    """Raw Markdown URL pattern ({base}, {path}, {site}, {origin}); empty disables raw Markdown and always converts
    HTML."""
    search_index_overrides: dict[str, str] = Field(
        default_factory=dict,
        alias="SearchIndexOverrides",
        examples=['{"cloud-foundations": "/search/search_index.json"}'],
    )
    """JSON object: site -> path under the origin (or same-origin URL) of its search index, for root-published sites."""
    version_defaults: dict[str, str] = Field(
        default_factory=dict, alias="VersionDefaults", examples=['{"vdocs": "2.0"}']
    )
    """JSON object: versioned site -> the version (or alias) a search or location without one means, instead of the
    one the site's root redirects to (`docs/how-it-works/versions.md`)."""
    warm_versions: int = Field(2, alias="WarmVersions", ge=0, le=50)
    """Versions of each versioned site the warm-up keeps warm besides its default: the newest ones listed (hidden
    ones aside). The others are loaded the first time a request names them."""
    cache: CacheSettings = Field(default_factory=CacheSettings, alias="Cache")
    warmup: WarmupSettings = Field(default_factory=WarmupSettings, alias="Warmup")
    search: SearchSettings = Field(default_factory=SearchSettings, alias="Search")
    site_retry_seconds: float = Field(30.0, alias="SiteRetrySeconds", ge=1)
    """A site whose index failed to load is tried again at most this often (plus up to 20% jitter); health says when."""
    unpublished_retry_seconds: float = Field(1800.0, alias="UnpublishedRetrySeconds", ge=1)
    """A site whose index the origin answers 404 for (not published yet) is rechecked only this often (the warm-up
    interval); a copy the warm-up stores is picked up within Cache__CheckIntervalSeconds."""
    request_timeout_seconds: float = Field(30.0, alias="RequestTimeoutSeconds", gt=0)
    """One deadline for every search and get, over REST and MCP; past it the answer is `timeout` (HTTP 504, or an MCP
    tool error)."""
    mcp: McpSettings = Field(default_factory=McpSettings, alias="Mcp")
    identity: IdentitySettings = Field(default_factory=IdentitySettings, alias="Identity")
    ai_search: AiSearchSettings | None = Field(None, alias="AiSearch")
    remote: RemoteSettings | None = Field(None, alias="Remote")
    inbound: InboundSettings = Field(default_factory=InboundSettings, alias="Inbound")
    refresh: RefreshSettings = Field(default_factory=RefreshSettings, alias="Refresh")
    auth: AuthSettings = Field(default_factory=AuthSettings, alias="Auth")
    host_storage: SecretStr | None = Field(None, alias="AzureWebJobsStorage")
    host_storage_blob_service_uri: str | None = Field(None, alias="AzureWebJobsStorageBlobServiceUri")
    website_hostname: str | None = Field(None, alias="WEBSITE_HOSTNAME")
    """The app's default host name, set by App Service / Functions in Azure; the MCP endpoint answers it."""
    applicationinsights_connection_string: SecretStr | None = Field(None, alias="APPLICATIONINSIGHTS_CONNECTION_STRING")
    """Where the signals go (`shared.telemetry.export`), set by the platform with Application Insights; unset, no
    telemetry is exported."""
    http_proxy: SecretStr | None = Field(None, alias="HTTP_PROXY")
    https_proxy: SecretStr | None = Field(None, alias="HTTPS_PROXY")
    all_proxy: SecretStr | None = Field(None, alias="ALL_PROXY")
    """A proxy the environment names (any case; secret, since a proxy URL may carry credentials): only then does the
    storage client read the environment's proxy settings (`shared.cache.blob.client_options`)."""

    @property
    def proxy_configured(self) -> bool:
        return any(value is not None for value in (self.http_proxy, self.https_proxy, self.all_proxy))

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only what is given: `load_settings` hands over the app settings, and nothing is read on the side (no
        environment, .env files or secrets directory)."""
        return (init_settings,)

    @field_validator("origin")
    @classmethod
    def _origin(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an absolute http(s) URL such as https://docs.example.com")
        if parts.query or parts.fragment:
            raise ValueError("must not carry a query or fragment")
        return value

    @field_validator("sites", mode="before")
    @classmethod
    def _sites(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(value.split(","))
        if isinstance(value, Mapping):
            try:
                return tuple(value[k] for k in sorted(value, key=int))
            except ValueError:
                raise ValueError("indexed entries must be numbered Sites__0, Sites__1, ...") from None
        return value

    @field_validator("search_index_overrides", "version_defaults", mode="before")
    @classmethod
    def _overrides(cls, value: Any) -> Any:
        if isinstance(value, str):
            if not value.strip():
                return {}
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(f"must be a JSON object mapping a site to its index path: {exc.msg}") from None
            if not isinstance(value, dict):
                raise ValueError("must be a JSON object mapping a site to its index path")
        return value

    @field_validator("cache_file_name_template")
    @classmethod
    def _template(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        for prefix in RESERVED_PREFIXES:
            if value.strip().lower().startswith(prefix):
                raise ValueError(f"must not start with {prefix!r}: the cache keeps index artifacts there")
        return value.strip()

    @field_validator("cache_duration_hours")
    @classmethod
    def _duration(cls, value: float) -> float:
        return value if value > 0 else 1.0

    @field_validator("raw_markdown_url_pattern")
    @classmethod
    def _raw_pattern(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        unknown = set(_PLACEHOLDER.findall(value)) - _RAW_PLACEHOLDERS
        if unknown:
            raise ValueError(f"unknown placeholder(s) {sorted(unknown)}; use {{base}}, {{path}}, {{site}}, {{origin}}")
        return value.strip()

    @field_validator("search_index_path")
    @classmethod
    def _index_path(cls, value: str) -> str:
        value = value.strip()
        if not value or "://" in value or value.startswith("//") or ".." in value.split("/"):
            raise ValueError("must be a path relative to the site's base URL, such as /search/search_index.json")
        return "/" + value.lstrip("/")

    @model_validator(mode="after")
    def _derive(self) -> DocumentationSettings:
        default = self.default_site.strip().strip("/")
        if not default:
            raise ValueError("DefaultSite must not be blank")
        seen: dict[str, str] = {}
        for name in (default, *self.sites):
            name = name.strip().strip("/")
            if name and name.lower() not in seen:
                if "/" in name or "#" in name or "?" in name or "@" in name:
                    raise ValueError(f"Sites: {name!r} is not a site name (no '/', '#', '?' or '@')")
                seen[name.lower()] = name
        object.__setattr__(self, "default_site", default)
        object.__setattr__(self, "sites", tuple(seen.values()))
        overrides: dict[str, str] = {}
        for site, target in self.search_index_overrides.items():
            canonical = seen.get(str(site).strip().lower())
            if canonical is None:
                raise ValueError(f"SearchIndexOverrides: {site!r} is not a configured site")
            overrides[canonical] = self._same_origin(str(target), site)
        object.__setattr__(self, "search_index_overrides", overrides)
        defaults: dict[str, str] = {}
        for site, version in self.version_defaults.items():
            canonical = seen.get(str(site).strip().lower())
            if canonical is None:
                raise ValueError(f"VersionDefaults: {site!r} is not a configured site")
            defaults[canonical] = str(version).strip()
        object.__setattr__(self, "version_defaults", defaults)
        for site in self.sites:
            # The cache's own name (`shared.cache.names.index_name`) also sanitizes the site, or prepends it without
            # `{site}`; neither makes a reserved prefix (a site holds no `/`): this reaches one exactly when that does.
            for prefix in RESERVED_PREFIXES:
                if self.cache_file_name_template.replace("{site}", site).lower().startswith(prefix):
                    raise ValueError(f"CacheFileNameTemplate: site {site!r} would be cached under {prefix!r}")
        return self

    def _same_origin(self, target: str, site: str) -> str:
        target = target.strip()
        if "://" in target:
            if not target.startswith(self.origin + "/"):
                raise ValueError(f"SearchIndexOverrides: {site!r} points outside the origin {self.origin}")
            target = target[len(self.origin) :]
        if target.startswith("//") or ".." in target.split("/") or not target.strip("/"):
            raise ValueError(f"SearchIndexOverrides: {site!r} must be a path under the origin")
        return "/" + target.lstrip("/")

    def base_url(self, site: str) -> str:
        """A site's base URL: `{Origin}/{site}`, and a version's (`{site}@{version}`, a versioned site's folder,
        `shared.providers.mkdocs.versions`) `{Origin}/{site}/{version}`; there are no per-site base URLs."""
        name, _, version = site.partition("@")
        return f"{self.origin}/{name}/{version}" if version else f"{self.origin}/{site}"

    def index_url(self, site: str) -> str:
        """Where a site's search index is published: the override, else `{base}{SearchIndexPath}`."""
        override = self.search_index_overrides.get(site)
        return self.origin + override if override else self.base_url(site) + self.search_index_path

    def unresolved_secrets(self) -> tuple[str, ...]:
        """The secret settings whose value is still a Key Vault reference (`@Microsoft.KeyVault(...)`): App Service
        passes the reference text itself when it cannot resolve it (before the identity's role propagates, a secret
        deleted or disabled). Such a value is never used as the secret: what it guards fails closed."""
        given = {
            "Inbound__Tokens": any(unresolved(token) for token in self.inbound.tokens),
            "Refresh__Tokens": any(unresolved(token) for token in self.refresh.tokens),
            "Remote__Token": self.remote is not None and unresolved(self.remote.token),
            "Remote__FunctionsKey": self.remote is not None and unresolved(self.remote.functions_key),
            "AiSearch__ApiKey": self.ai_search is not None and unresolved(self.ai_search.api_key),
            "Cache__ConnectionString": unresolved(self.cache.connection_string),
        }
        return tuple(PREFIX + key for key, pending in given.items() if pending)

    def site_named(self, name: str) -> str | None:
        """The configured site with this name, case-insensitively."""
        lowered = name.lower()
        return next((site for site in self.sites if site.lower() == lowered), None)


class AppSettingsSource(EnvSettingsSource):
    """The app settings in one mapping, read by pydantic-settings (nested on `__`, case-insensitively).

    What is ours: only `Forge__Documentation__*` and the platform's own names (trimmed) are read; an empty value (or
    only whitespace) means unset, except where the spec gives empty a meaning; and a key with keys below it (`Sites`
    beside `Sites__0`) gives way to them, so the indexed form of a list wins.
    """

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._given = environ
        super().__init__(settings_cls, case_sensitive=False, env_nested_delimiter="__", env_ignore_empty=False)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        prefix = PREFIX.lower()
        read: dict[str, str] = {}
        for key, value in self._given.items():
            name = key.lower()
            if name.startswith(prefix):
                name = name[len(prefix) :]
                if value.strip() or tuple(name.split("__")) in _EMPTY_IS_MEANINGFUL:
                    read[name] = value
            elif name in _HOST_NAMES and value.strip():
                read[_HOST_NAMES[name].lower()] = value.strip()
        return {name: value for name, value in read.items() if not any(key.startswith(name + "__") for key in read)}


KEY_VAULT_REFERENCE = "@microsoft.keyvault("


def unresolved(secret: SecretStr | None) -> bool:
    """True when the secret is an App Service Key Vault reference that did not resolve (its literal text)."""
    return secret is not None and secret.get_secret_value().lstrip().lower().startswith(KEY_VAULT_REFERENCE)


RETIRED = {"Mcp__MaxContentChars": "Mcp__AnswerBudgetChars"}
"""Settings that no longer exist, and what took their place: one left set is said at start-up, not guessed at."""


def load_settings(environ: Mapping[str, str] | None = None) -> DocumentationSettings:
    """The settings in `environ` and nothing else (the process environment when it is None), or one message naming
    the key."""
    environ = os.environ if environ is None else environ
    given = {key.lower() for key in environ}
    for old, new in RETIRED.items():
        if (PREFIX + old).lower() in given:
            logging.getLogger(__name__).warning(
                "%s%s is no longer read: set %s%s instead (see docs/configuration.md)", PREFIX, old, PREFIX, new
            )
    try:
        return DocumentationSettings(_build_sources=((AppSettingsSource(DocumentationSettings, environ),), {}))
    except ValidationError as exc:
        error = exc.errors()[0]
        key = PREFIX + "__".join(str(part) for part in error["loc"] if not isinstance(part, int))
        message = str(error["msg"]).removeprefix("Value error, ")
        if not error["loc"]:
            key, _, message = (PREFIX + message).partition(": ")
        raise ConfigurationError(key, message) from None
