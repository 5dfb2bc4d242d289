"""Finding the service before connecting, black-box: the MCP server card (open, whatever gate) and llms.txt (one
site's pages, every site's, and never a site above the caller's ceiling)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from shared.api import create_app
from shared.settings import load_settings
from tests.support.sites import ROOTED_OVERRIDE, fixture_env
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin

TOKEN, SEC = "reader", "sec-reader"


@pytest.fixture
def server(static_origin: StaticOrigin) -> Iterator[UvicornServer]:
    settings = load_settings(
        fixture_env(
            static_origin.url,
            SearchIndexOverrides=ROOTED_OVERRIDE,
            Inbound__Tokens=TOKEN,
            Inbound__AudienceTokens__sec=SEC,
            SiteAudiences=json.dumps({"gamma-docs": ["sec"]}),
        )
    )
    with UvicornServer(create_app(settings)) as running:
        yield running


def test_the_server_card_is_open_and_says_where_and_how_to_connect(server: UvicornServer) -> None:
    answer = httpx.get(server.url + "/.well-known/mcp/server-card.json", timeout=30)  # no token
    assert answer.status_code == 200
    card = answer.json()
    (remote,) = card["remotes"]
    assert remote["type"] == "streamable-http" and remote["url"].endswith("/api/mcp")
    assert remote["supportedProtocolVersions"] == ["2025-11-25", "2026-07-28"]
    assert remote["headers"][0]["name"] == "Authorization" and remote["headers"][0]["isSecret"] is True
    assert {"search_docs", "get_doc", "list_versions"} <= set(card["_meta"]["io.github.documentation-retrieval/tools"])
    assert card["name"].endswith("/documentation") and card["version"] and card["$schema"].endswith(".schema.json")


def test_llms_txt_lists_every_page_of_a_site_with_a_link_and_a_title(server: UvicornServer, built_origin: Path) -> None:
    index = json.loads((built_origin / "beta-docs" / "search" / "search_index.json").read_text())
    pages = {entry["location"].split("#", 1)[0] for entry in index["docs"]}
    text = httpx.get(
        server.url + "/api/docs/llms.txt", params={"site": "beta-docs"}, headers={"Authorization": f"Bearer {TOKEN}"}
    ).text
    assert text.startswith("# beta-docs\n\n> ")
    links = [line for line in text.splitlines() if line.startswith("- [")]
    assert len(links) == len(pages)
    for page in pages:
        assert any(f"/beta-docs/{page})" in link or f"/beta-docs/{page}):" in link for link in links), page


def test_llms_txt_over_every_site_never_names_one_above_the_ceiling(server: UvicornServer) -> None:
    def read(token: str) -> str:
        return httpx.get(server.url + "/api/docs/llms.txt", headers={"Authorization": f"Bearer {token}"}).text

    plain, sec = read(TOKEN), read(SEC)
    assert "## alpha" in plain and "## beta-docs" in plain and "## gamma-docs" not in plain
    assert "/gamma-docs/reference/handbook/" not in plain
    assert "## gamma-docs" in sec
    refused = httpx.get(
        server.url + "/api/docs/llms.txt", params={"site": "gamma-docs"}, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert refused.status_code == 400 and "gamma-docs" not in refused.text
