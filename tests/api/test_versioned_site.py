"""A site published per release with the real `mike` (2.1 = `latest` = the default, 2.0 with one page fewer and
other text), found without configuring it, beside a Zensical site: searched and read in its default version, in
the version asked for, by version folder, pasted URL or alias, with its versions listed; over HTTP and MCP against
the app under uvicorn (`tests/support/versioned.py`, `tests/fixtures/versioned/README.md`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import mcp
import pytest
from mcp.shared.exceptions import MCPError

from shared.api import create_app
from shared.cache import open_store
from shared.providers.mkdocs.lifecycle.outcomes import Outcome
from shared.providers.mkdocs.lifecycle.refresh import published_sites
from shared.providers.mkdocs.lifecycle.warm import warm_all
from shared.providers.remote import RemoteProvider
from shared.requests import ReadRequest, SearchRequest
from shared.settings import RemoteSettings
from shared.site_key import SiteKey
from tests.support.sites import fixture_env, fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tests.support.versioned import (
    BAD_VERSIONED_SITES,
    CHANGED_PAGE,
    CHANGED_TEXT,
    DEFAULT_VERSION,
    LATEST_ALIAS,
    NEW_PAGE,
    VERSIONED_SITE,
    ZENSICAL_SITE,
)
from tools.azurite import Azurite
from tools.static_origin import StaticOrigin

SITE = VERSIONED_SITE
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server(versioned_origin: StaticOrigin) -> Iterator[UvicornServer]:
    sites = ",".join((ZENSICAL_SITE, SITE, *BAD_VERSIONED_SITES))
    settings = fixture_settings(versioned_origin.url, Sites=sites, DefaultSite=ZENSICAL_SITE)
    with UvicornServer(create_app(settings, embedding=None)) as running:
        yield running


def search(server: UvicornServer, **params: Any) -> httpx.Response:
    return httpx.get(server.url + "/api/docs/search", params=params, timeout=30)


def get(server: UvicornServer, **params: Any) -> httpx.Response:
    return httpx.get(server.url + "/api/docs/get", params=params, timeout=30)


def test_a_search_is_of_the_default_version_unless_a_version_is_named(server: UvicornServer) -> None:
    default = search(server, q="install", site=SITE).json()
    older = search(server, q="install", site=SITE, version="2.0").json()
    latest = search(server, q="install", site=SITE, version=LATEST_ALIAS).json()
    everywhere = search(server, q="install", version="2.0").json()

    top = default["results"][0]
    assert (top["version"], top["defaultVersion"]) == (DEFAULT_VERSION, True)
    assert top["location"] == f"{SITE}/{CHANGED_PAGE}/" and top["url"].endswith(f"/{SITE}/2.1/{CHANGED_PAGE}/")
    assert default["sites"][SITE]["state"] == "searched"
    assert {(hit["version"], hit["defaultVersion"]) for hit in older["results"]} == {("2.0", False)}
    assert older["results"][0]["location"] == f"{SITE}/2.0/{CHANGED_PAGE}/"
    assert older["results"][0]["url"].endswith(f"/{SITE}/2.0/{CHANGED_PAGE}/")
    assert [hit["location"] for hit in latest["results"]] == [hit["location"] for hit in default["results"]]
    # Several sites: the version applies to the versioned one, and unversioned results carry no version at all.
    unversioned = [hit for hit in everywhere["results"] if hit["site"] == ZENSICAL_SITE]
    assert unversioned and all("version" not in hit and "defaultVersion" not in hit for hit in unversioned)
    assert {hit["version"] for hit in everywhere["results"] if hit["site"] == SITE} == {"2.0"}


@pytest.mark.parametrize(
    ("params", "version"),
    [
        ({"location": f"{SITE}/2.0/{CHANGED_PAGE}"}, "2.0"),
        ({"location": f"{SITE}/{CHANGED_PAGE}", "version": "2.0"}, "2.0"),
        ({"location": f"{SITE}/{CHANGED_PAGE}"}, "2.1"),
        ({"location": f"{SITE}/{LATEST_ALIAS}/{CHANGED_PAGE}/"}, "2.1"),
        ({"location": f"{SITE}/2.1/{CHANGED_PAGE}", "version": LATEST_ALIAS}, "2.1"),
    ],
    ids=["version folder", "version=", "default", "alias folder", "folder and alias agree"],
)
def test_a_page_is_read_in_the_version_its_location_names(
    server: UvicornServer, params: dict[str, str], version: str
) -> None:
    page = get(server, **params)
    body = page.json()
    assert page.status_code == 200, body
    assert (
        CHANGED_TEXT[version] in body["content"]
        and CHANGED_TEXT[{"2.0": "2.1", "2.1": "2.0"}[version]] not in body["content"]
    )
    assert (body["site"], body["version"], body["defaultVersion"]) == (SITE, version, version == DEFAULT_VERSION)
    assert body["url"].endswith(f"/{SITE}/{version}/{CHANGED_PAGE}/")
    shown = f"{SITE}/{CHANGED_PAGE}/" if version == DEFAULT_VERSION else f"{SITE}/{version}/{CHANGED_PAGE}/"
    assert body["location"] == shown and f"site: {SITE}\n" in body["content"]
    assert body["resolution"]["site"] == SITE and "@" not in page.text


def test_a_pasted_url_of_a_version_folder_is_read_there(server: UvicornServer, versioned_origin: StaticOrigin) -> None:
    body = get(server, location=f"{versioned_origin.url}/{SITE}/2.0/{CHANGED_PAGE}/").json()
    assert body["version"] == "2.0" and CHANGED_TEXT["2.0"] in body["content"]


def test_a_page_missing_from_a_version_names_the_versions_that_have_it(server: UvicornServer) -> None:
    missing = get(server, location=f"{SITE}/2.0/{NEW_PAGE}")
    found = get(server, location=f"{SITE}/{NEW_PAGE}")

    body = missing.json()
    assert missing.status_code == 404 and body["error"]["code"] == "not_found"
    assert "2.1" in body["resolution"]["detail"] and body["resolution"]["suggestions"] == [f"{SITE}/{NEW_PAGE}/"]
    assert found.status_code == 200 and found.json()["version"] == "2.1"


@pytest.mark.parametrize("folder", ["9.9", "2.2", "\uff12.\uff10", "v3", "1"])
def test_a_version_folder_that_does_not_exist_is_not_found_naming_the_versions(
    server: UvicornServer, versioned_origin: StaticOrigin, folder: str
) -> None:
    for location in (f"{SITE}/{folder}/{CHANGED_PAGE}", f"{versioned_origin.url}/{SITE}/{folder}/{CHANGED_PAGE}/"):
        page = get(server, location=location)
        body = page.json()
        assert page.status_code == 404, body
        assert body["error"]["code"] == "not_found" and body["resolution"]["site"] == SITE
        assert "no such version" in body["error"]["message"] and "2.1" in body["error"]["message"]
        assert "2.0" in body["error"]["message"] and "@" not in page.text


async def test_a_resource_of_a_version_that_does_not_exist_is_not_found(server: UvicornServer) -> None:
    async with mcp.Client(server.url + "/api/mcp") as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource(f"docs://{SITE}/9.9/{CHANGED_PAGE}")
    assert "no such version" in str(refused.value) and "2.1" in str(refused.value)


@pytest.mark.parametrize(
    ("call", "params", "said"),
    [
        (
            get,
            {"location": f"{SITE}/{CHANGED_PAGE}", "version": "9.9"},
            "version '9.9' is not a version of vdocs: 2.1, 2.0",
        ),
        (search, {"q": "install", "site": SITE, "version": "9.9"}, "is not a version of vdocs: 2.1, 2.0"),
        (search, {"q": "install", "site": ZENSICAL_SITE, "version": "2.0"}, "version: site zdocs is not versioned"),
        (
            get,
            {"location": f"{SITE}/2.0/{CHANGED_PAGE}", "version": "2.1"},
            "the location names 2.0, version names 2.1",
        ),
        (search, {"q": "install", "version": "../x"}, "version must be a version's name or alias"),
    ],
    ids=["unknown version", "unknown version in a search", "unversioned site", "disagreeing", "malformed"],
)
def test_a_version_that_cannot_be_served_is_a_clear_bad_request(
    server: UvicornServer, call: Any, params: dict[str, str], said: str
) -> None:
    answer = call(server, **params)
    assert answer.status_code == 400 and said in answer.json()["error"]["message"]


def test_the_versions_are_listed(server: UvicornServer) -> None:
    listing = httpx.get(server.url + "/api/docs/versions", params={"site": SITE}).json()
    plain = httpx.get(server.url + "/api/docs/versions", params={"site": ZENSICAL_SITE}).json()

    assert listing["versioned"] is True and listing["default"] == DEFAULT_VERSION
    assert [(v["version"], v["aliases"], v["default"]) for v in listing["versions"]] == [
        ("2.1", [LATEST_ALIAS], True),
        ("2.0", [], False),
    ]
    assert plain == {"site": ZENSICAL_SITE, "versioned": False, "default": None, "versions": []}


@pytest.mark.parametrize("bad", BAD_VERSIONED_SITES)
def test_a_bad_versions_json_fails_that_site_alone_with_its_reason(
    server: UvicornServer, versioned_origin: StaticOrigin, bad: str
) -> None:
    versioned_origin.clear_requests()
    answer = search(server, q="install", site=bad)
    others = search(server, q="install", site=SITE)

    assert answer.status_code == 503 and bad in answer.text
    assert others.status_code == 200 and others.json()["results"]
    assert all(
        request.path.startswith(f"/{bad}/") or not request.path.startswith(f"/{bad}")
        for request in versioned_origin.requests
    )
    assert not [
        request.path for request in versioned_origin.requests if ".." in request.path or "escape" in request.path
    ]


async def test_the_mcp_tools_take_a_version(server: UvicornServer) -> None:
    async with mcp.Client(server.url + "/api/mcp") as client:
        found = await client.call_tool("search_docs", {"query": "install", "site": SITE, "version": "2.0"})
        page = await client.call_tool("get_doc", {"location": f"{SITE}/{CHANGED_PAGE}", "version": "2.0"})
        listed = await client.call_tool("list_versions", {"site": SITE})
        bad = await client.call_tool("get_doc", {"location": f"{SITE}/{CHANGED_PAGE}", "version": "9.9"})
        resource = await client.read_resource(f"docs://{SITE}/2.0/{CHANGED_PAGE}/")
        links = [block for block in found.content if getattr(block, "type", "") == "resource_link"]

    assert found.structured_content is not None and found.structured_content["results"][0]["version"] == "2.0"
    assert page.structured_content is not None and CHANGED_TEXT["2.0"] in page.structured_content["content"]
    assert listed.structured_content is not None and listed.structured_content["default"] == DEFAULT_VERSION
    assert bad.is_error and "bad_request: version '9.9' is not a version of vdocs" in bad.content[0].text  # type: ignore[union-attr]
    assert CHANGED_TEXT["2.0"] in resource.contents[0].text  # type: ignore[union-attr]
    assert str(links[0].uri) == f"docs://{SITE}/2.0/{CHANGED_PAGE}/"  # type: ignore[attr-defined]


async def test_the_warm_up_keeps_the_default_and_newest_versions_in_the_store_for_cold_instances(
    versioned_origin: StaticOrigin, azurite: Azurite, blob_container: str
) -> None:
    settings = fixture_settings(
        versioned_origin.url,
        {"AzureWebJobsStorage": azurite.connection_string},
        Sites=f"{ZENSICAL_SITE},{SITE}",
        DefaultSite=ZENSICAL_SITE,
        Cache__Container=blob_container,
        WarmVersions="1",
    )
    store = open_store(settings)
    try:
        report = await warm_all(settings, store)
    finally:
        await store.aclose()
    assert report[SiteKey.of(SITE, "2.1")].outcome == Outcome.CHANGED
    assert report[SiteKey.of(SITE, "2.0")].outcome == Outcome.CHANGED  # the default, then the newest one more

    versioned_origin.clear_requests()
    with UvicornServer(create_app(settings, embedding=None)) as cold:
        older = httpx.get(cold.url + "/api/docs/search", params={"q": "apt", "site": SITE, "version": "2.0"}).json()
    assert older["results"][0]["version"] == "2.0"
    indexes = [request.path for request in versioned_origin.requests if request.path.endswith("search_index.json")]
    assert f"/{SITE}/2.0/search/search_index.json" not in indexes  # read from the store the warm-up filled


def test_a_published_version_refreshes_that_version_alone(versioned_origin: StaticOrigin) -> None:
    settings = fixture_settings(versioned_origin.url, Sites=f"{ZENSICAL_SITE},{SITE}", DefaultSite=ZENSICAL_SITE)
    assert published_sites(settings, f"{SITE}/2.0/search/search_index.json") == [SiteKey.of(SITE, "2.0")]
    assert published_sites(settings, f"{SITE}/2.1/search.json") == [SiteKey.of(SITE, "2.1")]
    assert published_sites(settings, f"{SITE}/versions.json") == [SITE]  # a release or a new default: its versions
    assert published_sites(settings, f"{SITE}/../search/search_index.json") == []


def test_the_command_line_lists_versions_and_reads_one(versioned_origin: StaticOrigin) -> None:
    env = {
        **os.environ,
        **fixture_env(versioned_origin.url, Sites=f"{ZENSICAL_SITE},{SITE}", DefaultSite=ZENSICAL_SITE),
    }

    def run(*arguments: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "shared", *arguments]
        return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)

    listed = run("versions", SITE)
    page = run("get", f"{SITE}/{CHANGED_PAGE}", "--version", "2.0", "--format", "json")
    found = run("search", "installer", "--site", SITE, "--version", LATEST_ALIAS, "--format", "json")

    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == ["2.1 (latest)  default", "2.0"]
    assert page.returncode == 0 and json.loads(page.stdout)["version"] == "2.0"
    assert found.returncode == 0 and json.loads(found.stdout)["results"][0]["version"] == DEFAULT_VERSION


async def test_a_remote_deployment_is_asked_for_the_version_it_declares(server: UvicornServer) -> None:
    provider = RemoteProvider(RemoteSettings.model_validate({"Endpoint": server.url + "/api/mcp"}), sites=(SITE,))
    try:
        found = (await provider.search(SearchRequest("install", limit=3, site=SITE, version="2.0"))).results
        page = await provider.get(ReadRequest(f"{SITE}/{CHANGED_PAGE}", version="2.0"))
    finally:
        await provider.aclose()

    assert found and {(hit.version, hit.provider) for hit in found} == {("2.0", "smithy_remote")}
    assert page.version == "2.0" and CHANGED_TEXT["2.0"] in page.content


def test_a_slow_versions_json_costs_a_search_its_site_wait_and_its_failure_is_remembered(
    versioned_origin: StaticOrigin,
) -> None:
    """A site with no index whose `versions.json` answers only after 6 s, and then with a 500: an all-sites search
    answers within the per-site wait with the site still `loading`; the lookup goes on in the background, its
    failure shows in health with why, and the next searches do not ask again (a backoff, as a failed load)."""
    slow = "vslow"
    versioned_origin.respond(f"/{slow}/versions.json", status=500, body=b"no", delay=6.0)
    versioned_origin.clear_requests()
    settings = fixture_settings(
        versioned_origin.url, Sites=f"{ZENSICAL_SITE},{slow}", DefaultSite=ZENSICAL_SITE, RequestTimeoutSeconds="10"
    )
    try:
        with UvicornServer(create_app(settings, embedding=None)) as running:
            started = time.monotonic()
            first = search(running, q="install")
            elapsed = time.monotonic() - started
            assert first.status_code == 200 and first.json()["results"]
            assert first.json()["sites"][slow]["state"] == "loading"
            assert elapsed < 2.0 + 2, elapsed  # Search__SiteWaitSeconds (2 s) and a little
            deadline = time.monotonic() + 20
            while (shown := _site_health(running, slow))["state"] != "failed" or shown["unpublished"]:
                assert time.monotonic() < deadline, shown
                time.sleep(0.05)
            assert "versions.json unavailable" in shown["reason"] and "HTTP 500" in shown["reason"]
            again = [search(running, q="install").json()["sites"][slow]["state"] for _ in range(3)]
            assert again == ["failed"] * 3
            assert len(versioned_origin.requests_for(f"/{slow}/versions.json")) == 1
    finally:
        versioned_origin.reset()


def _site_health(server: UvicornServer, site: str) -> dict[str, Any]:
    sites: dict[str, dict[str, Any]] = httpx.get(server.url + "/api/health", timeout=10).json()["providers"]
    return sites["mkdocs"]["sites"][site]
