"""The MCP endpoint in both protocol revisions it serves, over real HTTP against the app under uvicorn:

- 2026-07-28, as the Python SDK 2.x `mcp.Client(url)` negotiates it by default (and as raw JSON-RPC with the
  revision's per-request envelope), and 2025-11-25, the initialize handshake;
- capabilities that claim only what is done; subscriptions refused at once, never an event stream;
- every answer within `Mcp__AnswerBudgetChars` as the client receives it, envelope fields included: the longest pages
  read whole, and searches at the largest `limit`;
- caching hints a client can use (`ttlMs`, `cacheScope`), `public` only without a caller gate;
- errors in the tool's own words, with the JSON-RPC codes the specification names, and no ERROR log line.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import mcp
import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import TextContent, TextResourceContents

from shared.api import create_app
from shared.api.mcp.resources import page_uri
from shared.api.mcp.server import McpEndpoint
from tests.support.sites import ROOTED_OVERRIDE, fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin

MODERN, LEGACY = "2026-07-28", "2025-11-25"
BUDGET = 24_000
HANDBOOK = "gamma-docs/reference/handbook/"


@pytest.fixture
def gated_server(static_origin: StaticOrigin) -> Iterator[UvicornServer]:
    settings = fixture_settings(
        static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false", Inbound__Tokens="t0ken"
    )
    with UvicornServer(create_app(settings, embedding=None)) as running:
        yield running


def call(
    url: str, era: str, method: str, params: dict[str, Any] | None = None, *, token: str | None = None
) -> httpx.Response:
    """One JSON-RPC request as each revision sends it: the 2026-07-28 per-request envelope and routing headers, or
    the 2025-11-25 protocol header (the stateless endpoint needs no session)."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    params = dict(params or {})
    headers["MCP-Protocol-Version"] = era
    if era == MODERN:
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        headers["Mcp-Method"] = method
        name = params.get("name") or params.get("uri")
        if name is not None:
            headers["Mcp-Name"] = str(name)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    return httpx.post(url + "/api/mcp", json=body, headers=headers, timeout=10)


def result_of(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text[:300]
    assert response.headers["content-type"].startswith("application/json")  # never an event stream
    result: dict[str, Any] = response.json()["result"]
    return result


def sent_size(result: dict[str, Any]) -> int:
    """The JSON-RPC `result` as long as it can be spelt (ASCII-escaped, spaced): at least what travelled."""
    return len(json.dumps(result))


def text_of(result: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


# -- the current revision through the Python SDK 2.x client, as an agent's host uses it


async def test_the_python_client_negotiates_the_current_revision_and_reads_in_parts(server: UvicornServer) -> None:
    whole = httpx.get(server.url + "/api/docs/get", params={"location": HANDBOOK}, timeout=30).json()["content"]
    async with mcp.Client(server.url + "/api/mcp") as client:
        capabilities = client.session.server_capabilities
        tools = await client.list_tools()
        templates = await client.list_resource_templates()
        found = await client.call_tool("search_docs", {"query": "operations handbook inventory listing"})
        parts, offset = [], None
        while True:
            arguments = {"location": HANDBOOK} | ({"offset": offset} if offset is not None else {})
            answer = await client.call_tool("get_doc", arguments)
            assert not answer.is_error and answer.structured_content is not None
            parts.append(answer.structured_content["content"])
            if (offset := answer.structured_content["nextOffset"]) is None:
                break
        read = await client.read_resource(f"docs://{HANDBOOK}")
        version = client.protocol_version

    assert version == MODERN
    assert capabilities is not None and capabilities.prompts is None
    assert capabilities.tools is not None and not capabilities.tools.list_changed
    assert capabilities.resources is not None
    assert not capabilities.resources.subscribe and not capabilities.resources.list_changed
    assert [tool.name for tool in tools.tools] == ["search_docs", "get_doc", "list_versions"]
    assert tools.ttl_ms is not None and tools.ttl_ms >= 3_600_000 and tools.cache_scope == "public"
    assert templates.ttl_ms is not None and templates.ttl_ms > 0 and templates.cache_scope == "public"
    assert not found.is_error and found.structured_content is not None
    assert found.structured_content["results"][0]["location"] == HANDBOOK
    assert "".join(parts) == whole and len(parts) >= 6
    first = read.contents[0]
    assert isinstance(first, TextResourceContents) and whole.startswith(first.text)
    assert read.ttl_ms is not None and 0 < read.ttl_ms <= 15_000  # never past the index check interval


async def test_errors_name_the_tools_arguments_with_the_specifications_codes(
    server: UvicornServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with mcp.Client(server.url + "/api/mcp") as client:
        blank = await client.call_tool("search_docs", {"query": "   "})
        control = await client.call_tool("search_docs", {"query": "disk\x07full"})
        with pytest.raises(MCPError) as unknown_tool:
            await client.call_tool("no_such_tool", {})
        with pytest.raises(MCPError) as superscript:
            await client.read_resource(f"docs://{HANDBOOK}?offset=\u00b2")

    texts = [block.text for answer in (blank, control) for block in answer.content if isinstance(block, TextContent)]
    assert blank.is_error and texts[0].startswith("bad_request: query is required and must not be blank")
    assert control.is_error and texts[1].startswith("bad_request: query must not contain control characters")
    assert all("q " not in text for text in texts)
    assert unknown_tool.value.code == -32602
    assert superscript.value.code == -32602 and "offset must be a whole number" in superscript.value.error.message
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


@pytest.mark.parametrize("era", [MODERN, LEGACY])
def test_nothing_is_claimed_that_is_not_done(server: UvicornServer, era: str) -> None:
    if era == MODERN:
        capabilities = result_of(call(server.url, era, "server/discover"))["capabilities"]
    else:
        initialize = {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        capabilities = result_of(call(server.url, era, "initialize", initialize))["capabilities"]
    assert "prompts" not in capabilities and "logging" not in capabilities and "completions" not in capabilities
    assert capabilities["tools"] == {"listChanged": False}
    assert capabilities["resources"] == {"listChanged": False, "subscribe": False}


@pytest.mark.parametrize(
    ("era", "method", "params"),
    [
        (MODERN, "subscriptions/listen", {"notifications": {"toolsListChanged": True}}),
        (MODERN, "resources/subscribe", {"uri": f"docs://{HANDBOOK}"}),
        (LEGACY, "resources/subscribe", {"uri": f"docs://{HANDBOOK}"}),
        (MODERN, "prompts/get", {"name": "summarise"}),
        (LEGACY, "prompts/get", {"name": "summarise"}),
        (LEGACY, "prompts/list", {}),
    ],
)
def test_what_is_not_served_is_refused_at_once_as_method_not_found(
    server: UvicornServer, era: str, method: str, params: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    response = call(server.url, era, method, params)  # within the client's 10 s: no stream is held open
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["error"]["code"] == -32601
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


@pytest.mark.parametrize("era", [MODERN, LEGACY])
def test_a_malformed_envelope_is_an_invalid_request(server: UvicornServer, era: str) -> None:
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": era,
    }
    response = httpx.post(server.url + "/api/mcp", json={"jsonrpc": "2.0", "id": 1}, headers=headers, timeout=10)
    assert response.status_code == 400 and response.json()["error"]["code"] == -32600


# -- the answer budget, as sent


def _longest_pages(url: str, count: int) -> list[str]:
    listed = httpx.get(url + "/api/docs/search", params={"q": "*", "limit": 50}, timeout=30).json()["results"]
    sizes = []
    for hit in listed:
        page = httpx.get(url + "/api/docs/get", params={"location": hit["location"]}, timeout=30)
        if page.status_code == 200:
            sizes.append((page.json()["totalChars"], page.json()["location"]))
    return [location for _, location in sorted(sizes, reverse=True)[:count]]


@pytest.mark.parametrize("era", [MODERN, LEGACY])
def test_every_answer_fits_the_budget_as_the_client_receives_it(server: UvicornServer, era: str) -> None:
    longest = _longest_pages(server.url, 5)
    assert HANDBOOK in longest
    for location in longest:
        read = result_of(call(server.url, era, "tools/call", {"name": "get_doc", "arguments": {"location": location}}))
        assert sent_size(read) <= BUDGET, (location, sent_size(read))
        site = read["structuredContent"]["site"]
        resource = result_of(call(server.url, era, "resources/read", {"uri": page_uri(site, location)}))
        assert sent_size(resource) <= BUDGET, (location, sent_size(resource))
        outline = {"name": "get_doc", "arguments": {"location": location, "view": "outline"}}
        assert sent_size(result_of(call(server.url, era, "tools/call", outline))) <= BUDGET
    for query in ("*", "install", "configuration settings"):
        arguments = {"query": query, "limit": 25}
        found = result_of(call(server.url, era, "tools/call", {"name": "search_docs", "arguments": arguments}))
        assert sent_size(found) <= BUDGET, (query, sent_size(found))


def test_a_search_that_does_not_fit_says_what_was_left_out_and_how_to_see_it(static_origin: StaticOrigin) -> None:
    settings = fixture_settings(
        static_origin.url,
        SearchIndexOverrides=ROOTED_OVERRIDE,
        Search__Semantic="false",
        Mcp__AnswerBudgetChars="6000",
    )
    with UvicornServer(create_app(settings, embedding=None)) as small:
        listing = httpx.get(small.url + "/api/docs/search", params={"q": "*", "limit": 25}, timeout=30).json()
        arguments = {"query": "*", "limit": 25}
        found = result_of(call(small.url, MODERN, "tools/call", {"name": "search_docs", "arguments": arguments}))

    structured, text = found["structuredContent"], text_of(found)
    kept = len(structured["results"])
    assert sent_size(found) <= 6_000
    assert 1 <= kept < len(listing["results"]) and structured["leftOut"] == len(listing["results"]) - kept
    assert [hit["location"] for hit in structured["results"]] == [hit["location"] for hit in listing["results"][:kept]]
    assert f"{structured['leftOut']} more result(s) matched but were left out" in text
    assert f"limit={kept}" in text and "`site`" in text
    links = [block for block in found["content"] if block["type"] == "resource_link"]
    assert len(links) == kept


# -- caching hints


@pytest.mark.parametrize("era", [MODERN, LEGACY])
def test_a_gate_makes_every_hint_private(gated_server: UvicornServer, era: str) -> None:
    if era == MODERN:
        listed = result_of(call(gated_server.url, era, "tools/list", token="t0ken"))
        assert listed["cacheScope"] == "private" and listed["ttlMs"] >= 3_600_000
        read = result_of(call(gated_server.url, era, "resources/read", {"uri": f"docs://{HANDBOOK}"}, token="t0ken"))
        assert read["cacheScope"] == "private"
    else:
        assert "cacheScope" not in result_of(call(gated_server.url, era, "tools/list", token="t0ken"))
    page = httpx.get(
        gated_server.url + "/api/docs/get",
        params={"location": HANDBOOK},
        headers={"Authorization": "Bearer t0ken"},
        timeout=30,
    )
    assert page.headers["cache-control"].startswith("private, max-age=")


def test_rest_get_is_revalidated_with_its_etag(server: UvicornServer) -> None:
    url = server.url + "/api/docs/get"
    first = httpx.get(url, params={"location": HANDBOOK}, timeout=30)
    tag = first.headers["etag"]
    again = httpx.get(url, params={"location": HANDBOOK}, headers={"If-None-Match": tag}, timeout=30)
    other = httpx.get(url, params={"location": HANDBOOK, "maxChars": 2000}, headers={"If-None-Match": tag}, timeout=30)
    listed = httpx.get(url, params={"location": HANDBOOK}, headers={"If-None-Match": f'"x", {tag}'}, timeout=30)

    assert tag.startswith('W/"') and first.json()["contentHash"]
    control = first.headers["cache-control"]
    assert control.startswith("public, max-age=") and 0 < int(control.partition("=")[2]) <= 15
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == tag
    assert other.status_code == 200 and other.headers["etag"] != tag  # another part is another answer
    assert listed.status_code == 304


@pytest.mark.parametrize(
    ("path", "params", "name"),
    [
        ("/api/docs/get", {"location": HANDBOOK, "offset": "+5"}, "offset"),
        ("/api/docs/get", {"location": HANDBOOK, "maxChars": "1_000"}, "maxChars"),
        ("/api/docs/get", {"location": HANDBOOK, "offset": "\u00b2"}, "offset"),
        ("/api/docs/search", {"q": "install", "limit": " 5"}, "limit"),
    ],
    ids=["a sign", "an underscore", "a superscript", "a space"],
)
def test_numbers_are_ascii_digits_only(server: UvicornServer, path: str, params: dict[str, str], name: str) -> None:
    response = httpx.get(server.url + path, params=params, timeout=30)
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith(f"{name} must be a whole number")


@pytest.mark.parametrize(
    "body",
    [{"jsonrpc": "2.0", "id": 1, "method": 5}, [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}], {"id": 1}],
    ids=["a number for a method", "a batch", "no version"],
)
def test_an_envelope_that_is_not_one_message_is_refused_without_quoting_it(server: UvicornServer, body: Any) -> None:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    response = httpx.post(server.url + "/api/mcp", json=body, headers=headers, timeout=10)
    error = response.json()["error"]
    assert response.status_code == 400 and error["code"] == -32600
    assert "tools/list" not in error["message"] and "input_value" not in error["message"]


def test_a_body_larger_than_any_message_is_refused_before_it_is_read(server: UvicornServer) -> None:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    declared = httpx.post(server.url + "/api/mcp", content=b"{" + b" " * 300_000 + b"}", headers=headers, timeout=10)

    def chunks() -> Iterator[bytes]:  # no Content-Length: refused as the body streams in, not after 64 MB
        for _ in range(1_024):
            yield b" " * 65_536

    streamed = httpx.post(server.url + "/api/mcp", content=chunks(), headers=headers, timeout=30)
    assert declared.status_code == streamed.status_code == 413
    assert streamed.json()["error"]["code"] == -32600


async def test_no_request_outlives_the_deadline() -> None:
    """An answer that has not begun when the request's deadline (and its grace) has passed is ended as `504`."""

    class Stalled:
        async def handle_request(self, scope: Any, receive: Any, send: Any) -> None:
            await anyio.sleep_forever()

    class Server:
        session_manager = Stalled()

    endpoint = McpEndpoint(seconds=0.05)
    endpoint.GRACE_SECONDS = 0.05
    endpoint.server = Server()  # type: ignore[assignment]
    sent: list[dict[str, Any]] = []
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "headers": [], "path": "/api/mcp"}
    with anyio.fail_after(5):
        await endpoint(scope, receive, send)
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 504
    assert json.loads(sent[1]["body"])["error"]["code"] == "timeout"
