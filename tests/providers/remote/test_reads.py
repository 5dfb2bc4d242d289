"""Whole pages through the chain: deployment A reads B's pages in parts and answers exactly what B's REST `get`
answers; a section or an outline asked through A is B's; an older B that cuts pages is a miss, never a document."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated, Any

import httpx
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent

from shared.api import create_app
from shared.models import Document, Reason, Resolution, View
from shared.providers.remote.mapping import LEGACY_CUT
from shared.reading import MAX_PART_CHARS, Read
from shared.requests import ReadRequest, SearchRequest
from tests.providers.remote.conftest import Deployment
from tests.providers.remote.test_chain import a_settings, deployment_a
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin

HANDBOOK = "gamma-docs/reference/handbook/"


def b_get(b: Deployment, **params: Any) -> dict[str, Any]:
    response = httpx.get(b.url + "/api/docs/get", params=params, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def parts_asked(b: Deployment) -> int:
    return len(b.mcp_requests())


def test_a_long_page_through_the_remote_is_exactly_bs_rest_page(
    static_origin: StaticOrigin, deploy: Callable[..., Deployment]
) -> None:
    b = deploy()
    page = b_get(b, location=HANDBOOK)
    assert page["totalChars"] > MAX_PART_CHARS  # B answers it in two parts at the ceiling
    settings = a_settings(static_origin, b.mcp)
    with UvicornServer(create_app(settings, embedding=None)) as a:
        through = httpx.get(a.url + "/api/docs/get", params={"location": HANDBOOK}, timeout=30).json()
    assert through["provider"] == "smithy_remote" and through["backend"] == "mkdocs"
    assert through["content"] == page["content"]
    assert through["contentHash"] == page["contentHash"] and through["totalChars"] == page["totalChars"]
    assert (through["location"], through["url"], through["site"]) == (page["location"], page["url"], page["site"])
    # initialize, tools/list, two parts (and the notification the client sends after initializing)
    assert parts_asked(b) >= 4
    assert len(static_origin.requests_for("/gamma-docs/reference/handbook.md")) == 1  # B kept the page


async def test_a_section_and_an_outline_through_the_remote_are_bs(
    static_origin: StaticOrigin, deploy: Callable[..., Deployment]
) -> None:
    b = deploy()
    section = b_get(b, location=HANDBOOK, section="chapter-5-capacity")
    outline = b_get(b, location=HANDBOOK, view="outline")
    async with deployment_a(a_settings(static_origin, b.mcp)) as a:
        read_section = await a.service.read(ReadRequest(HANDBOOK, Read(section="chapter-5-capacity")))
        read_outline = await a.service.read(ReadRequest(HANDBOOK, Read(view=View.OUTLINE)))
    assert read_section.provider == "smithy_remote" and read_section.content == section["content"]
    assert read_outline.provider == "smithy_remote"
    assert [entry.model_dump(by_alias=True) for entry in read_outline.outline or []] == outline["outline"]


class LegacyDeployment:
    """A deployment from before reads in parts: `get_doc` takes only `location` and cuts a long page at 50,000
    characters with a note, as this service did; short pages come whole."""

    def __init__(self, pages: dict[str, str]) -> None:
        server: MCPServer[Any] = MCPServer(name="documentation")
        self.calls = 0

        @server.tool(name="get_doc")
        async def get_doc(location: str) -> Annotated[CallToolResult, Document]:
            self.calls += 1
            content = pages[location]
            if len(content) > 50_000:
                content = content[:50_000] + f"\n\n{LEGACY_CUT}: 50,000 of {len(content):,} characters shown.]\n"
            document = Document(
                requested_location=location,
                location=location,
                site="gamma-docs",
                url="https://docs.example.test/" + location,
                provider="mkdocs",
                content=content,
                resolution=Resolution(requested_location=location, reason=Reason.RESOLVED),
            )
            payload = document.model_dump(mode="json", by_alias=True, exclude_none=True)
            for newer in ("totalChars", "offset", "nextOffset", "contentHash", "outline", "section"):
                payload.pop(newer, None)
            return CallToolResult(content=[TextContent(type="text", text=content)], structured_content=payload)

        self.app = server.streamable_http_app(streamable_http_path="/api/mcp", stateless_http=True, json_response=True)


@pytest.fixture
def legacy(deploy: Callable[..., Deployment]) -> Iterator[tuple[LegacyDeployment, str]]:
    b = deploy()
    pages = {
        HANDBOOK: b_get(b, location=HANDBOOK)["content"],
        "gamma-docs/metrics": b_get(b, location="gamma-docs/metrics")["content"],
    }
    old = LegacyDeployment(pages)
    with UvicornServer(old.app) as running:
        yield old, running.url + "/api/mcp"


async def test_an_older_deployment_that_cuts_a_page_is_a_miss_and_the_chain_falls_through(
    static_origin: StaticOrigin, legacy: tuple[LegacyDeployment, str]
) -> None:
    old, endpoint = legacy
    async with deployment_a(a_settings(static_origin, endpoint)) as a:
        long_page = await a.service.get(ReadRequest(HANDBOOK))
        short_page = await a.service.get(ReadRequest("gamma-docs/metrics"))
        outline = await a.service.read(ReadRequest("gamma-docs/metrics", Read(view=View.OUTLINE)))
    assert long_page.provider == "mkdocs" and LEGACY_CUT not in long_page.content
    assert len(long_page.content) > MAX_PART_CHARS
    assert short_page.provider == "smithy_remote"  # whole: an older deployment still serves short pages
    assert outline.provider == "mkdocs" and outline.outline  # it cannot tell the headings' anchors
    assert old.calls == 2  # the outline was never asked of it


async def test_rest_and_mcp_reach_an_older_deployment_alike(
    static_origin: StaticOrigin, legacy: tuple[LegacyDeployment, str]
) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    _, endpoint = legacy
    with UvicornServer(create_app(a_settings(static_origin, endpoint), embedding=None)) as a:
        rest = httpx.get(a.url + "/api/docs/get", params={"location": "gamma-docs/metrics"}, timeout=30).json()
        async with streamable_http_client(a.url + "/api/mcp") as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            answer = await client.call_tool("get_doc", {"location": "gamma-docs/metrics"})
    assert rest["provider"] == "smithy_remote"
    assert answer.structured_content is not None and answer.structured_content["provider"] == "smithy_remote"


class PageOnlyDeployment:
    """A deployment from before code search: its `search_docs` takes `query`, `limit` and `site` only."""

    def __init__(self) -> None:
        server: MCPServer[Any] = MCPServer(name="documentation")
        self.calls = 0

        @server.tool(name="search_docs")
        async def search_docs(query: str, limit: int = 10, site: str | None = None) -> Annotated[CallToolResult, Any]:
            self.calls += 1
            return CallToolResult(content=[TextContent(type="text", text="nothing")], structured_content={})

        self.app = server.streamable_http_app(streamable_http_path="/api/mcp", stateless_http=True, json_response=True)


async def test_a_deployment_whose_search_takes_no_kind_is_passed_over_for_code(static_origin: StaticOrigin) -> None:
    old = PageOnlyDeployment()
    with UvicornServer(old.app) as running:
        async with deployment_a(a_settings(static_origin, running.url + "/api/mcp")) as a:
            found = await a.service.search(SearchRequest("pager receiver", limit=3, kind="code"))
    assert found.provider == "mkdocs" and found.results and found.results[0].code is not None
    assert old.calls == 0  # its tools were listed, and search_docs never called with arguments it does not take
