"""The sections of the settings (`Forge__Documentation__<Section>__*`), one model each: what every setting of a
section means, its default and the check it passes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from shared.settings.audiences import audience_names
from shared.settings.secrets import Secret, secret_list
from shared.settings.values import LOOPBACK_HOSTS, STORAGE_NAME, absolute_url, container_name, names


class _Section(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)


class CacheSettings(_Section):
    """`Forge__Documentation__Cache__*`: where the shared index cache lives."""

    container: str = Field("docs-index-cache", alias="Container")
    """Blob container for cached indexes (created if missing)."""
    connection_string: Annotated[SecretStr | None, Secret(5)] = Field(None, alias="ConnectionString")
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
        return container_name(value)


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


class RefreshSettings(_Section):
    """`Forge__Documentation__Refresh__*`: the publish hook (`POST /api/admin/refresh`) and its queue."""

    tokens: Annotated[tuple[SecretStr, ...], Secret(1)] = Field((), alias="Tokens")
    """Bearer tokens the publish hook POST /api/admin/refresh accepts, comma-separated (a secret: a Key Vault reference
    in Azure). Apart from Inbound__Tokens: a docs pipeline holds one and nothing that reads. Unset: the hook answers
    401 to every caller.

    The indexed form (`Tokens__0`, ...) is read too.
    """
    wait_seconds: float = Field(100.0, alias="WaitSeconds", gt=0, le=220)
    """How long the publish hook waits for its refresh before answering 202 with where to read the outcome (more than 0,
    at most 220: below the Functions front end's 230 s limit)."""
    queue_name: str = Field("", alias="QueueName")
    """Storage queue, in the account AzureWebJobsStorage's queue service names, that Event Grid drops the docs
    container's BlobCreated events of search indexes into; set, the Functions app reads it and refreshes the site whose
    index was written (the Bicep option refreshOnPublish sets it, in an account of its own). Empty: no queue trigger."""

    app_roles: tuple[str, ...] = Field((), alias="AppRoles")
    """With Entra sign-in (Auth__TenantId and Auth__Audience set): app roles, comma-separated, whose app-only tokens may
    also call the publish hook, such as Docs.Refresh for a pipeline's managed identity or workload identity instead
    of a shared Refresh__Tokens secret. Such a role grants no reading. Empty: only Refresh__Tokens."""

    @field_validator("tokens", mode="before")
    @classmethod
    def _tokens(cls, value: Any) -> Any:
        return secret_list(value)

    @field_validator("app_roles", mode="before")
    @classmethod
    def _roles(cls, value: Any) -> Any:
        return names(value)

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
    above the off-topic cluster, leaving margin for unseen on-topic queries. An answer ranked by terms alone holds
    a long question to a lower floor (`semantics.relevance_floor`).
    """
    path_weights: str | None = Field(None, alias="PathWeights", examples=[""])
    """Page-kind rules, a JSON list such as [{"pattern": "blog/", "weight": 0.5, "unless": ["blog"]}]; empty uses the
    built-in default (docs/configuration.md), [] restores the spec's ranking.

    Each rule is a `{"pattern", "weight", "unless", "when", "site"}` object: pages whose path matches its pattern
    have their score multiplied by its weight unless the query names that kind of page. The text is kept as given:
    the MkDocs provider parses and checks it at start-up (`mkdocs.indexes.kinds.configured`). The default
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

    Sentence embeddings of every entry (`providers/mkdocs/scoring/vectors.py`): about 8 ms of CPU per query on two
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
    api_key: Annotated[SecretStr | None, Secret(4)] = Field(None, alias="ApiKey")
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
    token: Annotated[SecretStr | None, Secret(2)] = Field(None, alias="Token")
    """Bearer token for the remote deployment, one of its Inbound__Tokens (a secret: a Key Vault reference in Azure).
    Wins over Remote__Scope."""
    scope: str | None = Field(None, alias="Scope")
    """Entra ID scope of the remote deployment (such as api://APP-ID/.default): without Remote__Token, a bearer token
    for it comes from the app's identity (Identity__ClientId), or locally from your own sign-in."""
    functions_key: Annotated[SecretStr | None, Secret(3)] = Field(None, alias="FunctionsKey")
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
        return names(value)

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

    tokens: Annotated[tuple[SecretStr, ...], Secret(0)] = Field((), alias="Tokens")
    """Bearer tokens this app accepts, comma-separated (a secret). When set, every /api/* route but /api/health requires
    Authorization: Bearer <one of them>; for hosts without Functions keys (a container, python -m shared serve on a
    shared machine). Unset: no check.

    The indexed form (`Tokens__0`, ...) is read too.
    """
    max_concurrent_per_client: int = Field(64, alias="MaxConcurrentPerClient", ge=1, le=10_000)
    """Requests one client (its connection's address; under the Functions host, the X-Forwarded-For entry its front end
    added: ForwardedHops) may have in flight at once on an instance; the next is answered 429 with Retry-After.

    So a client that holds requests open cannot take every worker.
    """
    forwarded_hops: int = Field(1, alias="ForwardedHops", ge=1, le=8)
    """Under the Functions host, which gives the app no peer address: which X-Forwarded-For entry, counted from the
    right, is the client (1: the one the platform's front end appended, the address that connected to it; 2 with one
    more proxy of your own in front, such as Front Door). Entries further left are written by the caller and never
    used.

    Only the throttles and the in-flight bound read it; a wrong value makes them coarser, never spoofable.
    """

    audience_tokens: Annotated[dict[str, tuple[SecretStr, ...]], Secret(7)] = Field(
        default_factory=dict, alias="AudienceTokens"
    )
    """Per audience (`Inbound__AudienceTokens__<audience>`): bearer tokens, comma-separated (a secret), that admit a
    caller holding that audience, who also reads the sites SiteAudiences gives it. A plain Inbound__Tokens token
    holds none."""

    @field_validator("tokens", mode="before")
    @classmethod
    def _tokens(cls, value: Any) -> Any:
        return secret_list(value)

    @field_validator("audience_tokens", mode="before")
    @classmethod
    def _audience_tokens(cls, value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise ValueError("set one key per audience: Inbound__AudienceTokens__<audience>")
        by_audience: dict[str, tuple[SecretStr, ...]] = {}
        for audience, tokens in value.items():
            (name,) = audience_names([audience], "AudienceTokens")
            by_audience[name] = by_audience.get(name, ()) + secret_list(tokens)
        return by_audience


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
        hosts = tuple(host.lower() for host in names(value))
        for host in hosts:
            if "/" in host or "://" in host:
                raise ValueError(f"{host!r} is not a host name (no scheme or path; a port may follow ':')")
        return hosts


class IdentitySettings(_Section):
    """`Forge__Documentation__Identity__*`: the app's managed identity, handed to every Azure credential."""

    client_id: str | None = Field(None, alias="ClientId")
    """Client id of the app's user-assigned managed identity, handed to every Azure credential (storage, AI Search,
    telemetry). Empty: system-assigned identity, or the developer's own sign-in locally."""
