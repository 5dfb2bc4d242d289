"""Usage insights over HTTP, black-box: two readers' tokens as two callers, the insights credential, Azurite as the
store, the fixture origin, real apps under uvicorn (one restarted), MCP's submit_feedback over JSON-RPC."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from shared.api import create_app
from shared.settings import load_settings
from tests.api.test_mcp_revisions import MODERN, call, result_of
from tests.support.sites import ROOT, ROOTED_OVERRIDE, fixture_env
from tests.support.uvicorn_server import UvicornServer
from tools.azurite import Azurite
from tools.static_origin import StaticOrigin

ALICE, BOB, INSIGHTS, PUBLISH = "alice-reads", "bob-reads", "docs-team-insights", "pipeline-publishes"
SITE = "beta-docs"
UNANSWERED = "zebra quasar flux rotation for ops@example.com ticket 3f2504e0-4f89-11d3-9a0c-0305e82c3301"
ANSWERED = "beta api authentication"
LONE = "beta metrics dashboards"
"""Asked by one caller only: never shown at the default threshold."""
REPORT = "/api/admin/insights"
WAIT = 30.0


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def insights_env(origin: StaticOrigin, storage: str, container: str, **extra: str) -> dict[str, str]:
    settings = {
        "SearchIndexOverrides": ROOTED_OVERRIDE,
        "Cache__Container": container,
        "Inbound__Tokens": f"{ALICE},{BOB}",
        "Refresh__Tokens": PUBLISH,
        "Insights__Enabled": "true",
        "Insights__Tokens": INSIGHTS,
        "Insights__Container": f"{container}-usage",
        "Search__Semantic": "false",
    }
    return {**fixture_env(origin.url, **(settings | extra)), "AzureWebJobsStorage": storage}


@pytest.fixture
def environment(static_origin: StaticOrigin, azurite: Azurite, blob_container: str) -> Iterator[dict[str, str]]:
    yield insights_env(static_origin, azurite.connection_string, blob_container)


def serve(environ: dict[str, str]) -> UvicornServer:
    return UvicornServer(create_app(load_settings(environ)))


def search(client: httpx.Client, token: str, query: str, **params: str) -> list[dict[str, Any]]:
    answer = client.get("/api/docs/search", params={"q": query, **params}, headers=bearer(token))
    assert answer.status_code == 200, answer.text
    results: list[dict[str, Any]] = answer.json()["results"]
    return results


def eventually(read: Callable[[], dict[str, Any]], done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """What `read` gives once `done` holds (events are written off the request path, in batches)."""
    ends = time.monotonic() + WAIT
    while True:
        got = read()
        if done(got) or time.monotonic() > ends:
            return got
        time.sleep(0.2)


def report_of(client: httpx.Client, **params: str) -> dict[str, Any]:
    answer = client.get(REPORT, params=params, headers=bearer(INSIGHTS))
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_the_report_shows_what_agents_asked_read_and_said(
    environment: dict[str, str], caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.DEBUG)
    with serve(environment) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        for token in (ALICE, BOB):
            assert search(client, token, UNANSWERED) == []
            results = search(client, token, ANSWERED, site=SITE)
            assert len(results) >= 2
            second = results[1]["location"]
            page = client.get("/api/docs/get", params={"location": second}, headers=bearer(token))
            assert page.status_code == 200
        search(client, ALICE, LONE, site=SITE)
        said = call(
            server.url,
            MODERN,
            "tools/call",
            {
                "name": "submit_feedback",
                "arguments": {
                    "location": second,
                    "kind": "outdated",
                    "text": "The example still uses the v1 header; mail alice@example.com for the new one.",
                },
            },
            token=ALICE,
        )
        kept = result_of(said)
        assert not kept.get("isError"), kept
        assert kept["structuredContent"]["location"] == second

        assert client.get(REPORT).status_code == 401
        assert client.get(REPORT, headers=bearer(ALICE)).status_code in (401, 403)  # a reader is not the docs team
        assert client.get(REPORT, headers=bearer(PUBLISH)).status_code in (401, 403)  # nor the docs pipeline
        report = eventually(report_of.__get__(client), lambda r: bool(r["feedback"] and r["readAfterSearch"]))

    unanswered = [entry for entry in report["unanswered"] if "zebra" in entry["question"]]
    assert len(unanswered) == 1 and unanswered[0]["callers"] == 2 and unanswered[0]["searches"] == 2
    assert "@" not in unanswered[0]["question"] and "3f2504e0" not in unanswered[0]["question"]
    read = next(entry for entry in report["readAfterSearch"] if entry["location"] == second)
    assert read["reads"] == 2 and read["afterSearch"] == 2
    assert [(q["question"], q["rank"], q["callers"]) for q in read["questions"]] == [(ANSWERED, 2, 2)]
    feedback = [entry for entry in report["feedback"] if entry["location"] == second]
    assert len(feedback) == 1 and feedback[0]["kind"] == "outdated" and "alice@example.com" not in feedback[0]["text"]
    assert "v1 header" in feedback[0]["text"]
    assert LONE not in json.dumps(report)  # one caller's question, below the threshold
    beta = next(total for total in report["totals"] if total["site"] == SITE)
    assert beta["searches"] == 3 and beta["reads"] == 2 and beta["feedback"] == 1

    # Stored, not in memory: a new instance over the same storage reports the same.
    with serve(environment) as again, httpx.Client(base_url=again.url, timeout=60) as client:
        restarted = report_of(client)
        for name in ("unanswered", "readAfterSearch", "feedback", "totals"):
            assert restarted[name] == report[name]
        # The deployment's own evaluation set, which tools/eval.py runs against it.
        written = tmp_path / "usage-eval.json"
        cli = subprocess.run(
            [sys.executable, "-m", "shared", "insights", "--as-eval", str(written)],
            env=environment,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert cli.returncode == 0, cli.stderr
        cases = json.loads(written.read_text())["cases"]
        assert [(case["query"], case["acceptableLocations"]) for case in cases] == [(ANSWERED, [second])]
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "tools.eval",
                "--eval-set",
                str(written),
                "--base-url",
                again.url,
                "--ready-timeout",
                "0",
                "--output",
                str(tmp_path / "run.json"),
            ],
            env={"DOCS_TOKEN": ALICE},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, run.stderr
        record = json.loads((tmp_path / "run.json").read_text())
        measured = record["aggregate"]
        assert measured["caseCount"] == 1 and measured["fetchSuccessCount"] == 1
        assert measured["hitAt5Count"] == 1 and measured["hitAt1Count"] == 0  # the page read was second

    # The service's own log (the test's HTTP client, httpx, logs the URLs it calls: not the service's).
    logged = "\n".join(record.getMessage() for record in caplog.records if not record.name.startswith("http"))
    for words in ("zebra", "quasar", "authentication", "alice@example.com", "v1 header", "metrics dashboards"):
        assert words not in logged


def test_a_report_needs_insights_on_and_feedback_says_it_is_off(
    static_origin: StaticOrigin, azurite: Azurite, blob_container: str
) -> None:
    environ = insights_env(static_origin, azurite.connection_string, blob_container, Insights__Enabled="false")
    with serve(environ) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        off = client.get(REPORT, headers=bearer(INSIGHTS))
        assert off.status_code == 404 and "Insights__Enabled" in off.json()["error"]["message"]
        said = client.post(
            "/api/docs/feedback",
            json={"location": "beta-docs/faq/", "kind": "wrong", "text": "x"},
            headers=bearer(ALICE),
        )
        assert said.status_code == 400 and "off" in said.json()["error"]["message"]
        tools = result_of(call(server.url, MODERN, "tools/list", token=ALICE))["tools"]
        assert "submit_feedback" not in {tool["name"] for tool in tools}


def test_feedback_is_checked_limited_and_kept_on_its_page(environment: dict[str, str]) -> None:
    with serve(environment) as server, httpx.Client(base_url=server.url, timeout=60) as client:

        def send(body: Any, token: str = BOB) -> httpx.Response:
            return client.post("/api/docs/feedback", json=body, headers=bearer(token))

        assert send({"location": "beta-docs/faq/", "kind": "praise", "text": "x"}).status_code == 400
        assert send({"location": "beta-docs/faq/", "kind": "wrong"}).status_code == 400
        assert send({"location": "beta-docs/faq/", "kind": "wrong", "text": "x" * 2001}).status_code == 400
        assert send({"location": "beta-docs/faq/", "kind": "wrong", "text": "x", "extra": 1}).status_code == 400
        assert send(["not", "an", "object"]).status_code == 400
        assert send({"location": "beta-docs/no-such-page/", "kind": "wrong", "text": "x"}).status_code == 404
        kept = [send({"location": "beta-docs/faq/", "kind": "unclear", "text": f"try {n}"}) for n in range(7)]
        assert [answer.status_code for answer in kept[:3]] == [202, 202, 202]
        assert kept[-1].status_code == 429 and int(kept[-1].headers["Retry-After"]) >= 1
        assert kept[0].json() | {"kind": "unclear"} == kept[0].json() and kept[0].json()["site"] == SITE
        assert send({"location": "beta-docs/faq/", "kind": "wrong", "text": "mine"}, token=ALICE).status_code == 202


def test_with_storage_stopped_requests_are_answered_and_drops_counted(
    static_origin: StaticOrigin, blob_container: str
) -> None:
    storage = Azurite().start()
    try:
        environ = insights_env(static_origin, storage.connection_string, blob_container)
        with serve(environ) as server, httpx.Client(base_url=server.url, timeout=60) as client:
            assert search(client, ALICE, ANSWERED, site=SITE)
            storage.stop()
            for _ in range(3):
                results = search(client, ALICE, ANSWERED, site=SITE)
                assert results
                page = client.get("/api/docs/get", params={"location": results[0]["location"]}, headers=bearer(ALICE))
                assert page.status_code == 200
            health = eventually(lambda: client.get("/api/health").json(), lambda body: body["insights"]["dropped"] > 0)
            assert health["insights"]["dropped"] > 0 and health["insights"]["lastFailure"]
    finally:
        storage.stop()


@pytest.mark.parametrize(
    ("sdk", "era"), [("v1", "legacy"), ("v2", "legacy"), ("v2", "auto")], ids=["sdk 1.x", "client 2.x", "2.x auto"]
)
def test_the_typescript_clients_send_feedback(environment: dict[str, str], sdk: str, era: str) -> None:
    node = shutil.which("node")
    package = "sdk" if sdk == "v1" else "client"
    if node is None or not (ROOT / "node_modules" / "@modelcontextprotocol" / package).is_dir():
        pytest.fail(f"node and the pinned @modelcontextprotocol/{package} are needed: run `make setup`", pytrace=False)
    with serve(environment) as server:
        script = ROOT / "tests" / "support" / "mcp_feedback_client.mjs"
        command = [node, str(script), sdk, era, server.url + "/api/mcp", BOB, "beta-docs/faq/"]
        finished = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert finished.returncode == 0, finished.stderr
    report = json.loads(finished.stdout)
    assert report["annotations"]["readOnlyHint"] is False and report["annotations"]["destructiveHint"] is False
    assert report["kept"]["isError"] is False
    kept = {"accepted": True, "site": SITE, "location": "beta-docs/faq/", "kind": "unclear"}
    assert report["kept"]["structured"] == kept
    assert report["refused"]["isError"] is True and report["refused"]["text"].startswith("bad_request: kind must be")
