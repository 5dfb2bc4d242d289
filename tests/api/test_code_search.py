"""Code search (`kind=code`) over HTTP and MCP, against the app under uvicorn over the built fixture origin: blocks as
results with their language and text, the section's anchor in the location (so `get` reads around them), the
language filter with its aliases, and clear refusals; the languages the Markdown's fences name once read."""

from __future__ import annotations

import httpx
import mcp
import pytest

from shared.api.mcp.rendering import render_search
from shared.code_samples import PENDING
from shared.compose import compose
from shared.models import SearchKind, SearchResponse
from shared.providers.mkdocs.provider import MkDocsProvider
from shared.providers.remote import RemoteProvider
from shared.requests import SearchRequest
from shared.settings import RemoteSettings
from tests.api.test_mcp import session, text
from tests.support.sites import ROOTED_OVERRIDE, fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin

RECEIVER = "gamma-docs/tutorials/first-steps/#provision-the-pager-receiver"


def search(server: UvicornServer, **params: str) -> httpx.Response:
    return httpx.get(server.url + "/api/docs/search", params={"kind": "code", **params})


def test_a_code_search_answers_blocks_with_their_language_and_where_they_sit(server: UvicornServer) -> None:
    found = search(server, q="terraform resource for the pager receiver")
    assert found.status_code == 200
    top = found.json()["results"][0]
    assert top["location"] == RECEIVER and top["anchor"] == "provision-the-pager-receiver"
    assert top["code"]["language"] == "terraform" and top["code"]["text"].startswith('resource "gamma_receiver"')
    assert "totalChars" not in top["code"] and isinstance(top["languageGuessed"], bool)
    assert top["previewText"].startswith("Declare the pager receiver")
    assert top["breadcrumb"] == ["First steps", "Provision the pager receiver"]
    assert top["url"].endswith("/gamma-docs/tutorials/first-steps/#provision-the-pager-receiver")
    assert top["provider"] == "mkdocs" and top["indexedAt"]
    # every result is a block: no page result slips in
    assert all("code" in result and result["code"]["text"] for result in found.json()["results"])
    # the location reads the surrounding page, and its section
    page = httpx.get(server.url + "/api/docs/get", params={"location": top["location"]})
    assert page.status_code == 200 and 'resource "gamma_receiver" "pager"' in page.json()["content"]
    section = httpx.get(server.url + "/api/docs/get", params={"location": top["location"], "section": top["anchor"]})
    assert section.status_code == 200 and "gamma_receiver" in section.json()["content"]


def test_a_question_no_page_answers_finds_no_block(server: UvicornServer) -> None:
    found = search(server, q="bake sourdough bread with a starter").json()
    assert found["results"] == [] and found["provider"] == "none"


def test_page_results_carry_no_code_fields(server: UvicornServer) -> None:
    results = httpx.get(server.url + "/api/docs/search", params={"q": "pager receiver"}).json()["results"]
    assert results and all("code" not in result and "languageGuessed" not in result for result in results)


def test_the_language_filter_folds_aliases_and_keeps_only_that_language(server: UvicornServer) -> None:
    for alias in ("bash", "sh", "Shell", "console"):
        results = search(server, q="install the agent", language=alias).json()["results"]
        assert results and {result["code"]["language"] for result in results} == {"bash"}
    yaml = search(server, q="*", language="yml").json()["results"]
    assert yaml and {result["code"]["language"] for result in yaml} == {"yaml"}
    nothing = search(server, q="install the agent", language="cobol")
    assert nothing.status_code == 200 and nothing.json()["results"] == []


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"kind": "snippet", "q": "install"}, "page, code"),
        ({"kind": "code", "q": "install", "language": "rm -rf /"}, "language"),
        ({"kind": "code", "q": "install", "language": "x" * 40}, "language"),
        ({"q": "install", "language": "bash"}, "kind=code"),
    ],
)
def test_a_bad_kind_or_language_is_a_400_saying_what_is_accepted(
    server: UvicornServer, params: dict[str, str], named: str
) -> None:
    answer = httpx.get(server.url + "/api/docs/search", params=params)
    assert answer.status_code == 400 and named in answer.text


async def test_mcp_search_docs_takes_kind_and_language_and_fences_the_code(server: UvicornServer) -> None:
    async with session(server.url) as client:
        tools = (await client.list_tools()).tools
        answer = await client.call_tool(
            "search_docs", {"query": "pager receiver terraform", "kind": "code", "language": "hcl"}
        )
    schema = next(tool for tool in tools if tool.name == "search_docs").input_schema
    assert {"kind", "language"} <= set(schema["properties"])
    assert not answer.is_error and answer.structured_content is not None
    top = answer.structured_content["results"][0]
    assert top["location"] == RECEIVER and top["code"]["language"] == "terraform"
    assert '```terraform\nresource "gamma_receiver" "pager" {' in text(answer)


async def test_the_python_2_client_asks_for_code_in_the_current_revision(server: UvicornServer) -> None:
    async with mcp.Client(server.url + "/api/mcp") as client:
        answer = await client.call_tool(
            "search_docs", {"query": "pager receiver terraform", "kind": "code", "language": "tf", "limit": 3}
        )
        refused = await client.call_tool("search_docs", {"query": "install", "kind": "snippet"})
        version = client.protocol_version
    assert version == "2026-07-28"
    assert not answer.is_error and answer.structured_content is not None
    top = answer.structured_content["results"][0]
    assert top["location"] == RECEIVER and top["code"]["language"] == "terraform"
    assert '```terraform\nresource "gamma_receiver" "pager" {' in text(answer)
    assert refused.is_error and "page, code" in text(refused)


@pytest.fixture
def settings(static_origin: StaticOrigin):  # type: ignore[no-untyped-def]
    return fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false")


async def test_the_fences_name_the_languages_once_read_and_a_bare_fence_stays_a_guess(settings) -> None:  # type: ignore[no-untyped-def]
    async with compose(settings, embedding=None) as composed:
        provider = next(p for p in composed.service.providers if isinstance(p, MkDocsProvider))
        first = await provider.search(
            SearchRequest("pager receiver", limit=10, site="gamma-docs", kind=SearchKind.CODE)
        )
        assert first.results  # answered at once, the fences being read meanwhile
        await provider.code_fences_read("gamma-docs")
        after = (
            await provider.search(
                SearchRequest("pager receiver settings", limit=10, site="gamma-docs", kind=SearchKind.CODE)
            )
        ).results
        sites = provider.health().sites
    assert sites["gamma-docs"].code_languages == "read"  # type: ignore[union-attr]
    assert sites["alpha"].model_dump(by_alias=True).get("codeLanguages") is None  # not asked yet
    by_start = {result.code.text.split("\n", 1)[0]: result for result in after if result.code is not None}
    fenced = by_start['resource "gamma_receiver" "pager" {']
    bare = by_start["{"]
    assert fenced.code is not None and fenced.code.language == "terraform" and fenced.language_guessed is False
    assert bare.code is not None and bare.code.language == "json" and bare.language_guessed is True
    # While the fences were being read, a guessed language said so; once read, a guess is final.
    pending = [result for result in first.results if result.language_guessed]
    assert pending and all(result.language_pending for result in pending)
    assert all(result.language_pending is None for result in first.results if not result.language_guessed)
    assert all(result.language_pending is None for result in after)
    said = render_search(SearchResponse(query="q", provider="mkdocs", results=pending))
    assert PENDING in said and "language guessed from the text" in said


async def test_a_remote_deployment_is_asked_for_code_when_its_search_declares_it(server: UvicornServer) -> None:
    provider = RemoteProvider(RemoteSettings.model_validate({"Endpoint": server.url + "/api/mcp"}), sites=())
    try:
        found = (
            await provider.search(SearchRequest("pager receiver", limit=3, kind=SearchKind.CODE, language="terraform"))
        ).results
    finally:
        await provider.aclose()

    assert found and found[0].provider == "smithy_remote" and found[0].backend == "mkdocs"
    assert found[0].code is not None and found[0].code.language == "terraform" and found[0].location == RECEIVER
