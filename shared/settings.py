"""The only reader of the environment: app settings parsed and validated once, at start-up.

Keys follow the spec's `Forge:Documentation:<Key>` in app-setting form (`:` becomes `__`), for example
`Forge__Documentation__Origin`. Matching is case-insensitive, like the Functions host's configuration.
Lists accept a comma-separated value or the indexed form `Key__0`, `Key__1`, ...
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from contextvars import ContextVar
from types import UnionType
from typing import Any, Union, get_args, get_origin
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from shared.errors import ConfigurationError
from shared.providers.mkdocs.kinds import DEFAULT as DEFAULT_PATH_WEIGHTS
from shared.providers.mkdocs.kinds import PathWeights

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
ARTIFACTS_PREFIX = "embeddings/"
"""Blob names the cache keeps for index artifacts (`shared.cache.store`): no index file name may start with it."""
HOST_OWNED = frozenset(
    {
        "AzureWebJobsStorage",
        "AzureWebJobsStorageBlobServiceUri",
        "WEBSITE_HOSTNAME",
        "APPLICATIONINSIGHTS_CONNECTION_STRING",
    }
)
"""Aliases of fields the hosting platform sets, not `Forge__Documentation__*` app settings."""
_ENVIRON: ContextVar[Mapping[str, str] | None] = ContextVar("environ", default=None)


STORAGE_NAME = re.compile(r"[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]")
"""A blob container's or a storage queue's name: 3-63 lowercase letters, digits and single hyphens."""
_INVALID_FILE_CHARS = re.compile(r'[<>:"/\\|?*\x00-\x1f]')


def safe_name(value: str) -> str:
    """A name with the characters invalid in a file name replaced by `-` (the spec's site-name substitution)."""
    return _INVALID_FILE_CHARS.sub("-", value)


def index_name(template: str, site: str) -> str:
    """The spec's cache file name: `{site}` substituted (sanitized), or the site prepended when absent."""
    if "{site}" in template:
        return template.replace("{site}", safe_name(site))
    return f"{safe_name(site)}-{template}"


def absolute_url(value: str, what: str) -> str:
    """`value` trimmed, when it is an absolute http(s) URL with a host and no query or fragment; else ValueError
    saying it must be `what`."""
    value = value.strip()
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(f"must be {what}")
    return value


class _Section(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)


class CacheSettings(_Section):
    """`Forge__Documentation__Cache__*`: where the shared index cache lives."""

    container: str = Field("docs-index-cache", alias="Container")
    connection_string: SecretStr | None = Field(None, alias="ConnectionString")
    blob_service_uri: str | None = Field(None, alias="BlobServiceUri")
    check_interval_seconds: float = Field(15.0, alias="CheckIntervalSeconds", ge=0)
    """How often a warm instance asks the store whether a newer copy of a loaded index exists: one blob property
    read per site (and one for its missing-pages record) per interval, and only while requests arrive. A refresh
    written by any instance is served by every instance within this many seconds."""

    @field_validator("container")
    @classmethod
    def _container_name(cls, value: str) -> str:
        if not STORAGE_NAME.fullmatch(value):
            raise ValueError("must be a valid blob container name (3-63 lowercase letters, digits, hyphens)")
        return value


class WarmupSettings(_Section):
    """`Forge__Documentation__Warmup__*`: the scheduled cache refresh."""

    schedule: str = Field("0 */30 * * * *", alias="Schedule")
    page_check_concurrency: int = Field(8, alias="PageCheckConcurrency", ge=1, le=64)
    """Page requests the warm-up's check of an index's pages keeps in flight at once, across all sites."""
    page_check_seconds: float = Field(120.0, alias="PageCheckSeconds", gt=0, le=1800)
    """How long one site's page check may take per warm-up; what it does not reach is checked next time."""


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
    """Bearer tokens the publish hook accepts (comma-separated or `Tokens__0`, ...), apart from `Inbound__Tokens`:
    a docs pipeline holds one of these and nothing that reads. Unset, the hook refuses every caller (401)."""
    wait_seconds: float = Field(100.0, alias="WaitSeconds", gt=0, le=220)
    """How long the hook waits for its refresh before answering `202` with where to read the outcome: below the
    Functions front end's 230 s limit on an HTTP request."""
    queue_name: str = Field("", alias="QueueName")
    """The storage queue (in the host's `AzureWebJobsStorage`) Event Grid drops the docs container's `BlobCreated`
    events into; set, the Functions app reads it and refreshes the site whose index was written. Empty: no queue."""

    app_roles: tuple[str, ...] = Field((), alias="AppRoles")
    """With Entra sign-in (`Auth__*`): app roles whose app-only tokens may call the hook too (a pipeline's managed
    identity or workload identity), instead of a shared token."""

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
    """Relevance floor: results scoring below it are dropped, so an off-topic query returns nothing.

    Off-topic questions mostly top out below 0.015 while the weakest correct top-5 hit of the dev eval set scores
    0.042: the default sits just above the off-topic cluster, leaving margin for unseen on-topic queries.
    """
    path_weights: PathWeights = Field(PathWeights.parse(DEFAULT_PATH_WEIGHTS), alias="PathWeights")
    """Page-kind rules: a JSON list of `{"pattern", "weight", "unless", "site"}` objects; pages whose path matches
    a rule's pattern have their score multiplied by its weight unless the query names that kind of page
    (`shared/providers/mkdocs/kinds.py`). The default halves proposals, upgrade notes, release notes, blogs and
    archives; `[]` restores the spec's ranking (empty or unset: the default).
    """
    site_wait_seconds: float = Field(2.0, alias="SiteWaitSeconds", gt=0, le=60)
    """How long a search waits for a site whose index is still loading (a first load, a retry) before answering
    from the sites that are ready; the slow site keeps loading in the background and the answer's `sites` says
    it is `loading`. Never the whole request deadline: one hung site must not cost every answer."""
    semantic: bool = Field(True, alias="Semantic")

    """Also rank by meaning (sentence embeddings of every entry, `shared/providers/mkdocs/vectors.py`).

    Costs about 8 ms of CPU per query on two cores and, once per index version, a minute of CPU for a large site
    (done by the warm-up and stored beside the index). `false` keeps ranking purely lexical.
    """

    @field_validator("path_weights", mode="before")
    @classmethod
    def _path_weights(cls, value: object) -> PathWeights:
        if isinstance(value, PathWeights):
            return value
        if isinstance(value, str):
            return PathWeights.parse(value)
        raise ValueError("PathWeights must be one JSON list in one setting (the indexed __0 form is not accepted)")


class AiSearchSettings(_Section):
    """`Forge__Documentation__AiSearch__*`: the Azure AI Search provider, registered only when `Endpoint` is set.

    Defaults are the spec's code defaults. An empty `SearchFilter` (or whitespace) sends no filter; an empty
    `MkDocsSitePrefix` disables stripping.
    """

    endpoint: str | None = Field(None, alias="Endpoint")
    index_name: str = Field("saif-docs", alias="IndexName")
    semantic_configuration_name: str = Field("docs-semantic", alias="SemanticConfigurationName")
    platform_docs_base_url: str = Field("https://docs.saif.com", alias="PlatformDocsBaseUrl")
    mkdocs_site_prefix: str = Field("forge", alias="MkDocsSitePrefix")
    search_filter: str = Field("", alias="SearchFilter")
    api_key: SecretStr | None = Field(None, alias="ApiKey")
    """Local development only: in Azure the managed identity authenticates."""
    url_field: str = Field("metadata_storage_path", alias="UrlField")
    """Index field holding each document's blob URL (the Azure Blob indexer's name)."""
    content_field: str = Field("content", alias="ContentField")
    """Index field holding the document's text extract, which previews are cut from."""
    title_field: str = Field("title", alias="TitleField")
    description_field: str = Field("description", alias="DescriptionField")
    """Index field shown as the preview only when the content yields none."""
    site_field: str | None = Field(None, alias="SiteField")
    """Filterable index field holding each document's site name; unset, a search for one `site` is declined
    (the chain falls through to the next provider)."""
    timeout_seconds: float = Field(5.0, alias="TimeoutSeconds", gt=0)
    """Upper bound of one search call; the request's own deadline, when sooner, wins."""

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
    """The full URL of the other deployment's `/api/mcp`."""
    token: SecretStr | None = Field(None, alias="Token")
    """A bearer token the other deployment accepts (its `Inbound__Tokens`); wins over `Scope`."""
    scope: str | None = Field(None, alias="Scope")
    """An Entra ID scope (such as `api://APP-ID/.default`): without `Token`, a bearer token for it is asked of the
    app's managed identity (`Identity__ClientId`) on every call."""
    functions_key: SecretStr | None = Field(None, alias="FunctionsKey")
    """The other deployment's Functions key, sent as `x-functions-key`."""
    order: int = Field(50, alias="Order")
    """Position in the chain: after AI Search (0), before MkDocs (100)."""
    timeout_seconds: float = Field(10.0, alias="TimeoutSeconds", gt=0)
    """Upper bound of one remote call (connect, handshake and the tool call); the request's deadline, when sooner,
    wins."""
    cooldown_seconds: float = Field(300.0, alias="CooldownSeconds", ge=0)
    """After a failed connection (unreachable, timeout, refused credentials) calls fall through without connecting
    for this long."""

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
    """The Entra tenant (directory) id whose tokens are accepted; with `Audience`, turns sign-in on."""
    audience: str | None = Field(None, alias="Audience")
    """What the tokens are issued for: the app registration's client id, or its Application ID URI
    (`api://<client id>` also accepts tokens whose `aud` is the bare client id, as v2.0 tokens carry it)."""
    scopes: tuple[str, ...] = Field((), alias="Scopes")
    """Delegated scopes (comma-separated, such as `docs.read`): a user's token must carry one of them in `scp`."""
    app_roles: tuple[str, ...] = Field((), alias="AppRoles")
    """App roles (comma-separated) accepted from app-only callers (another deployment's managed identity) in
    `roles`. With neither scopes nor roles set, any valid token for the audience is accepted."""
    authority: str = Field("https://login.microsoftonline.com", alias="Authority")
    """The identity platform's host: tokens come from `{Authority}/{TenantId}/v2.0` and its keys from
    `{Authority}/{TenantId}/discovery/v2.0/keys`. Plain `http` only for a loopback host (tests)."""
    resource: str | None = Field(None, alias="Resource")
    """The MCP endpoint's public URL for the protected resource metadata; unset: `https://{WEBSITE_HOSTNAME}/api/mcp`,
    else the address the server is bound to."""

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
    """Accepted bearer tokens (comma-separated or `Tokens__0`, ...): when any is set, every `/api/*` route but
    `/api/health` requires `Authorization: Bearer <one of them>`. Unset, nothing changes."""
    max_concurrent_per_client: int = Field(64, alias="MaxConcurrentPerClient", ge=1, le=10_000)
    """Requests one client (its `X-Forwarded-For`, else its address) may have in flight at once on an instance;
    the next is `429` with `Retry-After`, so a client that holds requests open cannot take every worker."""

    @field_validator("tokens", mode="before")
    @classmethod
    def _tokens(cls, value: Any) -> Any:
        return _secret_list(value)


class McpSettings(_Section):
    """`Forge__Documentation__Mcp__*`: the MCP endpoint at `/api/mcp`."""

    allowed_hosts: tuple[str, ...] = Field((), alias="AllowedHosts")
    """Host names (custom domains, container hosts) the endpoint answers besides `WEBSITE_HOSTNAME` and loopback;
    any other `Host` header is refused (DNS-rebinding protection)."""
    answer_budget_chars: int = Field(24_000, alias="AnswerBudgetChars", ge=4_000, le=1_000_000)
    """The most characters a `get_doc` answer (or a page resource) takes without an explicit `maxChars`: its text
    and its structured content together, as they travel. A longer page answers its first part and says how to read
    on (`docs/api/mcp.md` says how the default was chosen against what agent hosts accept)."""

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
    """Client id of the user-assigned managed identity; unset means the system-assigned one (or, locally, the
    developer's own sign-in)."""


class DocumentationSettings(BaseSettings):
    """Every setting the service reads. Built once at the edge and passed down."""

    model_config = SettingsConfigDict(populate_by_name=True, extra="ignore", frozen=True)

    origin: str = Field("https://docs.saif.com", alias="Origin")
    default_site: str = Field("forge", alias="DefaultSite")
    sites: tuple[str, ...] = Field(DEFAULT_SITES, alias="Sites")
    search_index_path: str = Field("/search/search_index.json", alias="SearchIndexPath")
    cache_file_name_template: str = Field("{site}-docs-search-index.json", alias="CacheFileNameTemplate")
    cache_duration_hours: float = Field(1.0, alias="CacheDurationHours")
    raw_markdown_url_pattern: str | None = Field("{base}/{path}.md", alias="RawMarkdownUrlPattern")
    search_index_overrides: dict[str, str] = Field(default_factory=dict, alias="SearchIndexOverrides")
    cache: CacheSettings = Field(default_factory=CacheSettings, alias="Cache")
    warmup: WarmupSettings = Field(default_factory=WarmupSettings, alias="Warmup")
    search: SearchSettings = Field(default_factory=SearchSettings, alias="Search")
    site_retry_seconds: float = Field(30.0, alias="SiteRetrySeconds", ge=1)
    """A site whose index failed to load is tried again at most this often (with up to 20% jitter)."""
    unpublished_retry_seconds: float = Field(1800.0, alias="UnpublishedRetrySeconds", ge=1)
    """A site whose index the origin answers 404 for (not published yet) is rechecked only this often: by
    default the warm-up interval. A copy the warm-up stores is picked up sooner (see `Cache__CheckIntervalSeconds`)."""
    request_timeout_seconds: float = Field(30.0, alias="RequestTimeoutSeconds", gt=0)
    """One deadline for every search and get, over REST and MCP: past it the answer is `timeout` (504)."""
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

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only explicit arguments and the app settings: no .env files, no secrets directory."""
        return (init_settings, AppSettingsSource(settings_cls))

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

    @field_validator("search_index_overrides", mode="before")
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
        if value.strip().lower().startswith(ARTIFACTS_PREFIX):
            raise ValueError(f"must not start with {ARTIFACTS_PREFIX!r}: the cache keeps index artifacts there")
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
                if "/" in name or "#" in name or "?" in name:
                    raise ValueError(f"Sites: {name!r} is not a site name (no '/', '#' or '?')")
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
        for site in self.sites:
            if index_name(self.cache_file_name_template, site).lower().startswith(ARTIFACTS_PREFIX):
                raise ValueError(f"CacheFileNameTemplate: site {site!r} would be cached under {ARTIFACTS_PREFIX!r}")
        for number, rule in enumerate(self.search.path_weights.rules):
            if rule.site is not None and rule.site.lower() not in seen:
                raise ValueError(f"Search__PathWeights rule {number}: {rule.site!r} is not a configured site")
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
        """A site's base URL: `{Origin}/{site}`; there are no per-site base URLs."""
        return f"{self.origin}/{site}"

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


class AppSettingsSource(PydanticBaseSettingsSource):
    """Reads `Forge__Documentation__*` (nested on `__`, indexed lists) and the host's own `AzureWebJobsStorage` and
    `WEBSITE_HOSTNAME`."""

    def __init__(self, settings_cls: type[BaseSettings]) -> None:
        super().__init__(settings_cls)
        self._environ = _ENVIRON.get() or os.environ

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # __call__ builds the whole tree at once

    def __call__(self) -> dict[str, Any]:
        tree: dict[str, Any] = {}
        prefix = PREFIX.lower()
        for key, value in self._environ.items():
            lowered = key.lower()
            if lowered.startswith(prefix):
                path = key[len(PREFIX) :].split("__")
                # An empty app setting means "unset", except where the spec gives empty a meaning.
                if value.strip() or tuple(part.lower() for part in path) in _EMPTY_IS_MEANINGFUL:
                    _insert(tree, path, value)
            elif lowered == "azurewebjobsstorage":
                tree["azurewebjobsstorage"] = value
            elif lowered == "azurewebjobsstorage__blobserviceuri":
                tree["azurewebjobsstorageblobserviceuri"] = value
            elif lowered == "website_hostname" and value.strip():
                tree["website_hostname"] = value.strip()
            elif lowered == "applicationinsights_connection_string" and value.strip():
                tree["applicationinsights_connection_string"] = value.strip()
        return _with_aliases(tree, self.settings_cls)


def _insert(tree: dict[str, Any], path: list[str], value: str) -> None:
    node = tree
    for part in path[:-1]:
        child = node.setdefault(part.lower(), {})
        if not isinstance(child, dict):  # `Sites=a,b` and `Sites__0=c` together: the indexed form wins
            child = node[part.lower()] = {}
        node = child
    leaf = path[-1].lower()
    if not isinstance(node.get(leaf), dict):
        node[leaf] = value


def _with_aliases(tree: dict[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """Map case-insensitive keys onto the model's aliases, recursing into nested sections."""
    out: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        alias = field.alias or name
        value = tree.get(alias.lower())
        if value is None:
            continue
        section = section_model(field.annotation)
        if isinstance(value, dict) and section is not None:
            value = _with_aliases(value, section)
        out[alias] = value
    return out


def section_model(annotation: Any) -> type[BaseModel] | None:
    """The settings section a field holds, also when it is optional (`Section | None`); None for a plain value."""
    candidates = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


KEY_VAULT_REFERENCE = "@microsoft.keyvault("


def unresolved(secret: SecretStr | None) -> bool:
    """True when the secret is an App Service Key Vault reference that did not resolve (its literal text)."""
    return secret is not None and secret.get_secret_value().lstrip().lower().startswith(KEY_VAULT_REFERENCE)


RETIRED = {"Mcp__MaxContentChars": "Mcp__AnswerBudgetChars"}
"""Settings that no longer exist, and what took their place: one left set is said at start-up, not guessed at."""


def load_settings(environ: Mapping[str, str] | None = None) -> DocumentationSettings:
    """Build the settings from the environment, or fail with one message naming the key."""
    given = {key.lower() for key in (environ if environ is not None else os.environ)}
    for old, new in RETIRED.items():
        if (PREFIX + old).lower() in given:
            logging.getLogger(__name__).warning(
                "%s%s is no longer read: set %s%s instead (see docs/configuration.md)", PREFIX, old, PREFIX, new
            )
    try:
        token = _ENVIRON.set(environ)
        try:
            return DocumentationSettings()
        finally:
            _ENVIRON.reset(token)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = PREFIX + "__".join(str(part) for part in error["loc"] if not isinstance(part, int))
        message = str(error["msg"]).removeprefix("Value error, ")
        if not error["loc"]:
            key, _, message = (PREFIX + message).partition(": ")
        raise ConfigurationError(key, message) from None
