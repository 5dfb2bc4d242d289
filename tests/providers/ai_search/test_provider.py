"""The real SDK client against a local server that speaks the AI Search REST protocol: what the provider sends,
how it maps a realistic answer, and how each fault becomes an AiSearchError that health remembers."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import AsyncIterator

import pytest
from azure.core.credentials import AccessToken, AzureKeyCredential

from shared.deadline import budget
from shared.errors import ProviderDeclinedError, ProviderError
from shared.providers.ai_search import AiSearchError, AiSearchProvider
from shared.providers.ai_search.provider import odata_string
from shared.requests import ReadRequest, SearchRequest
from shared.settings import PREFIX, DocumentationSettings, load_settings
from tests.support.ai_search_server import AiSearchServer

BLOB = "https://acct.blob.core.windows.net/docs"
SITES = "forge,cloud-foundations"

REALISTIC = [
    {
        "@search.score": 12.43,
        "@search.rerankerScore": 2.871,
        "@search.captions": [{"text": "Install the CLI with pipx.", "highlights": "<em>Install</em> the CLI"}],
        "metadata_storage_path": f"{BLOB}/forge/guide/install/index.html",
        "title": "Install - Forge",
        "content": "Skip to content\n\n  Forge\n  Guide\n\n Install\n\nInstall the CLI with pipx, then run login.",
        "description": "Forge: the platform's developer portal.",
    },
    {
        "@search.score": 9.1,
        "@search.rerankerScore": 2.05,
        "@search.captions": None,
        "metadata_storage_path": f"{BLOB}/cloud-foundations/networking/hub.md",
        "title": None,
        "content": None,
        "description": "Hub networking for landing zones.",
    },
    {"@search.score": 4.2, "metadata_storage_path": f"{BLOB}/forge/faq.md"},
]


def settings_for(server: AiSearchServer, **extra: str) -> DocumentationSettings:
    env = {f"{PREFIX}{key}": value for key, value in server.app_settings(**extra).items()}
    return load_settings({**env, f"{PREFIX}Sites": SITES})


@pytest.fixture
async def provider(search_server: AiSearchServer) -> AsyncIterator[AiSearchProvider]:
    opened = build(settings_for(search_server))
    yield opened
    await opened.aclose()


def build(settings: DocumentationSettings) -> AiSearchProvider:
    assert settings.ai_search is not None and settings.ai_search.api_key is not None
    key = AzureKeyCredential(settings.ai_search.api_key.get_secret_value())
    return AiSearchProvider(settings.ai_search, sites=settings.sites, credential=key)


async def test_a_search_is_one_semantic_query_with_the_configuration_top_and_no_filter(
    provider: AiSearchProvider, search_server: AiSearchServer
) -> None:
    search_server.respond(REALISTIC)

    await provider.search(SearchRequest("how do I install the cli", limit=7))

    [sent] = search_server.searches()
    assert sent.method == "POST" and sent.path == "/indexes('saif-docs')/docs/search.post.search"
    assert sent.params["api-version"] and sent.headers["api-key"] == search_server.api_key
    assert sent.body["search"] == "how do I install the cli"
    assert sent.body["queryType"] == "semantic"
    assert sent.body["semanticConfiguration"] == "docs-semantic"
    assert sent.body["top"] == 14  # twice the limit without a filter: the .md twins dropped still leave 7
    assert "filter" not in sent.body
    assert sent.body["select"] == "metadata_storage_path,title,content,description"


@pytest.mark.parametrize("configured", ["", "   ", "\t\n"])
async def test_a_blank_search_filter_sends_no_filter(search_server: AiSearchServer, configured: str) -> None:
    provider = build(settings_for(search_server, SearchFilter=configured))
    try:
        await provider.search(SearchRequest("install", limit=5))
    finally:
        await provider.aclose()

    assert "filter" not in search_server.searches()[0].body


async def test_the_configured_filter_and_names_are_sent_as_given(search_server: AiSearchServer) -> None:
    search_server.index = "other-index"
    settings = settings_for(
        search_server,
        IndexName="other-index",
        SemanticConfigurationName="sem",
        SearchFilter=" format eq '.html' ",
        UrlField="path",
        ContentField="body",
        TitleField="heading",
        DescriptionField="summary",
    )
    provider = build(settings)
    search_server.respond([{"path": f"{BLOB}/forge/a.html", "heading": "A", "body": "alpha text", "@search.score": 1}])
    try:
        results = (await provider.search(SearchRequest("alpha", limit=3))).results
    finally:
        await provider.aclose()

    [sent] = search_server.searches()
    assert sent.path == "/indexes('other-index')/docs/search.post.search"
    assert (sent.body["filter"], sent.body["semanticConfiguration"]) == ("format eq '.html'", "sem")
    assert sent.body["select"] == "path,heading,body,summary"
    assert [(r.location, r.title, r.preview_text) for r in results] == [("a", "A", "alpha text")]


async def test_a_realistic_answer_is_mapped_as_the_spec_says(
    provider: AiSearchProvider, search_server: AiSearchServer
) -> None:
    search_server.respond(REALISTIC)

    found = await provider.search(SearchRequest("install cli", limit=10))
    results = found.results

    assert [(r.location, r.site, r.url, r.score) for r in results] == [
        ("guide/install", "forge", "https://docs.saif.com/forge/guide/install/", 2.871),
        (
            "cloud-foundations/networking/hub",
            "cloud-foundations",
            "https://docs.saif.com/cloud-foundations/networking/hub.md",
            2.05,
        ),
        ("faq", "forge", "https://docs.saif.com/forge/faq.md", 4.2),
    ]
    first, second, third = results
    assert first.title == "Install - Forge" and "Install the CLI with pipx" in first.preview_text
    assert "developer portal" not in first.preview_text  # the description only when the content gives nothing
    assert (second.title, second.preview_text) == ("hub", "Hub networking for landing zones.")
    assert (third.title, third.preview_text) == ("faq", "")
    assert {r.provider for r in results} == {"ai_search"}
    # The service cannot say when it indexed a page: every site in scope searched, no time claimed.
    assert {r.indexed_at for r in results} == {None}
    assert {site: (state.state.value, state.indexed_at) for site, state in (found.sites or {}).items()} == {
        site: ("searched", None) for site in provider.sites
    }


async def test_site_searches_filter_on_the_site_field_with_the_configured_filter(
    search_server: AiSearchServer,
) -> None:
    provider = build(settings_for(search_server, SiteField="site", SearchFilter="format eq '.html'"))
    unfiltered = build(settings_for(search_server, SiteField="site"))
    try:
        await provider.search(SearchRequest("install", limit=5, site="cloud-foundations"))
        await unfiltered.search(SearchRequest("install", limit=5, site="forge"))
        await unfiltered.search(SearchRequest("install", limit=5))
    finally:
        await provider.aclose()
        await unfiltered.aclose()

    filters = [sent.body.get("filter") for sent in search_server.searches()]
    assert filters == ["(format eq '.html') and site eq 'cloud-foundations'", "site eq 'forge'", None]
    assert provider.sites == ("forge", "cloud-foundations")


async def test_with_a_version_field_a_version_is_filtered_on_and_carried(search_server: AiSearchServer) -> None:
    url = "https://docs.saif.com/vdocs/2.0/guide/install/index.html"
    search_server.respond(hits=[{"metadata_storage_path": url, "title": "Install", "ver": "2.0", "@search.score": 1}])
    provider = build(settings_for(search_server, SiteField="site", VersionField="ver"))
    plain = build(settings_for(search_server))
    try:
        found = (await provider.search(SearchRequest("install", limit=5, site="forge", version="2.0"))).results
    finally:
        await provider.aclose()
        await plain.aclose()

    sent = search_server.searches()[0].body
    assert sent["filter"] == "(site eq 'forge') and ver eq '2.0'" and "ver" in sent["select"].split(",")
    assert (found[0].version, found[0].location) == ("2.0", "vdocs/2.0/guide/install")
    assert (
        provider.capabilities.versions and not plain.capabilities.versions
    )  # without the field, the chain passes it over


def test_site_values_are_escaped_as_odata_strings() -> None:
    assert odata_string("o'brien") == "'o''brien'"
    assert odata_string("x' or true or 'a") == "'x'' or true or ''a'"


async def test_without_a_site_field_a_site_search_is_declined_without_a_request(
    provider: AiSearchProvider, search_server: AiSearchServer
) -> None:
    with pytest.raises(ProviderDeclinedError):
        await provider.search(SearchRequest("install", limit=5, site="forge"))

    assert search_server.searches() == []
    assert provider.sites == ("forge", "cloud-foundations")
    assert provider.health().status == "ok"


async def test_the_listing_query_is_declined_without_a_request(
    provider: AiSearchProvider, search_server: AiSearchServer
) -> None:
    with pytest.raises(ProviderDeclinedError):
        await provider.search(SearchRequest(" * ", limit=5))

    assert search_server.searches() == []


async def test_it_never_fetches(provider: AiSearchProvider) -> None:
    assert (provider.name, provider.order, provider.capabilities.fetch) == ("ai_search", 0, False)
    with pytest.raises(ProviderDeclinedError):
        await provider.get(ReadRequest("guide/install"))


@pytest.mark.parametrize(
    ("respond", "kind", "status"),
    [
        ({"status": 500}, "status", 500),
        ({"status": 503}, "status", 503),
        ({"raw": b"<html>gateway error</html>"}, "malformed", 200),
        ({"raw": b'{"value": "not a list"}'}, "malformed", None),
        ({"raw": b'{"value": [1, 2]}'}, "malformed", None),
    ],
    ids=["500", "503", "html body", "value not a list", "hits not objects"],
)
async def test_each_fault_is_an_ai_search_error_that_health_reports(
    provider: AiSearchProvider,
    search_server: AiSearchServer,
    respond: dict[str, object],
    kind: str,
    status: int | None,
) -> None:
    search_server.respond(**respond)  # type: ignore[arg-type]

    with pytest.raises(AiSearchError) as raised:
        await provider.search(SearchRequest("install", limit=5))

    assert isinstance(raised.value, ProviderError)
    assert (raised.value.kind, raised.value.status) == (kind, status)
    assert raised.value.__cause__ is not None
    health = provider.health()
    assert health.status == "degraded"
    assert health.last_error is not None and health.last_error.kind == kind
    assert len(search_server.searches()) == 1  # never retried: the next provider is the retry

    search_server.respond(REALISTIC)
    assert await provider.search(SearchRequest("install", limit=5))
    health = provider.health()
    assert health.status == "ok" and health.last_error is not None and health.last_error.kind == kind


async def test_a_wrong_key_is_unauthorized(search_server: AiSearchServer) -> None:
    settings = settings_for(search_server)
    assert settings.ai_search is not None
    provider = AiSearchProvider(settings.ai_search, sites=settings.sites, credential=AzureKeyCredential("wrong"))
    try:
        with pytest.raises(AiSearchError) as raised:
            await provider.search(SearchRequest("install", limit=5))
    finally:
        await provider.aclose()

    assert (raised.value.kind, raised.value.status) == ("unauthorized", 403)
    assert raised.value.details == {"error": "AiSearchError", "kind": "unauthorized", "status": "403"}


async def test_a_slow_answer_times_out_after_timeout_seconds(search_server: AiSearchServer) -> None:
    provider = build(settings_for(search_server, TimeoutSeconds="0.3"))
    search_server.respond(REALISTIC, delay=10)
    started = time.monotonic()
    try:
        with pytest.raises(AiSearchError) as raised:
            await provider.search(SearchRequest("install", limit=5))
    finally:
        await provider.aclose()

    assert raised.value.kind == "timeout" and raised.value.details == {"error": "timeout"}
    assert time.monotonic() - started < 5  # far below the 10 s the server would have taken
    error = provider.health().last_error
    assert error is not None and error.kind == "timeout"


async def test_the_requests_deadline_bounds_the_call_when_it_is_sooner(search_server: AiSearchServer) -> None:
    provider = build(settings_for(search_server, TimeoutSeconds="60"))
    search_server.respond(REALISTIC, delay=10)
    started = time.monotonic()
    try:
        with budget(0.5), pytest.raises(AiSearchError) as raised:
            await provider.search(SearchRequest("install", limit=5))
        with budget(0.0), pytest.raises(AiSearchError) as spent:
            await provider.search(SearchRequest("install", limit=5))
    finally:
        await provider.aclose()

    assert raised.value.kind == spent.value.kind == "timeout"
    assert time.monotonic() - started < 5
    assert len(search_server.searches()) == 1  # a spent deadline sends nothing


async def test_an_unreachable_service_is_unreachable() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens on it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = load_settings(
        {f"{PREFIX}AiSearch__Endpoint": f"http://127.0.0.1:{port}", f"{PREFIX}AiSearch__ApiKey": "k"}
    )
    provider = build(settings)
    try:
        with pytest.raises(AiSearchError) as raised:
            await provider.search(SearchRequest("install", limit=5))
    finally:
        await provider.aclose()

    assert raised.value.kind == "unreachable"
    assert provider.health().endpoint == f"127.0.0.1:{port}"


class FakeTokenCredential:
    """An async token credential that hands out a fixed token and records being closed."""

    def __init__(self) -> None:
        self.closed = 0
        self.asked = 0

    async def get_token(self, *scopes: str, **kwargs: object) -> AccessToken:
        self.asked += 1
        return AccessToken("token", int(time.time()) + 3600)

    async def close(self) -> None:
        self.closed += 1

    async def __aenter__(self) -> FakeTokenCredential:
        return self

    async def __aexit__(self, *args: object) -> None:
        await self.close()


async def test_the_provider_closes_the_credential_it_was_given(search_server: AiSearchServer) -> None:
    settings = settings_for(search_server)
    assert settings.ai_search is not None
    token = FakeTokenCredential()
    provider = AiSearchProvider(settings.ai_search, sites=settings.sites, credential=token)  # type: ignore[arg-type]

    health = provider.health()
    await provider.aclose()

    assert token.closed == 1 and token.asked == 0
    assert health.authentication == "entra-id"


async def test_health_shows_configuration_but_never_the_key(
    provider: AiSearchProvider, search_server: AiSearchServer
) -> None:
    health = provider.health()

    assert health.status == "ok" and health.last_success_at is None and health.last_error is None
    assert health.authentication == "api-key"
    assert health.endpoint == search_server.url.removeprefix("http://")
    assert (health.index, health.semantic_configuration, health.filter) == ("saif-docs", "docs-semantic", False)
    assert search_server.api_key not in repr(health)


async def test_nothing_logged_at_debug_holds_the_query_or_the_key(
    search_server: AiSearchServer, caplog: pytest.LogCaptureFixture
) -> None:
    marker = "zqxmarker"
    query = f"install {marker} token"
    search_server.api_key = f"key-{marker}"
    provider = build(settings_for(search_server))
    caplog.set_level(logging.DEBUG)
    for name in ("azure", "azure.core.pipeline.policies.http_logging_policy", "shared"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        search_server.respond(REALISTIC)
        await provider.search(SearchRequest(query, limit=5))
        search_server.respond(status=500)
        with pytest.raises(AiSearchError):
            await provider.search(SearchRequest(query, limit=5))
    finally:
        await provider.aclose()
        for name in ("azure", "azure.core.pipeline.policies.http_logging_policy", "shared"):
            logging.getLogger(name).setLevel(logging.NOTSET)

    assert any(record.name.startswith("azure") for record in caplog.records)
    assert any(f"query length {len(query)}, 3 terms" in record.getMessage() for record in caplog.records)
    assert not [record.getMessage() for record in caplog.records if marker in record.getMessage()]


async def test_with_a_filter_a_search_asks_for_exactly_the_limit(search_server: AiSearchServer) -> None:
    filtered = build(settings_for(search_server, SearchFilter="format eq '.html'"))
    search_server.respond(REALISTIC)
    try:
        await filtered.search(SearchRequest("install", limit=7))
    finally:
        await filtered.aclose()
    [sent] = search_server.searches()
    assert sent.body["top"] == 7 and sent.body["filter"] == "format eq '.html'"
