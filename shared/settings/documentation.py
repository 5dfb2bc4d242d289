"""Every setting the service reads, in one model: the top-level settings, the sections they hold, and the checks
that span them (sites, their index overrides and cache names).

A setting is one field: its docstring's first paragraph is what an operator reads, in the sample settings and the
Bicep that `tools/settings_artifacts.py` generates from this model (`examples` gives a sample value other than the
default); the rest of the docstring says why.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from shared.settings.audiences import AudiencesSettings, checked_site_audiences, parse_site_audiences
from shared.settings.insights import InsightsSettings
from shared.settings.secrets import unresolved_keys
from shared.settings.sections import (
    AiSearchSettings,
    AuthSettings,
    CacheSettings,
    IdentitySettings,
    InboundSettings,
    McpSettings,
    RefreshSettings,
    RemoteSettings,
    SearchSettings,
    WarmupSettings,
)
from shared.settings.site_map import IndexPolicy, SiteMap, SiteTimings
from shared.settings.source import PREFIX
from shared.settings.values import json_object
from shared.site_key import SEPARATOR

DEFAULT_SITES = ("forge", "cloud-foundations", "iac-azure-modules", "iac-okta-modules", "iac-aws-modules")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_RAW_PLACEHOLDERS = {"base", "path", "site", "origin"}
EMBEDDINGS_PREFIX = "embeddings/"
"""Where the cache keeps embeddings (each site's vectors, the encoder's rewritten graph: `shared.cache.names`)."""
DERIVED_PREFIX = "derived/"
"""Where the cache keeps what else it derives from indexes (prebuilt rankers, missing-page records, refresh runs)."""
RESERVED_PREFIXES = (EMBEDDINGS_PREFIX, DERIVED_PREFIX)
"""Defined here, because a cache file name template that reaches under one is refused at start-up."""


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
    site_audiences: dict[str, tuple[str, ...]] = Field(
        default_factory=dict, alias="SiteAudiences", examples=['{"security-runbooks": ["security"]}']
    )
    """JSON object: site -> the audiences that may read it; a site not named is open to every admitted caller. A
    caller's audiences come from its token (Inbound__AudienceTokens__<audience>), its Entra app roles
    (Docs.Audience.<audience>) or Audiences__Default (docs/audiences.md)."""
    audiences: AudiencesSettings = Field(default_factory=AudiencesSettings, alias="Audiences")
    warm_versions: int = Field(2, alias="WarmVersions", ge=0, le=50)
    """Versions of each versioned site the warm-up keeps warm besides its default: the newest ones listed (hidden
    ones aside). The others are loaded the first time a request names them."""
    max_index_entries: int = Field(50_000, alias="MaxIndexEntries", ge=100, le=1_000_000)
    """A site's search index with more entries than this is refused with the reason (health shows it), counted before
    it is parsed. Loading 50,000 short entries peaks about 134 MB above the process (tools/index-memory-latest.txt);
    the sample's largest site has 3,730."""
    max_index_megabytes: float = Field(16.0, alias="MaxIndexMegabytes", gt=0, le=64)
    """A site's search index larger than this (MB) is refused with the reason, read no further. Loading peaks at about
    9 MB per MB of real documentation and up to 28 MB per MB of text made of short distinct words (the worst measured:
    tools/index-memory-latest.txt), so at 16 MB one site costs at most about 450 MB and cannot take a 2 GB instance
    down; the sample's largest site is 3.3 MB."""
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
    insights: InsightsSettings = Field(default_factory=InsightsSettings, alias="Insights")
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
        return json_object(value, "a site to its index path")

    @field_validator("site_audiences", mode="before")
    @classmethod
    def _audiences(cls, value: Any) -> Any:
        return parse_site_audiences(value)

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
                if "/" in name or "#" in name or "?" in name or SEPARATOR in name:
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
        object.__setattr__(self, "site_audiences", checked_site_audiences(self.site_audiences, seen, default))
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

    @cached_property
    def site_map(self) -> SiteMap:
        """Where each site is published (`SiteMap`): what the parts that ask the origin take, not these settings."""
        return SiteMap(
            origin=self.origin,
            sites=self.sites,
            default_site=self.default_site,
            search_index_path=self.search_index_path,
            overrides=self.search_index_overrides,
        )

    @cached_property
    def index_policy(self) -> IndexPolicy:
        """How a site's index is taken and bounded (`IndexPolicy`)."""
        return IndexPolicy(
            sites=self.site_map,
            cache_hours=self.cache_duration_hours,
            file_name_template=self.cache_file_name_template,
            max_entries=self.max_index_entries,
            max_megabytes=self.max_index_megabytes,
        )

    @cached_property
    def site_timings(self) -> SiteTimings:
        """How often sites are checked and retried, and how long a request waits for one (`SiteTimings`)."""
        return SiteTimings(
            check_interval=self.cache.check_interval_seconds,
            site_wait=self.search.site_wait_seconds,
            retry=self.site_retry_seconds,
            unpublished_retry=self.unpublished_retry_seconds,
        )

    def base_url(self, site: str) -> str:
        """`SiteMap.base_url`."""
        return self.site_map.base_url(site)

    def index_url(self, site: str) -> str:
        """`SiteMap.index_url`."""
        return self.site_map.index_url(site)

    def unresolved_secrets(self) -> tuple[str, ...]:
        """The secret settings whose value is still a Key Vault reference (`@Microsoft.KeyVault(...)`): App Service
        passes the reference text itself when it cannot resolve it (before the identity's role propagates, a secret
        deleted or disabled). Such a value is never used as the secret: what it guards fails closed.

        The secret settings are the fields marked `Secret` (`shared.settings.secrets`), in their markers' order."""
        return unresolved_keys(self, PREFIX)

    def site_named(self, name: str) -> str | None:
        """`SiteMap.site_named`."""
        return self.site_map.site_named(name)
