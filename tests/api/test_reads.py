"""Reads that fit an agent's context, end to end: uvicorn serving the app over the built fixture origin, plain HTTP
and the official MCP Python client. The fixture's `reference/handbook` is 120,000 characters: longer than a
part's ceiling, with a 15,500-character code block, headings that share a text and one with inline code."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, ResourceLink, TextContent, TextResourceContents

from shared.api.mcp.budget import size
from shared.models import Document, View
from shared.reading import MAX_PART_CHARS, Read
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin

HANDBOOK = "gamma-docs/reference/handbook/"
BUDGET = 24_000


@pytest.fixture
def api(server: UvicornServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


@asynccontextmanager
async def session(url: str) -> AsyncIterator[ClientSession]:
    async with streamable_http_client(url + "/api/mcp") as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        await client.list_tools()  # so the client checks every answer against the tools' output schemas
        yield client


def get(api: httpx.Client, status: int = 200, **params: Any) -> dict[str, Any]:
    response = api.get("/api/docs/get", params=params)
    assert response.status_code == status, response.text
    return response.json()


def text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def structured(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None
    return result.structured_content


# -- REST


def test_rest_get_without_read_parameters_is_the_whole_page(api: httpx.Client) -> None:
    page = get(api, location=HANDBOOK)
    assert page["totalChars"] == len(page["content"]) > MAX_PART_CHARS
    assert page["offset"] == 0 and page["nextOffset"] is None and page["outline"] is None
    assert page["content"].startswith("---\nsource: ") and page["content"].rstrip().endswith(".")
    assert len(page["contentHash"]) == 64


def test_rest_parts_join_to_exactly_the_whole_page(api: httpx.Client) -> None:
    whole = get(api, location=HANDBOOK)
    parts, offset = [], 0
    while offset is not None:
        part = get(api, location=HANDBOOK, offset=offset, maxChars=30_000)
        assert part["offset"] == offset and len(part["content"]) <= 30_000
        assert part["contentHash"] == whole["contentHash"] and part["totalChars"] == whole["totalChars"]
        parts.append(part["content"])
        offset = part["nextOffset"]
    assert "".join(parts) == whole["content"] and len(parts) >= 4
    assert parts[0].startswith("---\n") and not any(part.startswith("---\nsource") for part in parts[1:])
    assert all(part.endswith("\n") for part in parts[:-1])


def test_reading_in_parts_costs_one_origin_fetch(api: httpx.Client, static_origin: StaticOrigin) -> None:
    for offset in (0, 30_000, 60_000, 90_000):
        get(api, location=HANDBOOK, offset=offset, maxChars=30_000)
    assert len(static_origin.requests_for("/gamma-docs/reference/handbook.md")) == 1


def test_the_outline_lists_headings_with_the_index_anchors_and_sizes(api: httpx.Client) -> None:
    answer = get(api, location=HANDBOOK, view="outline")
    outline = answer["outline"]
    assert answer["content"] == "" and answer["totalChars"] > MAX_PART_CHARS
    by_title = {entry["title"]: entry for entry in outline}
    assert by_title["Operations handbook"]["level"] == 1 and by_title["Operations handbook"]["anchor"] is None
    assert by_title["Chapter 5: Capacity"]["anchor"] == "chapter-5-capacity"
    assert by_title["The retention setting"]["anchor"] == "the-retention-setting"  # inline code in the heading
    assert by_title["Appendix: glossary"]["level"] == 2  # a setext heading
    examples = [entry["anchor"] for entry in outline if entry["title"] == "Example"]
    assert examples[:3] == ["example", "example_1", "example_2"]  # shared text, one anchor each, in order
    whole = get(api, location=HANDBOOK)["content"]
    for entry in outline:
        assert whole[entry["offset"] :].startswith(("#", entry["title"]))
        assert entry["chars"] > 0
    chapters = [entry for entry in outline if entry["level"] == 2]
    assert sum(entry["chars"] for entry in chapters) < len(whole)


def test_a_section_named_by_a_search_anchor_comes_back_alone(api: httpx.Client) -> None:
    results = api.get("/api/docs/search", params={"q": "retention setting snapshots days"}).json()["results"]
    hit = next(result for result in results if result["location"] == HANDBOOK)
    assert hit["anchor"] == "the-retention-setting"
    assert abs(hit["pageChars"] - 120_000) < 0.2 * 120_000  # an estimate from the index
    section = get(api, location=hit["location"], section=hit["anchor"])
    content = section["content"]
    assert content.startswith("---\nsource: ") and "\n### The `retention` setting\n" in content
    assert "## Chapter" not in content and "### Example" not in content
    assert section["section"] == "the-retention-setting" and section["totalChars"] == len(content)
    by_text = get(api, location=HANDBOOK, section="the RETENTION   setting")
    assert by_text["content"] == content


def test_an_unknown_section_is_a_bad_request_listing_the_sections(api: httpx.Client) -> None:
    body = get(api, 400, location=HANDBOOK, section="no-such-section")
    assert body["error"]["code"] == "bad_request"
    assert {"anchor": "chapter-1-backups"}.items() <= body["sections"][1].items()
    ambiguous = get(api, 400, location=HANDBOOK, section="Example")
    assert {entry["anchor"] for entry in ambiguous["sections"]} >= {"example", "example_1"}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"view": "outline", "offset": 10}, "view=outline"),
        ({"maxChars": 5}, "maxChars"),
        ({"view": "everything"}, "view"),
        ({"offset": 10_000_000}, "past the end"),
    ],
)
def test_reads_that_make_no_sense_are_refused(api: httpx.Client, params: dict[str, Any], message: str) -> None:
    body = get(api, 400, location=HANDBOOK, **params)
    assert body["error"]["code"] == "bad_request" and message in body["error"]["message"]


def test_a_fragment_still_means_the_whole_page(api: httpx.Client) -> None:
    assert get(api, location=HANDBOOK + "#chapter-2-certificates")["content"] == get(api, location=HANDBOOK)["content"]


def test_the_openapi_document_describes_the_read_parameters(api: httpx.Client) -> None:
    parameters = api.get("/api/openapi.json").json()["paths"]["/api/docs/get"]["get"]["parameters"]
    names = [parameter["name"] for parameter in parameters]
    assert names == ["location", "section", "offset", "maxChars", "view", "version"]


# -- MCP


async def read_in_parts(client: ClientSession, **arguments: Any) -> tuple[list[CallToolResult], str]:
    answers, offset = [], None
    while True:
        call = dict(arguments, **({"offset": offset} if offset is not None else {}))
        answer = await client.call_tool("get_doc", call)
        assert not answer.is_error, text(answer)
        answers.append(answer)
        offset = structured(answer)["nextOffset"]
        if offset is None:
            return answers, "".join(structured(answer)["content"] for answer in answers)


async def test_get_doc_reads_a_long_page_in_parts_that_fit_the_budget(server: UvicornServer, api: httpx.Client) -> None:
    whole = get(api, location=HANDBOOK)["content"]
    async with session(server.url) as client:
        answers, joined = await read_in_parts(client, location=HANDBOOK)

    assert joined == whole
    assert len(answers) >= 6
    assert all(size(answer) <= BUDGET for answer in answers)
    assert max(size(answer) for answer in answers[:-1]) > BUDGET * 0.85  # the budget is used, not wasted
    first, part = text(answers[0]), structured(answers[0])
    call = f'Next part: get_doc(location="{HANDBOOK}", offset={part["nextOffset"]})'
    head, _, tail = first.partition(part["content"])  # where the part sits and the next call, the part, the rest
    assert head.startswith("[Part of a longer page: characters 0 to ") and call in head and "left." in head
    assert call in tail and "- Chapter 12: Cost control (anchor chapter-12-cost-control" in tail
    assert text(answers[-1]).startswith("[The end of the page: characters ")


async def test_an_explicit_max_chars_is_honoured_above_the_budget(server: UvicornServer) -> None:
    async with session(server.url) as client:
        answer = await client.call_tool("get_doc", {"location": HANDBOOK, "maxChars": 60_000})
    part = structured(answer)
    assert 50_000 < len(part["content"]) <= 60_000 and part["nextOffset"] == len(part["content"])


async def test_get_doc_reads_a_section_and_an_outline(server: UvicornServer) -> None:
    async with session(server.url) as client:
        section = await client.call_tool("get_doc", {"location": HANDBOOK, "section": "chapter-5-capacity"})
        outline = await client.call_tool("get_doc", {"location": HANDBOOK, "view": "outline"})
        inner = await client.call_tool(
            "get_doc", {"location": HANDBOOK, "section": "chapter-5-capacity", "view": "outline"}
        )
        answers, joined = await read_in_parts(client, location=HANDBOOK, section="chapter-5-capacity")

    assert structured(section)["section"] == "chapter-5-capacity" and size(section) <= BUDGET
    assert structured(section)["nextOffset"] is not None  # the chapter holds the 15,500-character listing
    assert 'section="chapter-5-capacity"' in text(section)
    assert joined.startswith("---\nsource: ") and "\n## Chapter 5: Capacity\n" in joined
    assert "## Chapter 6" not in joined and joined.count("# host-") == 420
    outlined = structured(outline)
    assert outlined["content"] == "" and len(outlined["outline"]) == 52 and size(outline) <= BUDGET
    assert "Chapter 5: Capacity (anchor chapter-5-capacity" in text(outline)
    titles = [entry["title"] for entry in structured(inner)["outline"]]
    assert titles[:2] == ["Chapter 5: Capacity", "Why capacity matter"]
    assert all(size(answer) <= BUDGET for answer in answers)


async def test_a_short_page_comes_whole_and_its_text_is_the_page(server: UvicornServer) -> None:
    async with session(server.url) as client:
        answer = await client.call_tool("get_doc", {"location": "guide/install"})
    assert text(answer) == structured(answer)["content"] and structured(answer)["nextOffset"] is None


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"loc": "guide/install"}, "get_doc takes no argument `loc`; it takes: location, section, offset, maxChars"),
        ({"location": "guide/install", "max_results": 3}, "takes no argument `max_results`"),
        ({"location": "guide/install", "offset": "SECRET-many"}, "bad_request: offset "),
        ({"location": HANDBOOK, "section": "nowhere"}, "bad_request: the page has no such section"),
    ],
    ids=["a wrong name", "an extra argument", "a wrong type", "an unknown section"],
)
async def test_arguments_that_do_not_fit_are_refused_saying_what_fits(
    server: UvicornServer, arguments: dict[str, Any], expected: str
) -> None:
    async with session(server.url) as client:
        result = await client.call_tool("get_doc", arguments)
    assert result.is_error and expected in text(result)
    assert "SECRET" not in text(result)  # a refused value is never echoed
    assert structured(result)["error"]["code"] == "bad_request"


async def test_tool_errors_carry_the_rest_error_body(server: UvicornServer) -> None:
    async with session(server.url) as client:
        missing = await client.call_tool("get_doc", {"location": "no/such/page-xyz"})
        ambiguous = await client.call_tool("get_doc", {"location": "metrics"})
        unknown_section = await client.call_tool("get_doc", {"location": HANDBOOK, "section": "nowhere"})
    assert structured(missing)["error"]["code"] == "not_found"
    assert structured(missing)["resolution"]["reason"] == "not_found"
    assert structured(ambiguous)["resolution"]["candidates"]
    assert structured(unknown_section)["sections"][0]["title"] == "Operations handbook"


async def test_search_results_link_their_pages_as_resources_that_read(server: UvicornServer, api: httpx.Client) -> None:
    async with session(server.url) as client:
        templates = (await client.list_resource_templates()).resource_templates
        found = await client.call_tool("search_docs", {"query": "operations handbook inventory listing"})
        links = [block for block in found.content if isinstance(block, ResourceLink)]
        handbook = next(link for link in links if link.name == HANDBOOK)
        contents, uri = [], str(handbook.uri)
        while uri:
            read = await client.read_resource(uri)
            first = read.contents[0]
            assert isinstance(first, TextResourceContents) and first.mime_type == "text/markdown"
            assert (first.meta or {})["lastModified"].endswith("Z")  # the origin's Last-Modified
            assert (first.meta or {})["indexedAt"]  # and how fresh the index it resolved with is
            assert len(json.dumps(read.model_dump(mode="json", by_alias=True, exclude_none=True))) <= BUDGET
            contents.append(first.text)
            uri = (first.meta or {}).get("nextUri", "")
            if uri:
                note = read.contents[1]
                assert isinstance(note, TextResourceContents) and uri in note.text
        beta = (
            next(link for link in links if link.uri.startswith("docs://beta-docs/"))
            if any(str(link.uri).startswith("docs://beta-docs/") for link in links)
            else None
        )

    assert [template.uri_template for template in templates] == ["docs://{site}/{+path}{?offset,maxChars}"]
    assert handbook.uri == "docs://gamma-docs/reference/handbook/" and handbook.mime_type == "text/markdown"
    assert len(links) == len(structured(found)["results"])
    assert "".join(contents) == get(api, location=HANDBOOK)["content"] and len(contents) >= 6
    assert beta is None or beta.uri.count("beta-docs") == 1


async def test_a_resource_of_another_site_and_a_missing_one(server: UvicornServer) -> None:
    async with session(server.url) as client:
        page = await client.read_resource("docs://beta-docs/api/authentication/")
        root = await client.read_resource("docs://alpha/")
        with pytest.raises(Exception, match="not_found"):
            await client.read_resource("docs://alpha/no/such/page-xyz")
    assert isinstance(page.contents[0], TextResourceContents) and "site: beta-docs" in page.contents[0].text
    assert isinstance(root.contents[0], TextResourceContents) and root.contents[0].text.startswith("---\nsource: ")


async def test_tools_are_listed_in_a_stable_order(server: UvicornServer) -> None:
    async with session(server.url) as client:
        first = [tool.name for tool in (await client.list_tools()).tools]
        second = [tool.name for tool in (await client.list_tools()).tools]
    assert first == second == ["search_docs", "get_doc", "list_versions"]


async def test_a_chosen_max_chars_is_kept_in_the_next_call_and_uri(server: UvicornServer) -> None:
    async with session(server.url) as client:
        part = await client.call_tool("get_doc", {"location": HANDBOOK, "maxChars": 5_000})
        read = await client.read_resource("docs://gamma-docs/reference/handbook/?maxChars=30000")
    following = structured(part)["nextOffset"]
    assert f'get_doc(location="{HANDBOOK}", offset={following}, maxChars=5000)' in text(part)
    first = read.contents[0]
    assert isinstance(first, TextResourceContents) and len(first.text) <= 30_000
    assert (first.meta or {})["nextUri"].endswith(f"?offset={(first.meta or {})['nextOffset']}&maxChars=30000")


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("docs://gamma-docs/reference/handbook/?maxchars=500", "takes no maxchars"),
        ("docs://gamma-docs/reference/handbook/?section=example", "takes no section"),
        ("docs://guide/install", "site must be one of"),
        ("docs://gamma-docs/reference/handbook/?offset=x", "offset must be a whole number"),
    ],
    ids=["a misspelt parameter", "a parameter resources do not take", "no configured site", "a bad offset"],
)
async def test_a_resource_uri_that_does_not_fit_is_refused_not_guessed(
    server: UvicornServer, uri: str, message: str
) -> None:
    async with session(server.url) as client:
        with pytest.raises(Exception, match=message):
            await client.read_resource(uri)


def test_an_outline_or_a_section_list_too_long_for_the_budget_is_cut_and_says_so() -> None:
    from shared.api.errors import answer
    from shared.api.mcp.budget import outline_answer
    from shared.models import Reason, Resolution
    from shared.reading import UnknownSectionError, outline, select

    page = "".join(f"# Heading number {n}\n\ntext\n\n" for n in range(3_000))
    document = Document(
        requested_location="p",
        location="p",
        site="alpha",
        url="u",
        provider="mkdocs",
        content=page,
        resolution=Resolution(requested_location="p", reason=Reason.RESOLVED),
        outline=outline(page, []),
    )
    answered = outline_answer(select(document, Read(view=View.OUTLINE)), BUDGET)
    assert size(answered) <= BUDGET and "headings left out to fit" in text(answered)
    status, body = answer(UnknownSectionError("the page has no such section", document.outline or []))
    assert status == 400 and len(body["sections"]) == 60 and "the first 60 of 3000" in body["error"]["message"]
