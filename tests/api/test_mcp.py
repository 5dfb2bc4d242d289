"""The MCP endpoint with the official MCP client, against the app under uvicorn over the MkDocs fixture origin:
the handshake, the tools as agents see them, search then get, failures as readable tool errors, and the Host
checks that keep DNS rebinding out."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import httpx2
import jsonschema
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from shared.api import create_app
from shared.api.mcp.server import ago
from shared.validation import MAX_QUERY_LENGTH
from tests.api.test_mcp_revisions import LEGACY, MODERN, call, result_of
from tests.support.mcp_wire import INITIALIZE, MCP_HEADERS
from tests.support.sites import PUBLISHED_SITES, ROOTED_OVERRIDE, SITES, TASK, fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin


@pytest.fixture
def server(static_origin: StaticOrigin) -> Iterator[UvicornServer]:
    settings = fixture_settings(
        static_origin.url,
        SearchIndexOverrides=ROOTED_OVERRIDE,
        Search__Semantic="false",
        Mcp__AllowedHosts="docs.example.com",
    )
    with UvicornServer(create_app(settings)) as running:
        yield running


@asynccontextmanager
async def session(url: str) -> AsyncIterator[ClientSession]:
    async with (
        streamable_http_client(url + "/api/mcp") as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        yield client


def text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


async def test_the_tools_are_listed_for_agents(server: UvicornServer) -> None:
    async with session(server.url) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    assert set(tools) == {"search_docs", "get_doc", "list_versions"}
    search, get = tools["search_docs"], tools["get_doc"]
    assert search.annotations is not None and search.annotations.read_only_hint is True
    assert get.annotations is not None and get.annotations.read_only_hint is True
    properties = search.input_schema["properties"]
    assert search.input_schema["required"] == ["query"]
    assert properties["site"]["anyOf"][0]["enum"] == list(SITES)  # an agent can discover the sites
    assert (properties["limit"]["minimum"], properties["limit"]["maximum"]) == (1, 50)
    assert get.input_schema["required"] == ["location"]
    assert search.output_schema is not None and "results" in search.output_schema["anyOf"][0]["properties"]
    assert get.output_schema is not None and "content" in get.output_schema["anyOf"][0]["properties"]
    assert get.output_schema["anyOf"][1]["required"] == ["error"]  # tool errors are structured too
    assert list(get.input_schema["properties"]) == ["location", "section", "offset", "maxChars", "view", "version"]
    assert search.description is not None and "get_doc" in search.description and "empty" in search.description


TOOL_LIST_CHARS = 14_000
"""What `tools/list` may cost a client's context and its per-call validation, in either revision (#54)."""


@pytest.mark.parametrize("era", [MODERN, LEGACY])
def test_the_tool_list_is_small_and_every_answer_validates_against_its_output_schema(
    server: UvicornServer, era: str
) -> None:
    listed = call(server.url, era, "tools/list")
    schemas = {tool["name"]: tool["outputSchema"] for tool in result_of(listed)["tools"]}
    answers = {
        "search_docs": [{"query": "install"}, {"query": "install", "kind": "code"}, {"query": "x", "limit": 0}],
        "get_doc": [{"location": "guide/install"}, {"location": "guide/install", "view": "outline"}, {"location": "x"}],
        "list_versions": [{"site": SITES[0]}],
    }

    assert len(json.dumps(result_of(listed), separators=(",", ":"))) <= TOOL_LIST_CHARS
    for name, calls in answers.items():
        for arguments in calls:
            answer = result_of(call(server.url, era, "tools/call", {"name": name, "arguments": arguments}))
            assert "structuredContent" in answer, (name, arguments)
            jsonschema.validate(answer["structuredContent"], schemas[name])


async def test_search_then_get_the_first_location(server: UvicornServer) -> None:
    async with session(server.url) as client:
        found = await client.call_tool("search_docs", {"query": "install the agent", "limit": 3})
        assert not found.is_error and found.structured_content is not None
        results = found.structured_content["results"]
        got = await client.call_tool("get_doc", {"location": results[0]["location"]})
        narrowed = await client.call_tool("search_docs", {"query": "authentication", "site": "BETA-DOCS"})

    assert found.structured_content["provider"] == "mkdocs" and 1 <= len(results) <= 3
    assert {"location", "title", "url", "site", "previewText", "score", "breadcrumb"} <= set(results[0])
    rendering = text(found)
    assert results[0]["location"] in rendering and "get_doc" in rendering
    assert f"Freshness: {results[0]['site']} index fetched just now" in rendering  # in words, for the agent
    assert results[0]["indexedAt"] and got.structured_content is not None and got.structured_content["indexedAt"]
    assert not got.is_error and got.structured_content is not None
    assert got.structured_content["location"] == results[0]["location"]
    assert got.structured_content["resolution"]["reason"] == "resolved"
    assert text(got) == got.structured_content["content"] and text(got).startswith("---\nsource: ")
    assert narrowed.structured_content is not None
    assert {hit["site"] for hit in narrowed.structured_content["results"]} == {"beta-docs"}


async def test_a_task_description_as_an_agent_writes_it_is_taken_whole(server: UvicornServer) -> None:
    async with session(server.url) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        found = await client.call_tool("search_docs", {"query": TASK})

    assert tools["search_docs"].input_schema["properties"]["query"]["maxLength"] == MAX_QUERY_LENGTH
    assert not found.is_error and found.structured_content is not None
    assert found.structured_content["query"] == TASK


@pytest.mark.parametrize(
    ("arguments", "code", "hint"),
    [
        ({"location": "no/such/thing-xyz"}, "not_found", "search_docs first"),
        ({"location": "metrics"}, "ambiguous", "Candidates: "),
        ({"location": "missing-docs/guide/install"}, "site_unavailable", "Try again later"),
        ({"location": "../etc/passwd"}, "bad_request", "Correct the argument"),
    ],
    ids=["not found", "ambiguous", "site unavailable", "bad location"],
)
async def test_a_failed_get_is_a_tool_error_naming_its_reason(
    server: UvicornServer, arguments: dict[str, Any], code: str, hint: str
) -> None:
    async with session(server.url) as client:
        result = await client.call_tool("get_doc", arguments)

    assert result.is_error
    assert text(result).startswith(f"{code}: ") and hint in text(result)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (
            {"query": "install", "limit": 0},
            "bad_request: limit must be a whole number from 1 to 50 (at most 25 results are returned)",
        ),
        ({"query": "install", "site": "nowhere"}, "bad_request: site must be one of: alpha"),
        ({"query": "   "}, "bad_request: query is required and must not be blank"),
        ({"query": "a\x01b"}, "bad_request: query must not contain control characters"),
        ({"query": "install " * 129}, "at most 1024 characters"),
        ({"query": "install", "limit": "many"}, "limit"),
        ({}, "bad_request: query is required"),
        ({"phrase": "install"}, "search_docs takes no argument `phrase`; it takes: query, limit, site"),
        ({"q": "install", "query": "install"}, "bad_request: `q` and `query` mean the same: give `query` once"),
    ],
    ids=[
        "limit out of range",
        "unknown site",
        "blank query",
        "control characters in the query",
        "an over-long query",
        "limit not a number",
        "no query",
        "a guessed name",
        "an alias beside its name",
    ],
)
async def test_bad_arguments_are_tool_errors_an_agent_can_read(
    server: UvicornServer, arguments: dict[str, Any], expected: str
) -> None:
    async with session(server.url) as client:
        result = await client.call_tool("search_docs", arguments)

    assert result.is_error and expected in text(result)


async def test_an_empty_search_says_what_it_means(server: UvicornServer) -> None:
    async with session(server.url) as client:
        result = await client.call_tool("search_docs", {"query": "sourdough starter hydration"})

    assert not result.is_error and result.structured_content is not None
    answer = dict(result.structured_content)
    sites = answer.pop("sites")
    assert answer == {"query": "sourdough starter hydration", "provider": "none", "results": [], "leftOut": 0}
    assert {site: stood["state"] for site, stood in sites.items()} == {site: "searched" for site in PUBLISHED_SITES} | {
        "missing-docs": "unpublished"
    }
    assert all(sites[site]["indexedAt"] for site in PUBLISHED_SITES)
    assert "does not cover" in text(result)
    assert "Not searched: missing-docs (it publishes no search index)" in text(result)


async def test_a_search_that_read_no_site_never_says_the_documentation_lacks_the_answer(server: UvicornServer) -> None:
    async with session(server.url) as client:
        result = await client.call_tool("search_docs", {"query": "install", "site": "missing-docs"})
    assert not result.is_error and "does not cover" not in text(result)
    assert text(result).startswith("No results: no site could be searched. Not searched: missing-docs (it publishes")


# -- the endpoint over plain HTTP


def test_the_endpoint_answers_at_its_own_path_without_a_redirect(server: UvicornServer) -> None:
    for path in ("/api/mcp", "/api/mcp/"):
        response = httpx.post(server.url + path, json=INITIALIZE, headers=MCP_HEADERS, follow_redirects=False)
        assert response.status_code == 200, (path, response.status_code)
        assert response.headers["content-type"].startswith("application/json")  # JSON, not an SSE stream
        assert response.json()["result"]["serverInfo"]["name"] == "documentation"


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("evil.example.net", 421),
        ("evil.example.net:8080", 421),
        ("docs.example.com", 200),
        ("localhost:7071", 200),
    ],
    ids=["unknown host", "unknown host with a port", "configured host", "loopback"],
)
def test_only_the_apps_own_host_names_are_answered(server: UvicornServer, host: str, status: int) -> None:
    headers = {**MCP_HEADERS, "Host": host}
    response = httpx.post(server.url + "/api/mcp", json=INITIALIZE, headers=headers, follow_redirects=False)
    assert response.status_code == status
    assert "location" not in response.headers  # refused, never redirected


async def test_the_sites_offered_are_the_services(server: UvicornServer) -> None:
    async with session(server.url) as client:
        listing = await client.call_tool("search_docs", {"query": "*", "limit": 25})
    assert listing.structured_content is not None
    assert {hit["site"] for hit in listing.structured_content["results"]} == set(PUBLISHED_SITES)
    assert json.loads(json.dumps(listing.structured_content))  # plain JSON all the way down
    assert httpx2 is not None


async def test_the_names_models_reach_for_are_read_as_the_declared_ones(server: UvicornServer) -> None:
    async with session(server.url) as client:
        found = await client.call_tool("search_docs", {"q": "install the agent", "max_results": 2})
        got = await client.call_tool("get_doc", {"path": "guide/install"})
        listed = (await client.list_tools()).tools
    assert not found.is_error and found.structured_content is not None
    assert len(found.structured_content["results"]) == 2
    assert not got.is_error and got.structured_content is not None
    assert got.structured_content["location"] == "guide/install/"
    assert all(
        "q" not in tool.input_schema["properties"] and "path" not in tool.input_schema["properties"] for tool in listed
    )


async def test_a_near_miss_site_names_the_nearest_first_over_mcp(server: UvicornServer) -> None:
    async with session(server.url) as client:
        result = await client.call_tool("search_docs", {"query": "install", "site": "rooted"})
    assert result.is_error and text(result).startswith("bad_request: site must be one of: rooted-docs, alpha")


async def test_an_empty_search_names_the_sites_searched_and_suggests_dropping_site(server: UvicornServer) -> None:
    async with session(server.url) as client:
        narrowed = await client.call_tool("search_docs", {"query": "sourdough starter hydration", "site": "beta-docs"})
    assert "No results in beta-docs:" in text(narrowed)
    assert "Search again without `site` (only beta-docs was searched)" in text(narrowed)


async def test_a_miss_says_did_you_mean_in_text_and_fields(server: UvicornServer) -> None:
    async with session(server.url) as client:
        result = await client.call_tool("get_doc", {"location": "guide/instal"})
    assert result.is_error and "Did you mean: guide/install/" in text(result)
    assert result.structured_content is not None
    assert "guide/install/" in result.structured_content["resolution"]["suggestions"]


def test_index_ages_are_said_in_words() -> None:
    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    assert ago(now - timedelta(seconds=30), now) == "just now"
    assert ago(now - timedelta(minutes=1, seconds=5), now) == "1 minute ago"
    assert ago(now - timedelta(minutes=12), now) == "12 minutes ago"
    assert ago(now - timedelta(hours=3, minutes=59), now) == "3 hours ago"
    assert ago(now - timedelta(days=2), now) == "2 days ago"
    assert ago(now + timedelta(seconds=5), now) == "just now"  # a clock a little ahead is not "in the future"
