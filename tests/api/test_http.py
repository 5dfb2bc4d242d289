"""The API end to end over real HTTP: uvicorn serving the app, a real static origin over built MkDocs sites."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from shared.api import create_app
from shared.providers.mkdocs.scoring.parameters import DEFAULT
from shared.providers.mkdocs.scoring.semantics import length
from shared.providers.mkdocs.scoring.text import analyze_query
from shared.validation import MAX_QUERY_LENGTH
from tests.support.sites import (
    DEFAULT_SITE,
    HTML_ONLY_PAGE,
    PHANTOM_PAGE,
    PUBLISHED_SITES,
    ROOT_INDEX_PATH,
    ROOTED_OVERRIDE,
    TASK,
    fixture_settings,
)
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin

SECRET = "sig=SECRET-7f3a9"
EVERY_SITE_SEARCHED = {site: "searched" for site in PUBLISHED_SITES} | {"missing-docs": "unpublished"}


@contextmanager
def served(origin: StaticOrigin, **overrides: str) -> Iterator[httpx.Client]:
    """A client of the app under uvicorn over the fixture origin, with these settings besides the fixture's."""
    settings = fixture_settings(origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, **overrides)
    with UvicornServer(create_app(settings)) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


@pytest.fixture
def api(static_origin: StaticOrigin, request: pytest.FixtureRequest) -> Iterator[httpx.Client]:
    with served(static_origin, **getattr(request, "param", {})) as client:
        yield client


def search(api: httpx.Client, q: str, **params: Any) -> dict[str, Any]:
    response = api.get("/api/docs/search", params={"q": q, **params})
    assert response.status_code == 200, response.text
    return response.json()


def get(api: httpx.Client, location: str, status: int = 200) -> dict[str, Any]:
    response = api.get("/api/docs/get", params={"location": location})
    assert response.status_code == status, response.text
    return response.json()


def test_search_answers_with_qualified_locations_and_published_urls(
    api: httpx.Client, static_origin: StaticOrigin
) -> None:
    body = search(api, "webhook secret", limit=10)
    assert body["provider"] == "mkdocs" and body["query"] == "webhook secret"
    assert body["results"]
    for result in body["results"]:
        assert set(result) >= {"location", "title", "url", "site", "previewText", "score", "provider", "anchor"}
        assert result["anchor"] is None or "#" not in result["anchor"]
        unqualified = result["location"] if result["site"] == DEFAULT_SITE else result["location"].split("/", 1)[1]
        assert result["url"] == f"{static_origin.url}/{result['site']}/{unqualified}"
    other = search(api, "metrics exporters", site="gamma-docs")
    assert other["results"] and all(r["location"].startswith("gamma-docs/") for r in other["results"])


def test_every_search_result_location_can_be_passed_back_to_get(api: httpx.Client) -> None:
    for query in ("install", "authentication", "dns records", "first steps"):
        for result in search(api, query, limit=5)["results"]:
            document = get(api, result["location"])
            assert document["site"] == result["site"]
            assert document["resolution"]["reason"] == "resolved"


def test_wildcard_lists_pages_round_robin_across_sites_and_caps_at_25(api: httpx.Client) -> None:
    listing = search(api, "*", limit=50)["results"]
    assert len(listing) <= 25
    assert all("#" not in result["location"] for result in listing)
    first_sites = [result["site"] for result in listing[:4]]
    assert first_sites == ["alpha", "beta-docs", "gamma-docs", "rooted-docs"]
    roots = {result["location"] for result in listing[:4]}
    assert roots == {"", "beta-docs", "gamma-docs", "rooted-docs"}  # a site root qualifies to the bare site name
    assert len(search(api, "*", limit=3)["results"]) == 3
    scored = search(api, "* webhook")["results"]
    assert scored and any("webhook" in result["location"] for result in scored)


def states(sites: dict[str, dict[str, str]]) -> dict[str, str]:
    """Each site's state in an answer's `sites`, without its `indexedAt`."""
    return {site: stood["state"] for site, stood in sites.items()}


def test_no_match_is_an_empty_list_attributed_to_none(api: httpx.Client) -> None:
    body = search(api, "zzqxv nonexistentterm")
    sites = body.pop("sites")
    assert body == {"query": "zzqxv nonexistentterm", "provider": "none", "results": []}
    assert states(sites) == EVERY_SITE_SEARCHED
    fetched = {site: datetime.fromisoformat(stood["indexedAt"]) for site, stood in sites.items() if stood["indexedAt"]}
    assert set(fetched) == set(PUBLISHED_SITES)  # an unpublished site has no index to date
    assert all(datetime.now(UTC) - when < timedelta(minutes=5) for when in fetched.values())


def test_get_prefers_raw_markdown(api: httpx.Client, static_origin: StaticOrigin) -> None:
    document = get(api, "guide/install")
    assert document["location"] == "guide/install/" and document["site"] == DEFAULT_SITE
    assert document["url"] == f"{static_origin.url}/alpha/guide/install/"
    assert document["requestedLocation"] == "guide/install"
    assert document["provider"] == "mkdocs"
    front, body = document["content"].split("---\n", 2)[1:]
    assert f"source: {static_origin.url}/alpha/guide/install/" in front and "site: alpha" in front
    assert "retrieved: " in front
    assert body.strip()
    assert "/alpha/guide/install.md" in static_origin.paths()
    assert "/alpha/guide/install/" not in static_origin.paths()


def test_get_falls_back_to_html_when_the_markdown_twin_is_missing(
    api: httpx.Client, static_origin: StaticOrigin
) -> None:
    document = get(api, HTML_ONLY_PAGE)
    assert document["resolution"]["rule"] == "exact"
    assert f"/alpha/{HTML_ONLY_PAGE}.md" in static_origin.paths()
    assert f"/alpha/{HTML_ONLY_PAGE}/" in static_origin.paths()
    content = document["content"]
    assert content.count("---\n") >= 2 and "<div" not in content and "\n# " in content


@pytest.mark.parametrize(
    ("raw", "content_type"),
    [
        ("   \n\t", "text/markdown"),
        ("<!DOCTYPE html><html><body>soft 404</body></html>", "text/markdown"),
        ("# Looks like markdown", "text/html"),
    ],
)
def test_raw_markdown_that_is_empty_or_really_html_falls_back(
    api: httpx.Client, static_origin: StaticOrigin, raw: str, content_type: str
) -> None:
    static_origin.respond("/alpha/guide/install.md", body=raw, content_type=content_type)
    content = get(api, "guide/install")["content"]
    assert "soft 404" not in content and "Looks like markdown" not in content
    assert "/alpha/guide/install/" in static_origin.paths()


@pytest.mark.parametrize("api", [{"RawMarkdownUrlPattern": ""}], indirect=True)
def test_empty_raw_pattern_disables_raw_markdown(api: httpx.Client, static_origin: StaticOrigin) -> None:
    get(api, "guide/install")
    assert not [path for path in static_origin.paths() if path.endswith(".md")]


def test_phantom_entry_resolves_then_fails_to_fetch(api: httpx.Client) -> None:
    body = get(api, PHANTOM_PAGE, status=502)
    assert body["error"]["code"] == "fetch_failed"
    assert (body["resolution"]["reason"], body["resolution"]["rule"]) == ("fetch_failed", "exact")
    assert body["resolution"]["location"] == f"{PHANTOM_PAGE}/"


def test_a_phantom_found_by_get_leaves_search_and_health_counts_it(api: httpx.Client) -> None:
    phantom = f"{PHANTOM_PAGE}/"
    assert phantom in {result["location"] for result in search(api, "legacy phantom removed")["results"]}

    assert get(api, PHANTOM_PAGE, status=502)["error"]["code"] == "fetch_failed"

    assert phantom not in {result["location"] for result in search(api, "legacy phantom removed")["results"]}
    assert phantom not in {result["location"] for result in search(api, "*", limit=25, site=DEFAULT_SITE)["results"]}
    assert get(api, PHANTOM_PAGE, status=502)["error"]["code"] == "fetch_failed"  # still, when asked by location
    sites = api.get("/api/health").json()["providers"]["mkdocs"]["sites"]
    assert sites[DEFAULT_SITE]["missingPages"] == 1
    assert {sites[site]["missingPages"] for site in PUBLISHED_SITES if site != DEFAULT_SITE} == {0}


@pytest.mark.parametrize(
    ("location", "status", "reason", "rule", "site", "resolved"),
    [
        ("faq", 200, "resolved", "exact", "alpha", "faq/"),
        ("contributing", 200, "resolved", "exact", "alpha", "CONTRIBUTING/"),
        ("guide/index.md", 200, "resolved", "variant", "alpha", "guide/"),
        ("guide.md", 200, "resolved", "variant", "alpha", "guide/"),
        ("index", 200, "resolved", "variant", "alpha", ""),
        ("beta-docs", 200, "resolved", "exact", "beta-docs", ""),
        ("beta-docs/api/authentication.md", 200, "resolved", "variant", "beta-docs", "api/authentication/"),
        ("beta-docs/gamma-docs/page", 200, "resolved", "exact", "beta-docs", "gamma-docs/page/"),
        (
            "gamma-docs/gamma-docs/exporters/metrics",
            200,
            "resolved",
            "exact",
            "gamma-docs",
            "gamma-docs/exporters/metrics/",
        ),
        ("first-steps", 200, "resolved", "canonical-leaf", "gamma-docs", "tutorials/first-steps/"),
        ("rooted-docs/dns/records/", 200, "resolved", "exact", "rooted-docs", "dns/records/"),
        ("metrics", 409, "ambiguous", "exact", None, None),
        ("webhook", 404, "not_found", "none", None, None),
        ("guide/backup-and-restore", 200, "resolved", "redirect", "alpha", "ops/backup/"),  # moved_from's stub
        ("troubleshoot/SAIFTRBL-0042", 200, "resolved", "redirect", "alpha", "ops/webhook/"),
        ("delta-docs/nothing/here", 404, "unknown_site", "none", None, None),
        ("release-notes/v9", 404, "not_found", "none", None, None),
        ("missing-docs/anything", 503, "site_unavailable", "none", None, None),
    ],
)
def test_resolution_outcomes_over_http(
    api: httpx.Client, location: str, status: int, reason: str, rule: str, site: str | None, resolved: str | None
) -> None:
    body = get(api, location, status=status)
    resolution = body["resolution"]
    assert (resolution["reason"], resolution["rule"], resolution["site"], resolution["location"]) == (
        reason,
        rule,
        site,
        resolved,
    )
    assert resolution["requestedLocation"] == location
    assert set(resolution) == {
        "requestedLocation",
        "reason",
        "rule",
        "site",
        "location",
        "candidates",
        "detail",
        "suggestions",
    }
    if status != 200:
        assert body["error"]["code"] == reason and body["error"]["message"]
    if reason == "ambiguous":
        assert sorted(resolution["candidates"]) == ["beta-docs/metrics/", "gamma-docs/metrics/"]


def test_a_pasted_url_under_the_origin_is_accepted(api: httpx.Client, static_origin: StaticOrigin) -> None:
    document = get(api, f"{static_origin.url}/beta-docs/api/authentication/#tokens")
    assert (document["site"], document["location"]) == ("beta-docs", "beta-docs/api/authentication/")


@pytest.mark.parametrize("api", [{"Search__MinScore": "0"}], indirect=True)  # ranked, whatever the floor says
def test_a_task_description_as_an_agent_writes_it_is_searched_whole(api: httpx.Client) -> None:
    assert 512 < len(TASK) <= MAX_QUERY_LENGTH
    body = search(api, TASK, limit=3)
    assert body["query"] == TASK and body["results"][0]["location"] == "guide/install/"


def test_a_long_question_ranked_by_terms_is_held_to_a_floor_that_falls_with_its_length(
    static_origin: StaticOrigin,
) -> None:
    question = (
        "Our new Debian machines have nothing of ours on them yet. I am automating the rollout of our monitoring "
        "stack across them. Which signing key do I trust, which package do I install with apt, how do I enable the "
        "agent service so it survives a reboot, and how do I check that it started and reports healthy?"
    )
    shrink = length(analyze_query(question), DEFAULT) ** DEFAULT.floor_power
    assert shrink < 1  # more distinct terms than balance_words
    with served(static_origin, Search__MinScore="0") as api:
        best = search(api, question)["results"][0]
        unfloored = search(api, "install")["results"]
    # A floor the best page misses, but not once scaled by the question's length (as its scores are).
    floor = best["score"] / shrink**0.5
    with served(static_origin, Search__MinScore=f"{floor:.6f}") as api:
        answered = search(api, question)["results"]
        short = search(api, "install")["results"]

    assert best["location"] == "guide/install/" and best["score"] < floor
    assert [result["location"] for result in answered] == ["guide/install/"]
    kept = [result["location"] for result in unfloored if result["score"] >= floor]
    assert [result["location"] for result in short] == kept  # a short question's floor is the setting


@pytest.mark.parametrize(
    ("path", "params", "words"),
    [
        ("/api/docs/search", {}, "q is required"),
        ("/api/docs/search", {"q": "   "}, "q is required"),
        ("/api/docs/search", {"q": "x", "limit": "ten"}, "limit"),
        ("/api/docs/search", {"q": "x", "limit": "0"}, "limit"),
        ("/api/docs/search", {"q": "x", "limit": "51"}, "limit"),
        ("/api/docs/search", {"q": "x" * 1025}, "at most 1024 characters"),
        ("/api/docs/search", {"q": "bad\x07bell"}, "control"),
        ("/api/docs/search", {"q": "x", "site": "nowhere"}, "site must be one of"),
        ("/api/docs/get", {}, "location is required"),
        ("/api/docs/get", {"location": "a\x00b"}, "control"),
        ("/api/docs/get", {"location": "x" * 2000}, "location"),
        ("/api/docs/get", {"location": "../../etc/passwd"}, "segments"),
        ("/api/docs/search", [("q", "sync"), ("q", "rbac")], "q must be given once"),
        ("/api/docs/get", [("location", "faq"), ("location", "rbac")], "location must be given once"),
    ],
)
def test_bad_input_is_a_400_with_a_reason(api: httpx.Client, path: str, params: object, words: str) -> None:
    response = api.get(path, params=params)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "bad_request" and words in error["message"]


@pytest.mark.parametrize(
    "template",
    [
        "{outside}/alpha/faq/",
        "//{outside_host}/alpha/faq/",
        "alpha/%2e%2e/%2e%2e/{outside_host}",
        "{outside}/../alpha/faq",
        "alpha/..%2f..%2fsecret",
        "alpha/%252e%252e/%252e%252e/{outside_host}",
        "http://user:pass@{outside_host}/alpha/faq/",
        "{origin}@{outside_host}/alpha/faq/",
        "http://[::1]:{outside_port}/alpha/faq/",
        "http://2130706433:{outside_port}/alpha/faq/",
        "http://0x7f.1:{outside_port}/alpha/faq/",
        "alpha\\..\\..\\{outside_host}",
        "alpha/%5c..%5c..%5c{outside_host}",
        "/\\{outside_host}/alpha/faq/",
        "alpha/%C0%AE%C0%AE/%C0%AE%C0%AE/secret",
        "alpha/\uff0e\uff0e/\uff0e\uff0e/secret",
    ],
)
def test_locations_never_reach_another_host(
    api: httpx.Client, static_origin: StaticOrigin, outside_host: StaticOrigin, template: str
) -> None:
    host = outside_host.url.split("//", 1)[1]
    location = template.format(
        outside=outside_host.url, outside_host=host, outside_port=host.rsplit(":", 1)[1], origin=static_origin.url
    )
    response = api.get("/api/docs/get", params={"location": location})
    assert response.status_code in (400, 404), response.text
    assert outside_host.requests == []


DOT_SPELLINGS = [
    "alpha/..;/hostile/target",
    "forge/..;/hostile/target",
    "guide/..;/hostile/target",
    "alpha/.;/hostile/target",
    "alpha/..;jsessionid=x/hostile/target",
    "alpha/\uff0e\uff0e/hostile/target",  # fullwidth full stops
    "alpha/\u2025/hostile/target",  # the two-dot leader
    "alpha/\u2024\u2024/hostile/target",  # one-dot leaders
    "alpha/%EF%BC%8E%EF%BC%8E/hostile/target",  # fullwidth, percent-encoded
    "alpha/%E2%80%A5/hostile/target",  # the two-dot leader, percent-encoded
    "alpha/%2e%2e%3b/hostile/target",
    "alpha/%252e%252e;/hostile/target",
    "alpha/%25E2%2580%25A5/hostile/target",  # encoded twice
    "hostile\uff0fsecret/..;",  # a fullwidth slash before a dot segment
]


@pytest.mark.parametrize("location", DOT_SPELLINGS)
def test_a_dot_segment_in_any_spelling_is_refused_before_any_origin_request(
    api: httpx.Client, static_origin: StaticOrigin, location: str
) -> None:
    search(api, "install")  # every site loaded: only the location itself could reach the origin now
    static_origin.clear_requests()
    response = api.get("/api/docs/get", params={"location": location})
    assert response.status_code == 400, response.text
    assert "segments in any spelling" in response.json()["error"]["message"]
    assert static_origin.requests == []


def test_redirects_leaving_the_origin_are_not_followed(
    api: httpx.Client, static_origin: StaticOrigin, outside_host: StaticOrigin
) -> None:
    static_origin.redirect("/alpha/faq.md", f"{outside_host.url}/alpha/faq.md")
    static_origin.redirect("/alpha/faq/", f"{outside_host.url}/alpha/faq/")
    body = get(api, "faq", status=502)
    assert body["resolution"]["reason"] == "fetch_failed"
    assert outside_host.requests == []


def test_redirects_inside_the_site_are_followed(api: httpx.Client, static_origin: StaticOrigin) -> None:
    static_origin.redirect("/alpha/faq.md", f"{static_origin.url}/alpha/guide/install.md")
    assert get(api, "faq")["content"]


def test_health_reports_site_state_without_loading(api: httpx.Client, static_origin: StaticOrigin) -> None:
    before = api.get("/api/health").json()
    assert before["status"] == "ok"
    mkdocs = before["providers"]["mkdocs"]
    assert (mkdocs["order"], mkdocs["fetch"], mkdocs["origin"]) == (100, True, static_origin.url)
    assert {state["state"] for state in mkdocs["sites"].values()} == {"not_loaded"}
    assert before["cache"]["kind"] == "memory"
    assert static_origin.requests == []
    search(api, "install")
    after = api.get("/api/health").json()["providers"]["mkdocs"]["sites"]
    assert after["alpha"]["state"] == "loaded" and after["missing-docs"]["state"] == "failed"
    assert after["rooted-docs"]["state"] == "loaded"


def test_concurrent_first_requests_load_each_index_once(api: httpx.Client, static_origin: StaticOrigin) -> None:
    async def burst() -> list[int]:
        async with httpx.AsyncClient(base_url=str(api.base_url), timeout=30) as client:
            responses = await asyncio.gather(
                *(client.get("/api/docs/search", params={"q": "install"}) for _ in range(12))
            )
        return [response.status_code for response in responses]

    assert set(asyncio.run(burst())) == {200}
    assert len(static_origin.requests_for("/alpha/search/search_index.json")) == 1
    assert len(static_origin.requests_for(ROOT_INDEX_PATH)) == 1
    assert len(static_origin.requests_for("/missing-docs/search/search_index.json")) == 1
    search(api, "install")
    assert len(static_origin.requests_for("/missing-docs/search/search_index.json")) == 1  # failed for the process


def test_a_malformed_index_fails_only_that_site(api: httpx.Client, static_origin: StaticOrigin) -> None:
    static_origin.respond("/beta-docs/search/search_index.json", body="{not json", content_type="application/json")
    results = search(api, "*", limit=25)["results"]
    assert "beta-docs" not in {result["site"] for result in results}
    assert {"alpha", "gamma-docs"} <= {result["site"] for result in results}
    assert get(api, "beta-docs/faq", status=503)["resolution"]["reason"] == "site_unavailable"


def test_origin_down_without_cache_is_unavailable_not_no_match(api: httpx.Client, static_origin: StaticOrigin) -> None:
    static_origin.stop()
    searched = api.get("/api/docs/search", params={"q": "install"})
    assert searched.status_code == 503
    body = searched.json()
    assert body["error"]["code"] == "unavailable"
    assert set(body["providers"]["mkdocs"]) == {"alpha", "beta-docs", "gamma-docs", "rooted-docs", "missing-docs"}
    assert "origin request failed" in body["providers"]["mkdocs"]["alpha"]
    got = get(api, "guide/install", status=503)
    assert got["resolution"]["reason"] == "site_unavailable"
    health = api.get("/api/health")
    assert health.status_code == 503 and health.json()["status"] == "unavailable"
    mkdocs = health.json()["providers"]["mkdocs"]
    assert mkdocs["sites"]["alpha"]["state"] == "failed" and mkdocs["sites"]["alpha"]["retryAt"]


def test_no_raw_query_or_location_is_logged(api: httpx.Client, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        search(api, f"install {SECRET}")
        search(api, f"zzqxv {SECRET}")
        api.get("/api/docs/get", params={"location": f"guide/install?{SECRET}"})
        api.get("/api/docs/get", params={"location": f"no/such/{SECRET}"})
        api.get("/api/docs/get", params={"location": f"install.md#{SECRET}"})
    service_records = [record for record in caplog.records if not record.name.startswith(("httpx", "httpcore"))]
    assert service_records  # the test client's own request log is not the service's
    assert not [record.getMessage() for record in service_records if "SECRET-7f3a9" in record.getMessage()]


def test_openapi_document_describes_the_contract(api: httpx.Client) -> None:
    spec = api.get("/api/openapi.json").json()
    assert {"/api/docs/search", "/api/docs/get", "/api/health"} <= set(spec["paths"])
    search_op = spec["paths"]["/api/docs/search"]["get"]
    assert {param["name"] for param in search_op["parameters"]} == {"q", "limit", "site", "version", "kind", "language"}
    assert {"200", "400"} <= set(search_op["responses"])
    assert {"404", "409", "502", "503"} <= set(spec["paths"]["/api/docs/get"]["get"]["responses"])


@pytest.mark.parametrize("api", [{"Search__MinScore": "1000"}], indirect=True)
def test_results_below_the_relevance_floor_are_dropped(api: httpx.Client) -> None:
    body = search(api, "install")
    assert states(body.pop("sites")) == EVERY_SITE_SEARCHED
    assert body == {"query": "install", "provider": "none", "results": []}
    assert search(api, "*")["results"]  # a listing is not scored, so the floor does not apply


def test_every_listed_page_of_every_site_fetches_from_the_location_search_gave(api: httpx.Client) -> None:
    """The spec's round-trip contract over the whole fixture build, including percent-encoded locations and a
    default-site folder named like another site."""
    checked = 0
    for site in PUBLISHED_SITES:
        listing = api.get("/api/docs/search", params={"q": "*", "limit": 25, "site": site}).json()["results"]
        assert listing and len(listing) < 25  # every page of the site is listed
        for result in listing:
            got = api.get("/api/docs/get", params={"location": result["location"]})
            if result["location"].endswith("legacy/phantom/"):
                assert got.status_code == 502  # the phantom entry resolves, then has nothing to fetch
                continue
            assert got.status_code == 200, (result["location"], got.text)
            body = got.json()
            assert (body["site"], body["resolution"]["reason"]) == (site, "resolved"), result["location"]
            assert body["url"] == result["url"]
            assert body["resolution"]["requestedLocation"] == body["requestedLocation"] == result["location"]
            checked += 1
    locations = {result["location"] for result in search(api, "café espresso grinder")["results"]}
    assert "caf%C3%A9%20setup/" in locations
    assert "alpha/gamma-docs/overview/" in {r["location"] for r in search(api, "gamma handbook migrating")["results"]}
    assert checked >= 25


def test_a_multi_line_query_is_answered(api: httpx.Client) -> None:
    found = api.get("/api/docs/search", params={"q": "Error: install failed\r\n  while running the\n\tagent"})
    assert found.status_code == 200 and found.json()["results"]


def test_a_missing_twin_and_a_failing_page_fall_back_to_the_index(
    api: httpx.Client, static_origin: StaticOrigin
) -> None:
    static_origin.fail("/alpha/guide/install.md", 404)
    static_origin.fail("/alpha/guide/install/", 500)
    body = get(api, "guide/install")
    assert "fallback: search-index" in body["content"]


def test_one_unencodable_character_in_an_index_never_breaks_its_site(
    static_origin: StaticOrigin, built_origin: Path
) -> None:
    index = json.loads((built_origin / DEFAULT_SITE / "search" / "search_index.json").read_text())
    index["docs"].append({"location": "odd/", "title": "Odd\ud800 page", "text": "<p>zebracorn \udfff</p>"})
    body = json.dumps(index).encode()  # JSON escapes the lone surrogates: valid JSON
    static_origin.respond(f"/{DEFAULT_SITE}/search/search_index.json", body=body, content_type="application/json")
    settings = fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false")
    with UvicornServer(create_app(settings, embedding=None)) as server, httpx.Client(base_url=server.url) as client:
        found = client.get("/api/docs/search", params={"q": "zebracorn"})
        health = client.get("/api/health").json()
    assert found.status_code == 200 and found.json()["results"][0]["title"] == "Odd\ufffd page"
    assert health["providers"]["mkdocs"]["sites"][DEFAULT_SITE]["state"] == "loaded"


@pytest.mark.parametrize(
    ("path", "params", "named"),
    [
        ("/api/docs/search", {"q": "install", "limt": "3"}, "no parameter `limt` here; this takes: q, limit, site"),
        ("/api/docs/get", {"location": "guide/install", "max_results": "3"}, "no parameter `max_results` here"),
    ],
)
def test_a_parameter_a_route_does_not_take_is_refused_naming_those_it_does(
    api: httpx.Client, path: str, params: dict[str, str], named: str
) -> None:
    response = api.get(path, params=params)
    assert response.status_code == 400 and named in response.json()["error"]["message"]
    assert (
        api.get(path, params={k: v for k, v in params.items() if k in ("q", "location")} | {"code": "k"}).status_code
        == 200
    )


def test_a_near_miss_site_is_answered_with_the_nearest_sites_first(api: httpx.Client) -> None:
    searched = api.get("/api/docs/search", params={"q": "install", "site": "gamma"})
    got = api.get("/api/docs/get", params={"location": "beta-doc/api/no-such-page"})
    assert searched.status_code == 400
    assert searched.json()["error"]["message"].startswith("site must be one of: gamma-docs, alpha")
    assert got.status_code == 404 and got.json()["error"]["code"] == "unknown_site"
    assert got.json()["resolution"]["detail"] == "'beta-doc' is not a configured site; the nearest: beta-docs"


@pytest.mark.parametrize(
    ("location", "meant"),
    [
        ("guide/instal", "guide/install/"),
        ("guide/configration", "guide/configuration/"),
        ("beta-docs/api/authentcation", "beta-docs/api/authentication/"),
        ("ops/backups-and-restore", "ops/backup/"),
    ],
)
def test_a_miss_offers_the_pages_near_it_and_each_suggestion_fetches(
    api: httpx.Client, static_origin: StaticOrigin, location: str, meant: str
) -> None:
    static_origin.clear_requests()
    body = get(api, location, status=404)
    suggestions = body["resolution"]["suggestions"]
    assert body["error"]["code"] in ("not_found", "unknown_site") and meant in suggestions[:3]
    assert 1 <= len(suggestions) <= 5
    # A site without an MkDocs index is asked for a Zensical one, then whether it is versioned.
    indexes = ("search_index.json", "search.json", "versions.json")
    asked = [request.path for request in static_origin.requests if not request.path.endswith(indexes)]
    assert len(asked) == 1 and asked[0].endswith(location.split("/", 1)[-1] + "/")  # one probe for a redirect stub
    # at the path asked for; the suggestions themselves come from the indexes in hand
    for suggested in suggestions:
        assert get(api, suggested)["resolution"]["reason"] == "resolved"


STUB = (
    '<!doctype html><html><head><title>Redirecting...</title><link rel="canonical" href="{to}">'
    '<meta http-equiv="refresh" content="0; url={to}"></head><body>Moved.</body></html>'
)


def test_an_old_path_resolves_through_the_origins_stub_once_per_index_version(
    api: httpx.Client, static_origin: StaticOrigin
) -> None:
    static_origin.respond("/alpha/old-guides/access-control/", body=STUB.format(to="../../guide/configuration/"))
    first = get(api, "old-guides/access-control")  # shaped like a site-qualified path: unknown_site, then the stub
    second = get(api, "old-guides/access-control")
    assert first["resolution"]["rule"] == "redirect" and first["location"] == "guide/configuration/"
    assert second["content"] == first["content"]
    assert len(static_origin.requests_for("/alpha/old-guides/access-control/")) == 1  # remembered


def test_a_stub_pointing_off_the_site_or_the_origin_is_not_followed(
    api: httpx.Client, static_origin: StaticOrigin, outside_host: StaticOrigin
) -> None:
    static_origin.respond("/alpha/gone/elsewhere/", body=STUB.format(to=f"{outside_host.url}/alpha/guide/install/"))
    static_origin.respond("/alpha/gone/other-site/", body=STUB.format(to="../../../beta-docs/api/authentication/"))
    for old in ("gone/elsewhere", "gone/other-site"):
        assert get(api, old, status=404)["error"]["code"] == "not_found"
    assert outside_host.requests == []


def test_an_indexed_page_that_became_a_stub_is_served_as_the_page_it_points_to(
    api: httpx.Client, static_origin: StaticOrigin
) -> None:
    static_origin.respond("/alpha/guide/webhook.md", status=404, body="not found")
    static_origin.respond("/alpha/guide/webhook/", body=STUB.format(to="../../ops/webhook/"))
    page = get(api, "guide/webhook")
    assert page["resolution"]["rule"] == "redirect" and page["location"] == "ops/webhook/"
    assert "# Operating the webhook receiver" in page["content"] and "Redirecting" not in page["content"]
