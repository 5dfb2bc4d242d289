"""First contact that cannot mislead: each bounded argument refused in one wording, naming its bounds, on REST, MCP
and the command line alike; every route refusing a parameter it does not take; the default site's home page, whose
location is empty, shown readably in text; and the command line's text naming what a miss suggests. Against the
app under uvicorn and `python -m shared` over the MkDocs fixture origin."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from shared.api import create_app
from shared.validation import LIMIT_REFUSED, ROOT_LOCATION
from tests.api.test_mcp_revisions import MODERN, call, result_of
from tests.support.sites import ROOTED_OVERRIDE, fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tests.test_cli import cli
from tools.static_origin import StaticOrigin

MAX_CHARS = "maxChars must be a whole number of at least 200 (at most 100,000 characters are returned)"
SECTION = "section must be a section anchor or heading text of 1 to 512 characters"


@pytest.fixture
def server(static_origin: StaticOrigin) -> Iterator[UvicornServer]:
    settings = fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false")
    with UvicornServer(create_app(settings, embedding=None)) as running:
        yield running


def tool_error(server: UvicornServer, name: str, arguments: dict[str, Any]) -> str:
    answer = result_of(call(server.url, MODERN, "tools/call", {"name": name, "arguments": arguments}))
    assert answer.get("isError") is True, answer
    said: str = answer["content"][0]["text"]
    return said


LONG_SECTION = "s" * 600
TOOLS = {"search": ("search_docs", "query", "q"), "get": ("get_doc", "location", "location")}
FLAGS = {"limit": "--limit", "maxChars": "--max-chars", "section": "--section"}


@pytest.mark.parametrize(
    ("route", "name", "value", "said"),
    [
        ("search", "limit", 51, LIMIT_REFUSED),
        ("search", "limit", 0, LIMIT_REFUSED),
        ("search", "limit", "ten", LIMIT_REFUSED),
        ("get", "maxChars", 10, MAX_CHARS),
        ("get", "section", LONG_SECTION, SECTION),
    ],
    ids=["limit too large", "limit too small", "limit not a number", "maxChars too small", "section too long"],
)
def test_a_bounded_argument_is_refused_in_one_wording_everywhere(
    server: UvicornServer, static_origin: StaticOrigin, route: str, name: str, value: Any, said: str
) -> None:
    tool, subject, parameter = TOOLS[route]
    rest = httpx.get(f"{server.url}/api/docs/{route}", params={parameter: "x", name: str(value)})
    mcp = tool_error(server, tool, {subject: "x", name: value})
    ran = cli(static_origin, route, "x", FLAGS[name], str(value))

    assert rest.status_code == 400 and rest.json()["error"]["message"] == said
    assert mcp.startswith(f"bad_request: {said}")
    assert ran.returncode == 2 and said in ran.stderr


@pytest.mark.parametrize("path", ["/api/health", "/api/admin/refresh/runs/" + "0" * 32])
def test_every_route_refuses_a_parameter_it_does_not_take(server: UvicornServer, path: str) -> None:
    answer = httpx.get(server.url + path, params={"verbose": "1"})
    assert answer.status_code == 400 and "no parameter `verbose` here" in answer.json()["error"]["message"]


def test_the_home_pages_empty_location_reads_as_such_in_text(
    server: UvicornServer, static_origin: StaticOrigin
) -> None:
    listed = httpx.get(server.url + "/api/docs/search", params={"q": "*", "site": "alpha"}).json()["results"]
    assert "" in [hit["location"] for hit in listed]  # the spec's bare location of the default site's root
    mcp = result_of(
        call(server.url, MODERN, "tools/call", {"name": "search_docs", "arguments": {"query": "*", "site": "alpha"}})
    )
    ran = cli(static_origin, "search", "*", "--limit", "25")

    assert f"location: {ROOT_LOCATION}" in mcp["content"][0]["text"]
    assert "location: \n" not in mcp["content"][0]["text"]
    assert ROOT_LOCATION in ran.stdout and not any(line.rstrip() == "1." for line in ran.stdout.splitlines())
    home = httpx.get(server.url + "/api/docs/get", params={"location": ""})
    assert home.status_code == 200 and home.json()["site"] == "alpha"


def test_the_command_lines_text_names_what_a_miss_suggests(static_origin: StaticOrigin) -> None:
    text = cli(static_origin, "get", "guide/instal")
    data = cli(static_origin, "get", "guide/instal", "--format", "json")

    assert text.returncode == 1 and "did you mean: guide/install/" in text.stderr
    assert '"suggestions"' in data.stdout
