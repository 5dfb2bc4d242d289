"""Sites with audiences, black-box: one fixture site restricted to `sec`, a plain reader's token and a `sec` token
(and Entra tokens with and without `Docs.Audience.sec`), over REST and MCP. Above a caller's ceiling a site is,
everywhere, a site that is not configured; with the audience, all of it is there."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from shared.api import create_app
from shared.errors import ConfigurationError
from shared.settings import load_settings
from tests.api.test_mcp_revisions import LEGACY, MODERN, call, result_of
from tests.support.issuer import LocalIssuer
from tests.support.sites import ROOTED_OVERRIDE, SITES, fixture_env
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin

RESTRICTED = "gamma-docs"
PAGE = "gamma-docs/reference/handbook/"
PLAIN, SEC = "plain-reader", "security-reader"
AUDIENCES = json.dumps({RESTRICTED: ["sec"]})


def env(origin: StaticOrigin, **extra: str) -> dict[str, str]:
    return fixture_env(
        origin.url,
        SearchIndexOverrides=ROOTED_OVERRIDE,
        SiteAudiences=AUDIENCES,
        Inbound__Tokens=PLAIN,
        Inbound__AudienceTokens__sec=SEC,
        **extra,
    )


@pytest.fixture
def server(static_origin: StaticOrigin) -> Iterator[UvicornServer]:
    with UvicornServer(create_app(load_settings(env(static_origin)))) as running:
        yield running


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def get(server: UvicornServer, path: str, token: str | None, **params: str) -> httpx.Response:
    return httpx.get(server.url + path, params=params, headers=bearer(token) if token else {}, timeout=60)


def sites_in(results: list[dict[str, Any]]) -> set[str]:
    return {result["site"] for result in results}


def mentions(body: Any, *asked: str) -> bool:
    """Whether an answer names the restricted site anywhere but in what the caller itself sent (`asked`) and in the
    visible sites' own folders of that name (alpha's `gamma-docs/overview/`, beta-docs' `gamma-docs/page/`)."""
    text = json.dumps(body)
    for own in (*asked, "gamma-docs/overview/", "beta-docs/gamma-docs/page/"):
        text = text.replace(own, "")
    return RESTRICTED in text


def test_searches_never_return_a_site_above_the_callers_ceiling(server: UvicornServer) -> None:
    for params in (
        {"q": "operations handbook inventory"},
        {"q": "*", "limit": "25"},
        {"q": "terraform resource for the pager receiver", "kind": "code"},
    ):
        plain = get(server, "/api/docs/search", PLAIN, **params)
        assert plain.status_code == 200 and RESTRICTED not in sites_in(plain.json()["results"]), params
        assert RESTRICTED not in (plain.json()["sites"] or {})
        assert "Authorization" in plain.headers["Vary"]
        sec = get(server, "/api/docs/search", SEC, **params)
        assert RESTRICTED in sites_in(sec.json()["results"]), params


def test_naming_the_site_is_an_unknown_site_and_a_near_miss_never_names_it(server: UvicornServer) -> None:
    for site in (RESTRICTED, "gamma", "gamma-doc"):
        refused = get(server, "/api/docs/search", PLAIN, q="handbook", site=site)
        assert refused.status_code == 400 and not mentions(refused.json()), site
        unknown = get(server, "/api/docs/search", PLAIN, q="handbook", site="zeta-docs")
        assert refused.json()["error"]["code"] == unknown.json()["error"]["code"] == "bad_request"
    assert get(server, "/api/docs/search", SEC, q="handbook", site=RESTRICTED).status_code == 200
    versions = get(server, "/api/docs/versions", PLAIN, site=RESTRICTED)
    assert versions.status_code == 400 and not mentions(versions.json())
    assert get(server, "/api/docs/versions", SEC, site=RESTRICTED).status_code == 200
    for path in ("/api/openapi.json", "/"):
        assert RESTRICTED not in httpx.get(server.url + path, headers=bearer(PLAIN), timeout=30).text, path


def test_a_page_above_the_ceiling_is_a_page_of_a_site_that_is_not_configured(
    server: UvicornServer, static_origin: StaticOrigin
) -> None:
    others = ",".join(site for site in SITES if site != RESTRICTED)
    without = env(static_origin) | {"Forge__Documentation__Sites": others, "Forge__Documentation__SiteAudiences": ""}
    with UvicornServer(create_app(load_settings(without))) as unconfigured:
        for location in (PAGE, "gamma-docs/nopage/", "reference/handbook", "handbook"):
            plain = get(server, "/api/docs/get", PLAIN, location=location)
            absent = get(unconfigured, "/api/docs/get", PLAIN, location=location)
            assert plain.status_code == absent.status_code == 404, location
            assert plain.json() == absent.json(), (location, plain.json(), absent.json())  # word for word
            # (alpha's own gamma-docs/ folder may be offered: bare, to this caller it is alpha's, as it is there)
    page = get(server, "/api/docs/get", SEC, location=PAGE)
    assert page.status_code == 200 and page.json()["site"] == RESTRICTED
    assert page.headers["Cache-Control"].startswith("private") and "Authorization" in page.headers["Vary"]
    # The sec caller's validator never earns the plain caller a 304.
    again = httpx.get(
        server.url + "/api/docs/get",
        params={"location": PAGE},
        headers={**bearer(PLAIN), "If-None-Match": page.headers["ETag"]},
        timeout=30,
    )
    assert again.status_code == 404


def test_health_names_the_site_only_to_a_credential_holding_its_audience(server: UvicornServer) -> None:
    get(server, "/api/docs/search", SEC, q="*", site=RESTRICTED)  # loaded, so health has it to tell
    for token in (None, PLAIN):
        sites = get(server, "/api/health", token).json()["providers"]["mkdocs"]["sites"]
        assert RESTRICTED not in sites and "alpha" in sites
    assert RESTRICTED in get(server, "/api/health", SEC).json()["providers"]["mkdocs"]["sites"]


@pytest.mark.parametrize("era", [MODERN, LEGACY])
def test_mcp_lists_reads_and_refuses_as_rest_does(server: UvicornServer, era: str) -> None:
    def tool(name: str, arguments: dict[str, Any], token: str = PLAIN) -> dict[str, Any]:
        return result_of(call(server.url, era, "tools/call", {"name": name, "arguments": arguments}, token=token))

    def tools(token: str) -> dict[str, Any]:
        listed = result_of(call(server.url, era, "tools/list", token=token))["tools"]
        return {tool["name"]: tool for tool in listed}

    plain, sec = tools(PLAIN), tools(SEC)
    assert RESTRICTED not in json.dumps(plain) and RESTRICTED in json.dumps(sec["search_docs"]["inputSchema"])
    assert RESTRICTED in sec["list_versions"]["inputSchema"]["properties"]["site"]["enum"]
    versions = tool("list_versions", {"site": RESTRICTED})
    assert versions["isError"] is True and not mentions(versions["structuredContent"])
    read = call(server.url, era, "resources/read", {"uri": f"docs://{PAGE}"}, token=PLAIN)
    assert "error" in read.json() and not mentions(read.json()["error"], f"docs://{PAGE}", PAGE)
    assert "result" in call(server.url, era, "resources/read", {"uri": f"docs://{PAGE}"}, token=SEC).json()
    for method in ("resources/list", "resources/templates/list", *(("server/discover",) if era == MODERN else ())):
        assert not mentions(result_of(call(server.url, era, method, token=PLAIN))), method
    found = tool("search_docs", {"query": "operations handbook inventory"})
    assert not any(item.get("site") == RESTRICTED for item in found["structuredContent"]["results"])
    page = tool("get_doc", {"location": PAGE})
    assert page["isError"] is True and page["structuredContent"]["error"]["code"] == "not_found"


def test_an_empty_audience_list_or_an_unknown_site_stops_start_up(static_origin: StaticOrigin) -> None:
    for given, said in (({RESTRICTED: []}, "empty audience list"), ({"zeta-docs": ["sec"]}, "not a configured site")):
        with pytest.raises(ConfigurationError) as refused:
            create_app(load_settings(env(static_origin) | {"Forge__Documentation__SiteAudiences": json.dumps(given)}))
        assert refused.value.key == "Forge__Documentation__SiteAudiences" and said in str(refused.value)


def test_an_entra_token_reads_the_site_with_its_audience_role(static_origin: StaticOrigin) -> None:
    with LocalIssuer() as issuer:
        settings = load_settings(env(static_origin) | issuer.settings())
        with UvicornServer(create_app(settings)) as server:
            holding = issuer.token(roles=["Docs.Read.All", "Docs.Audience.sec"])
            lacking = issuer.token(roles=["Docs.Read.All"])
            with_role = get(server, "/api/docs/get", holding, location=PAGE)
            without = get(server, "/api/docs/get", lacking, location=PAGE)
    assert with_role.status_code == 200 and without.status_code == 404
