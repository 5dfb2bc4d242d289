"""Versioned sites resolve as any other site does: bare paths and canonical leaves reach a versioned site's default
version, a versioned default site leaves other sites' bare paths resolvable, a default site whose `versions.json`
is refused is skipped (the spec's step 3), and a `version` no site in scope has is a `400` on REST, MCP and the
command line. Black-box over HTTP against the real mike, Zensical and MkDocs output (`tests/support/versioned.py`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import mcp
import pytest

from shared.api import create_app
from tests.support.sites import fixture_env, fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tests.support.versioned import (
    BAD_VERSIONED_SITES,
    CHANGED_PAGE,
    CHANGED_TEXT,
    DEFAULT_VERSION,
    NEW_PAGE,
    PLAIN_SITE,
    VERSIONED_SITE,
    ZENSICAL_SITE,
)
from tools.static_origin import StaticOrigin

ROOT = Path(__file__).resolve().parents[2]
REFUSED = BAD_VERSIONED_SITES[1]  # vbad-dup: a versions.json naming a version twice


def serve(origin: StaticOrigin, default: str, *sites: str) -> UvicornServer:
    settings = fixture_settings(origin.url, Sites=",".join((default, *sites)), DefaultSite=default)
    return UvicornServer(create_app(settings, embedding=None))


@pytest.fixture(scope="module")
def plain_default(versioned_origin: StaticOrigin) -> Iterator[UvicornServer]:
    with serve(versioned_origin, ZENSICAL_SITE, VERSIONED_SITE, PLAIN_SITE) as running:
        yield running


@pytest.fixture(scope="module")
def versioned_default(versioned_origin: StaticOrigin) -> Iterator[UvicornServer]:
    with serve(versioned_origin, VERSIONED_SITE, ZENSICAL_SITE, PLAIN_SITE) as running:
        yield running


def get(server: UvicornServer, location: str, **params: str) -> httpx.Response:
    return httpx.get(server.url + "/api/docs/get", params={"location": location, **params}, timeout=30)


def search(server: UvicornServer, **params: str) -> httpx.Response:
    return httpx.get(server.url + "/api/docs/search", params=params, timeout=30)


@pytest.mark.parametrize(("location", "rule"), [(NEW_PAGE, "exact"), ("new-feature", "canonical-leaf")])
def test_a_bare_path_only_a_versioned_site_has_reaches_its_default_version(
    plain_default: UvicornServer, location: str, rule: str
) -> None:
    page = get(plain_default, location)
    body = page.json()
    assert page.status_code == 200, body
    assert (body["site"], body["version"], body["defaultVersion"]) == (VERSIONED_SITE, DEFAULT_VERSION, True)
    assert body["location"] == f"{VERSIONED_SITE}/{NEW_PAGE}/" and body["resolution"]["rule"] == rule
    assert body["resolution"]["site"] == VERSIONED_SITE and "@" not in page.text
    assert get(plain_default, body["location"]).json()["location"] == body["location"]  # it round-trips


@pytest.mark.parametrize(
    ("location", "site"),
    [("faq", PLAIN_SITE), ("operations/backup", ZENSICAL_SITE), ("backup", ZENSICAL_SITE)],
)
def test_a_versioned_default_site_lets_bare_paths_reach_the_other_sites(
    versioned_default: UvicornServer, location: str, site: str
) -> None:
    page = get(versioned_default, location)
    assert page.status_code == 200, page.json()
    assert page.json()["site"] == site and "version" not in page.json()


def test_a_versioned_default_sites_own_bare_paths_and_version_folders_still_resolve(
    versioned_default: UvicornServer,
) -> None:
    default = get(versioned_default, CHANGED_PAGE).json()
    older = get(versioned_default, f"2.0/{CHANGED_PAGE}").json()
    asked = get(versioned_default, CHANGED_PAGE, version="2.0").json()
    missing = get(versioned_default, f"9.9/{CHANGED_PAGE}")

    assert default["version"] == DEFAULT_VERSION and CHANGED_TEXT[DEFAULT_VERSION] in default["content"]
    assert default["location"] == f"{CHANGED_PAGE}/"
    assert older["version"] == "2.0" and CHANGED_TEXT["2.0"] in older["content"]
    assert asked["version"] == "2.0"
    assert missing.status_code == 404 and "no such version" in missing.json()["error"]["message"]


def test_a_default_site_whose_versions_json_is_refused_is_skipped(versioned_origin: StaticOrigin) -> None:
    with serve(versioned_origin, REFUSED, ZENSICAL_SITE, PLAIN_SITE) as server:
        found = get(server, "faq")
        missed = get(server, "no-such-page-anywhere")
        named = get(server, f"{REFUSED}/faq")

    assert found.status_code == 200 and found.json()["site"] == PLAIN_SITE
    # The spec's step 5: a miss on the other sites alone cannot confirm a page the default site was never asked for.
    assert missed.status_code == 503 and missed.json()["resolution"]["reason"] == "site_unavailable"
    assert named.status_code == 503 and "versions.json refused" in named.json()["error"]["message"]


def test_a_version_no_site_in_scope_has_is_a_bad_request(versioned_origin: StaticOrigin) -> None:
    with serve(versioned_origin, ZENSICAL_SITE, PLAIN_SITE, REFUSED) as server:
        search(server, q="deploy")  # every site loaded (the refused one failed), so none can still turn out versioned
        answer = search(server, q="deploy", version="2.0")
        unknown = search(server, q="deploy", version="2.0", site=REFUSED)

    assert answer.status_code == 400, answer.json()
    message = answer.json()["error"]["message"]
    assert "no site searched is versioned" in message and f"{REFUSED} failed" in message
    assert unknown.status_code == 400 and f"{REFUSED} failed" in unknown.json()["error"]["message"]


def test_a_version_of_another_site_is_still_searched_where_it_exists(plain_default: UvicornServer) -> None:
    found = search(plain_default, q="install", version="2.0").json()
    assert {hit["version"] for hit in found["results"] if hit["site"] == VERSIONED_SITE} == {"2.0"}
    unknown = search(plain_default, q="install", version="7.0")
    assert unknown.status_code == 400 and "is not a version of vdocs: 2.1, 2.0" in unknown.json()["error"]["message"]


async def test_an_mcp_search_with_a_version_no_site_has_is_a_tool_error(versioned_origin: StaticOrigin) -> None:
    with serve(versioned_origin, ZENSICAL_SITE, PLAIN_SITE) as server:
        search(server, q="deploy")
        async with mcp.Client(server.url + "/api/mcp") as client:
            refused = await client.call_tool("search_docs", {"query": "deploy", "version": "2.0"})
    text: Any = refused.content[0]
    assert refused.is_error and "no site searched is versioned" in text.text


def test_the_command_line_refuses_a_version_no_site_has(versioned_origin: StaticOrigin) -> None:
    env = {**os.environ, **fixture_env(versioned_origin.url, Sites=f"{ZENSICAL_SITE},{PLAIN_SITE}")}
    env["FORGE__DOCUMENTATION__DefaultSite"] = ZENSICAL_SITE
    command = [sys.executable, "-m", "shared", "search", "deploy", "--version", "2.0"]
    ran = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert ran.returncode != 0 and "no site searched is versioned" in ran.stderr
