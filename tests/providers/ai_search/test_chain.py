"""AI Search in the composed chain, over the MkDocs fixture origin: registered only when configured, answering first
with locations MkDocs serves for `get`, and every fault falling through to MkDocs, which then says so."""

from __future__ import annotations

from typing import Any

import pytest

from shared.cache import MemoryStore
from shared.compose import Composition, compose
from shared.models import Reason
from shared.requests import ReadRequest, SearchRequest
from shared.settings import DocumentationSettings
from tests.support.ai_search_server import AiSearchServer
from tests.support.sites import DEFAULT_SITE, ROOTED_OVERRIDE, fixture_settings
from tools.static_origin import StaticOrigin

BLOB = "https://acct.blob.core.windows.net/docs"
HITS = [
    {
        "@search.score": 8.0,
        "@search.rerankerScore": 3.2,
        "metadata_storage_path": f"{BLOB}/{DEFAULT_SITE}/guide/install/index.html",
        "title": "Install",
        "content": "Install the tool with pip, then configure it.",
    },
    {
        "@search.score": 6.5,
        "@search.rerankerScore": 2.4,
        "metadata_storage_path": f"{BLOB}/{DEFAULT_SITE}/guide/install.md",
        "title": "Install",
        "content": "# Install\n\nInstall the tool with pip.",
    },
    {
        "@search.score": 5.0,
        "metadata_storage_path": f"{BLOB}/beta-docs/api/authentication.md",
        "title": "Authentication",
        "content": "Tokens authenticate API calls.",
    },
]


def chain_settings(origin: StaticOrigin, server: AiSearchServer | None = None, **extra: str) -> DocumentationSettings:
    ai_search = server.app_settings(MkDocsSitePrefix=DEFAULT_SITE, **extra) if server else {}
    return fixture_settings(origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, **ai_search)


async def test_the_provider_is_registered_only_when_its_endpoint_is_set(
    static_origin: StaticOrigin, search_server: AiSearchServer
) -> None:
    without = chain_settings(static_origin)
    sections_only = fixture_settings(static_origin.url, AiSearch__IndexName="docs")
    with_endpoint = chain_settings(static_origin, search_server)

    async with compose(without, embedding=None, store=MemoryStore()) as composed:
        assert [p.name for p in composed.service.providers] == ["mkdocs"]
    async with compose(sections_only, embedding=None, store=MemoryStore()) as composed:
        assert [p.name for p in composed.service.providers] == ["mkdocs"]
    async with compose(with_endpoint, embedding=None, store=MemoryStore()) as composed:
        assert [p.name for p in composed.service.providers] == ["ai_search", "mkdocs"]
        entry = composed.health().providers["ai_search"]
        assert entry.order == 0 and entry.fetch is False and entry.health.status == "ok"
        assert entry.health.authentication == "api-key"  # type: ignore[attr-defined]
    assert search_server.searches() == []  # composing asks nothing


async def test_ai_search_answers_first_and_mkdocs_serves_its_locations(
    static_origin: StaticOrigin, search_server: AiSearchServer
) -> None:
    search_server.respond(HITS)
    async with compose(chain_settings(static_origin, search_server), embedding=None, store=MemoryStore()) as c:
        response = await c.service.search(SearchRequest("install the tool", limit=5))
        documents = [await c.service.get(ReadRequest(result.location)) for result in response.results]

    assert response.provider == "ai_search"
    assert [r.location for r in response.results] == ["guide/install", "beta-docs/api/authentication"]
    assert [(d.provider, d.site, d.location) for d in documents] == [
        ("mkdocs", DEFAULT_SITE, "guide/install/"),
        ("mkdocs", "beta-docs", "beta-docs/api/authentication/"),
    ]
    assert all(d.resolution.reason is Reason.RESOLVED and d.content for d in documents)
    [sent] = search_server.searches()
    assert sent.body["top"] == 10 and sent.body["queryType"] == "semantic"


@pytest.mark.parametrize(
    ("respond", "kind"),
    [
        ({"status": 403}, "unauthorized"),
        ({"status": 500}, "status"),
        ({"raw": b"{not json"}, "malformed"),
        ({"hits": HITS, "delay": 10.0}, "timeout"),
    ],
    ids=["403", "500", "malformed", "timeout"],
)
async def test_every_fault_falls_through_to_mkdocs_and_health_says_why(
    static_origin: StaticOrigin, search_server: AiSearchServer, respond: dict[str, object], kind: str
) -> None:
    search_server.respond(**respond)  # type: ignore[arg-type]
    settings = chain_settings(static_origin, search_server, TimeoutSeconds="0.5")
    async with compose(settings, embedding=None, store=MemoryStore()) as composed:
        response = await composed.service.search(SearchRequest("install", limit=5))
        health = composed.health()

    assert response.provider == "mkdocs" and response.results
    assert all(result.provider == "mkdocs" for result in response.results)
    assert health.status == "degraded"
    report = health.providers["ai_search"].health
    assert report.status == "degraded" and report.last_error.kind == kind  # type: ignore[attr-defined]
    assert len(search_server.searches()) == 1


async def test_a_forbidden_key_is_reported_as_unauthorized(
    static_origin: StaticOrigin, search_server: AiSearchServer
) -> None:
    settings = chain_settings(static_origin, search_server)
    search_server.api_key = "rotated"
    async with compose(settings, embedding=None, store=MemoryStore()) as composed:
        response = await composed.service.search(SearchRequest("install", limit=5))
        error = composed.health().providers["ai_search"].health.last_error  # type: ignore[attr-defined]

    assert response.provider == "mkdocs"
    assert error.kind == "unauthorized" and error.status == 403


async def test_a_dead_endpoint_falls_through_to_mkdocs(static_origin: StaticOrigin) -> None:
    settings = fixture_settings(
        static_origin.url,
        SearchIndexOverrides=ROOTED_OVERRIDE,
        AiSearch__Endpoint="http://127.0.0.1:9",
        AiSearch__ApiKey="k",
    )
    async with compose(settings, embedding=None, store=MemoryStore()) as composed:
        response = await composed.service.search(SearchRequest("install", limit=5))
        error = composed.health().providers["ai_search"].health.last_error  # type: ignore[attr-defined]

    assert response.provider == "mkdocs" and response.results
    assert error.kind == "unreachable"


async def test_a_site_search_without_a_site_field_is_left_to_mkdocs(
    static_origin: StaticOrigin, search_server: AiSearchServer
) -> None:
    search_server.respond(HITS)
    async with compose(chain_settings(static_origin, search_server), embedding=None, store=MemoryStore()) as c:
        response = await c.service.search(SearchRequest("authentication", limit=5, site="beta-docs"))
        health = c.health()

    assert response.provider == "mkdocs" and {r.site for r in response.results} == {"beta-docs"}
    assert search_server.searches() == []
    assert health.providers["ai_search"].health.status == "ok"


async def test_a_site_search_with_a_site_field_is_filtered_by_ai_search(
    static_origin: StaticOrigin, search_server: AiSearchServer
) -> None:
    search_server.respond(HITS[2:])
    settings = chain_settings(static_origin, search_server, SiteField="site")
    async with compose(settings, embedding=None, store=MemoryStore()) as composed:
        response = await composed.service.search(SearchRequest("authentication", limit=5, site="BETA-docs"))

    assert response.provider == "ai_search"
    assert [r.location for r in response.results] == ["beta-docs/api/authentication"]
    assert search_server.searches()[0].body["filter"] == "site eq 'beta-docs'"


async def test_an_empty_answer_falls_through_as_no_match(
    static_origin: StaticOrigin, search_server: AiSearchServer
) -> None:
    search_server.respond([])
    async with compose(chain_settings(static_origin, search_server), embedding=None, store=MemoryStore()) as c:
        response = await c.service.search(SearchRequest("install", limit=5))
        health = c.health()

    assert response.provider == "mkdocs"
    assert health.providers["ai_search"].health.status == "ok"


# -- the handover: MkDocs keeps what resolution and get need until a search falls through to it


def site_states(composed: Composition) -> dict[str, Any]:
    return composed.health().providers["mkdocs"].health.sites  # type: ignore[attr-defined, no-any-return]


async def test_with_ai_search_answering_mkdocs_defers_its_search_structures_until_a_search_falls_through(
    static_origin: StaticOrigin, search_server: AiSearchServer
) -> None:
    search_server.respond(HITS)
    async with compose(chain_settings(static_origin, search_server), embedding=None, store=MemoryStore()) as c:
        answered = await c.service.search(SearchRequest("install the tool", limit=5))
        page = await c.service.get(ReadRequest(answered.results[0].location))
        deferred = site_states(c)
        registry = c.service.providers[1]._registry  # type: ignore[attr-defined]
        held = registry.current(DEFAULT_SITE)

        search_server.respond([])  # AI Search has nothing: the search falls through to MkDocs
        fallen = await c.service.search(SearchRequest("install the tool", limit=5))
        built = site_states(c)

    assert answered.provider == "ai_search" and page.provider == "mkdocs" and page.content
    assert deferred[DEFAULT_SITE].state == "loaded" and deferred[DEFAULT_SITE].ranking == "deferred"
    assert deferred[DEFAULT_SITE].ranker == "deferred" and "falls through" in str(deferred[DEFAULT_SITE].why)
    assert held is not None and held.ranker is None  # resolution and get ran on the index alone
    assert fallen.provider == "mkdocs" and fallen.results
    assert built[DEFAULT_SITE].ranking == "lexical" and built[DEFAULT_SITE].ranker == "built"


async def test_without_a_provider_ahead_mkdocs_builds_its_search_structures_with_the_index(
    static_origin: StaticOrigin,
) -> None:
    async with compose(chain_settings(static_origin), embedding=None, store=MemoryStore()) as c:
        await c.service.get(ReadRequest("guide/install"))
        states = site_states(c)
    assert states[DEFAULT_SITE].ranker == "built"


CODE_HITS = [
    {
        "@search.score": 7.0,
        "metadata_storage_path": f"{BLOB}/{DEFAULT_SITE}/guide/install.md",
        "title": "Install",
        "content": "sudo apt-get install alpha-agent\nalpha status",
        "language": "sh",
    },
    {
        "@search.score": 6.0,
        "metadata_storage_path": f"{BLOB}/{DEFAULT_SITE}/guide/configuration.md",
        "title": "Configuration",
        "content": "agent:\n  port: 8080",
    },
]


async def test_a_code_search_passes_over_ai_search_unless_it_marks_code_chunks(
    static_origin: StaticOrigin, search_server: AiSearchServer
) -> None:
    search_server.respond(CODE_HITS)
    async with compose(chain_settings(static_origin, search_server), embedding=None, store=MemoryStore()) as c:
        response = await c.service.search(SearchRequest("install the agent", limit=5, kind="code"))
    assert response.provider == "mkdocs" and response.results
    assert all(result.code is not None for result in response.results)
    assert search_server.searches() == []  # never asked: it holds no code chunks it could tell apart

    settings = chain_settings(static_origin, search_server, CodeFilter="chunk_kind eq 'code'", LanguageField="language")
    async with compose(settings, embedding=None, store=MemoryStore()) as c:
        coded = await c.service.search(SearchRequest("install the agent", limit=5, kind="code", language="shell"))
    assert coded.provider == "ai_search"
    first, second = coded.results
    assert first.code is not None and first.code.language == "bash" and first.language_guessed is False
    assert first.code.text == "sudo apt-get install alpha-agent\nalpha status" and first.location == "guide/install"
    assert second.code is not None and second.code.language == "yaml" and second.language_guessed is True
    [sent] = search_server.searches()
    assert sent.body["filter"] == "(chunk_kind eq 'code') and language eq 'bash'"
    assert "language" in sent.body["select"]
