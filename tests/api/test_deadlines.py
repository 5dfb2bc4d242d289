"""One deadline per request, shared by its outbound calls; a hanging provider leaves the fallback its share; a
client that hangs up cancels the work it started. Deadlines are shown by their outcome (an answer where the slow
origin would have given a different one), never by a measured time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest

from shared.api import create_app
from shared.cache import MemoryStore
from shared.compose import compose
from shared.deadline import budget, remaining
from shared.models import Found
from shared.requests import ReadRequest, SearchRequest
from shared.settings import DocumentationSettings
from tests.support.providers import FakeProvider
from tests.support.sites import ROOTED_OVERRIDE, fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tools.azurite import Azurite
from tools.static_origin import StaticOrigin


class HangingProvider(FakeProvider):
    """A provider that never answers until cancelled, and remembers that it was."""

    def __init__(self, name: str, order: int, **kwargs: object) -> None:
        super().__init__(name, order, **kwargs)  # type: ignore[arg-type]
        self.started = asyncio.Event()
        self.cancelled = False

    async def search(self, request: SearchRequest) -> Found:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return Found([])


def settings_for(origin: StaticOrigin, seconds: float) -> DocumentationSettings:
    return fixture_settings(
        origin.url,
        SearchIndexOverrides=ROOTED_OVERRIDE,
        Search__Semantic="false",
        RequestTimeoutSeconds=str(seconds),
    )


def test_the_budget_is_shared_and_an_earlier_enclosing_deadline_holds() -> None:
    assert remaining() is None
    with budget(10):
        outer = remaining()
        assert outer is not None and 8.9 < outer <= 9.0  # less the grace
        with budget(60):
            inner = remaining()
            assert inner is not None and inner <= outer
    assert remaining() is None


async def test_a_hanging_provider_leaves_the_fallback_its_share(static_origin: StaticOrigin) -> None:
    hanging = HangingProvider("hangs", 0, sites=("alpha",))
    app = create_app(settings_for(static_origin, 4), providers=(hanging,))
    with UvicornServer(app) as server:
        response = httpx.get(f"{server.url}/api/docs/search", params={"q": "install"}, timeout=30)

    assert response.status_code == 200 and response.json()["provider"] == "mkdocs"
    assert hanging.cancelled


async def test_a_slow_origin_cannot_hold_a_search_past_its_deadline(static_origin: StaticOrigin) -> None:
    for site in ("alpha", "beta-docs", "gamma-docs"):
        static_origin.respond(f"/{site}/search/search_index.json", status=200, body="{}", delay=30)
    static_origin.respond("/search/search_index.json", status=200, body="{}", delay=30)
    app = create_app(settings_for(static_origin, 2))
    with UvicornServer(app) as server:
        response = httpx.get(f"{server.url}/api/docs/search", params={"q": "install"}, timeout=60)
        health = httpx.get(f"{server.url}/api/health", timeout=10).json()

    assert response.status_code in (503, 504)  # the slow origin would have answered after 30 s
    assert response.json()["error"]["code"] in ("unavailable", "timeout")
    assert health["providers"]["mkdocs"]["sites"]["alpha"]["state"] in ("failed", "not_loaded")


async def test_a_redirect_chain_shares_the_one_deadline(static_origin: StaticOrigin) -> None:
    async with compose(settings_for(static_origin, 30), embedding=None, store=MemoryStore()) as composed:
        await composed.service.search(SearchRequest("install"))  # sites loaded before the trap is set
        for hop in range(3):
            static_origin.respond(
                f"/alpha/guide/install{hop}.md",
                status=302,
                headers={"Location": f"{static_origin.url}/alpha/guide/install{hop + 1}.md"},
                delay=0.6,
            )
        static_origin.respond("/alpha/guide/install.md", status=302, headers={"Location": "install0.md"}, delay=0.6)
        static_origin.respond("/alpha/guide/install/", status=200, body="<html><body>x</body></html>", delay=30)
        with budget(1.5):
            document = await composed.service.get(ReadRequest("guide/install"))

    # Raw Markdown ran out of hops or time, the HTML page out of time: the page is rebuilt from the index instead
    # of the request waiting out four slow hops and a 30 s page.
    assert "fallback: search-index" in document.content


@pytest.fixture
def hanging() -> Iterator[HangingProvider]:
    yield HangingProvider("hangs", 0, sites=("alpha",))


async def test_a_client_that_hangs_up_cancels_the_work_it_started(
    static_origin: StaticOrigin, hanging: HangingProvider
) -> None:
    app = create_app(settings_for(static_origin, 120), providers=(hanging,))
    with UvicornServer(app) as server:
        with pytest.raises(httpx.ReadTimeout):
            httpx.get(f"{server.url}/api/docs/search", params={"q": "install"}, timeout=1)
        for _ in range(200):  # the server notices the hang-up: poll against a deadline
            if hanging.cancelled:
                break
            await asyncio.sleep(0.05)

    assert hanging.started.is_set() and hanging.cancelled


async def test_a_disconnect_reported_once_the_answer_has_started_does_not_cut_it_short() -> None:
    """uvicorn reports a finished (or finishing) response as `http.disconnect`: the answer must still be whole."""
    from shared.api.gate.disconnect import CancelOnDisconnect

    started = asyncio.Event()
    sent: list[dict[str, object]] = []
    calls: list[int] = []

    async def receive() -> dict[str, object]:
        calls.append(1)
        if len(calls) == 1:
            return {"type": "http.request", "body": b"", "more_body": False}
        await started.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    async def app(scope: object, inner_receive: object, inner_send: object) -> None:
        await inner_send({"type": "http.response.start", "status": 200, "headers": []})  # type: ignore[operator]
        started.set()
        for _ in range(5):
            await asyncio.sleep(0)  # the disconnect arrives while the body is still to be written
        await inner_send({"type": "http.response.body", "body": b"whole"})  # type: ignore[operator]

    scope = {"type": "http", "method": "GET", "path": "/api/docs/search"}
    await asyncio.wait_for(CancelOnDisconnect(app)(scope, receive, send), 10)  # type: ignore[arg-type]

    assert [message["type"] for message in sent] == ["http.response.start", "http.response.body"]


def test_a_site_whose_index_hangs_costs_its_own_results_not_the_answer(static_origin: StaticOrigin) -> None:
    static_origin.respond("/gamma-docs/search/search_index.json", body=b"{}", delay=60)  # hangs past the deadline
    settings = fixture_settings(
        static_origin.url,
        SearchIndexOverrides=ROOTED_OVERRIDE,
        Search__Semantic="false",
        Search__SiteWaitSeconds="0.5",
        RequestTimeoutSeconds="5",
    )
    with UvicornServer(create_app(settings, embedding=None)) as server, httpx.Client(base_url=server.url) as api:
        first = api.get("/api/docs/search", params={"q": "metrics"}, timeout=30)
        second = api.get("/api/docs/search", params={"q": "install"}, timeout=30)
        health = api.get("/api/health").json()["providers"]["mkdocs"]["sites"]

    assert first.status_code == 200 and second.status_code == 200  # well within the 5 s deadline, not 504
    answer = first.json()
    assert answer["sites"]["gamma-docs"] == {"state": "loading", "indexedAt": None}
    assert answer["sites"]["alpha"]["state"] == "searched" and answer["sites"]["alpha"]["indexedAt"]
    assert answer["sites"]["missing-docs"] == {"state": "unpublished", "indexedAt": None}
    assert answer["results"] and {hit["site"] for hit in answer["results"]} <= {"alpha", "beta-docs", "rooted-docs"}
    assert second.json()["results"] and second.json()["sites"]["gamma-docs"]["state"] == "loading"
    assert health["gamma-docs"]["state"] == "loading"
    assert len(static_origin.requests_for("/gamma-docs/search/search_index.json")) == 1  # one load, not one a search


def test_a_stalled_store_holds_no_request_and_health_and_the_hook_say_so(static_origin: StaticOrigin) -> None:
    """Azurite stopped (SIGSTOP): it accepts connections and never answers. Requests whose store checks are due
    answer from the indexes in hand well before their deadline, health says the store is unreachable, and a publish
    refresh reports the store's failure instead of waiting it out."""
    with Azurite() as own:
        settings = fixture_settings(
            static_origin.url,
            {"AzureWebJobsStorage": own.connection_string},
            SearchIndexOverrides=ROOTED_OVERRIDE,
            Search__Semantic="false",
            Cache__CheckIntervalSeconds="0",  # a store check rides on every request
            Refresh__Tokens="publish-secret",
            RequestTimeoutSeconds="20",
        )
        app = create_app(settings, embedding=None)
        with UvicornServer(app) as server, httpx.Client(base_url=server.url, timeout=60) as api:
            location = api.get("/api/docs/search", params={"q": "install"}).json()["results"][0]["location"]
            assert api.get("/api/docs/get", params={"location": location}).status_code == 200
            with own.paused():
                answers = []
                for query in ("install", "metrics", "ingress"):
                    for path, params in (("search", {"q": query}), ("get", {"location": location})):
                        started = time.monotonic()
                        response = api.get(f"/api/docs/{path}", params=params)
                        answers.append((path, response.status_code, time.monotonic() - started))
                deadline = time.monotonic() + 10
                while (cache := api.get("/api/health").json()["cache"])["status"] != "unreachable":
                    assert time.monotonic() < deadline, cache
                started = time.monotonic()
                hook = api.post(
                    "/api/admin/refresh", json={"sites": ["alpha"]}, headers={"Authorization": "Bearer publish-secret"}
                )
                hooked = time.monotonic() - started

    # The deadline is 20 s; a stalled store cost each request its 30 s storage timeout before.
    assert all(status == 200 and seconds < 10 for _, status, seconds in answers), answers
    assert hook.status_code == 200 and hooked < 10, (hook.status_code, hooked)
    outcome = hook.json()["sites"]["alpha"]
    assert outcome["outcome"] == "failed" and "storage" in outcome["reason"]
