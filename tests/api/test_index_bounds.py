"""One site cannot take an instance down by the size of its index: a 25 MB Zensical `search.json` of 300,000
items, or a small one with too many entries, is refused with its reason before it is held whole (health says why),
and the other sites keep answering. The app under uvicorn, a real static origin, the process's memory watched."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from shared.api import create_app
from tests.api.test_refresh_hook import ResidentPeak
from tests.support.sites import fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tools.index_memory import synthetic
from tools.static_origin import StaticOrigin

HUGE = "huge-docs"


@pytest.fixture
def server(static_origin: StaticOrigin) -> Iterator[UvicornServer]:
    settings = fixture_settings(static_origin.url, Search__Semantic="false", Sites=f"alpha,beta-docs,{HUGE}")
    with UvicornServer(create_app(settings, embedding=None)) as running:
        yield running


def health_of(server: UvicornServer, site: str) -> dict[str, Any]:
    report: dict[str, Any] = httpx.get(server.url + "/api/health", timeout=30).json()
    return report["providers"]["mkdocs"]["sites"][site]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("items", "words", "reason"),
    [(300_000, 8, "larger than 16 MB (MaxIndexMegabytes)"), (60_000, 1, "more than 50,000 (MaxIndexEntries)")],
    ids=["25 MB of 300,000 items", "60,000 small items"],
)
def test_an_index_past_the_bounds_is_refused_with_its_reason_and_the_other_sites_answer(
    server: UvicornServer,
    static_origin: StaticOrigin,
    caplog: pytest.LogCaptureFixture,
    items: int,
    words: int,
    reason: str,
) -> None:
    payload = synthetic(items, words)
    static_origin.respond(f"/{HUGE}/search.json", body=payload, content_type="application/json")
    caplog.set_level(logging.INFO)
    with ResidentPeak() as peak:
        found = httpx.get(server.url + "/api/docs/search", params={"q": "install"}, timeout=60)
    body = found.json()
    assert found.status_code == 200 and body["results"], body
    assert body["sites"][HUGE]["state"] == "failed" and body["sites"]["alpha"]["state"] == "searched"
    shown = health_of(server, HUGE)
    assert shown["state"] == "failed" and not shown["unpublished"] and reason in shown["reason"], shown
    # The payload itself is held by this process (the origin's thread), so what loading it cost is what grew.
    assert peak.grown_mb < 150, peak.grown_mb
    assert not [record for record in caplog.get_records("call") if record.levelno >= logging.ERROR]
