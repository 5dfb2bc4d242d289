"""No client holds the server: the MCP endpoint opens no stream (GET and DELETE are 405, as the MCP specification
has a stateless server answer), and one client's requests in flight are bounded, the next answered 429 at once."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import httpx
import pytest

from shared.api import create_app
from shared.api.admin import RateLimit
from shared.api.gate.clients import client_of
from shared.models import Found
from shared.requests import SearchRequest
from tests.support.providers import FakeProvider, result
from tests.support.sites import ROOTED_OVERRIDE, fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin


class HeldProvider(FakeProvider):
    """Answers a search only once the test lets it, so requests stay in flight as long as the test needs."""

    def __init__(self) -> None:
        super().__init__("held", 0, sites=("alpha",))
        self.release = threading.Event()
        self.waiting = 0

    async def search(self, request: SearchRequest) -> Found:
        if request.query != "install":
            return Found([result("quick-0", self.name)])
        self.waiting += 1
        while not self.release.is_set():
            await asyncio.sleep(0.01)
        return Found([result("held-0", self.name)])


@pytest.fixture
def held() -> HeldProvider:
    return HeldProvider()


@pytest.fixture
def server(static_origin: StaticOrigin, held: HeldProvider) -> Iterator[UvicornServer]:
    settings = fixture_settings(
        static_origin.url,
        SearchIndexOverrides=ROOTED_OVERRIDE,
        Search__Semantic="false",
        Inbound__MaxConcurrentPerClient="2",
    )
    with UvicornServer(create_app(settings, embedding=None, providers=(held,))) as running:
        yield running


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_the_mcp_endpoint_holds_no_stream_and_no_session(server: UvicornServer, method: str) -> None:
    headers = {"Accept": "text/event-stream"}
    response = httpx.request(method, server.url + "/api/mcp", headers=headers, timeout=10)
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert response.json()["error"]["code"] == "method_not_allowed"


async def test_one_client_has_at_most_its_bound_in_flight_and_others_are_answered(
    server: UvicornServer, held: HeldProvider
) -> None:
    elsewhere = httpx.AsyncHTTPTransport(local_address="127.0.0.2")  # another client: another address
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=30) as client,
        httpx.AsyncClient(base_url=server.url, timeout=30, transport=elsewhere) as another,
    ):
        first = [asyncio.ensure_future(client.get("/api/docs/search", params={"q": "install"})) for _ in range(2)]
        while held.waiting < 2:
            await asyncio.sleep(0.01)
        refused = await client.get("/api/docs/search", params={"q": "install"})
        # A header the caller writes does not make it someone else.
        spoofed = await client.get("/api/docs/search", params={"q": "x"}, headers={"X-Forwarded-For": "10.0.0.9"})
        other = await another.get("/api/docs/search", params={"q": "x"})
        health = await client.get("/api/health")
        held.release.set()
        answered = await asyncio.gather(*first)
        after = await client.get("/api/docs/search", params={"q": "install"})

    assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
    assert refused.json()["error"]["code"] == "too_many_requests"
    assert spoofed.status_code == 429
    assert other.status_code == 200 and health.status_code == 200  # another client, and health, still answered
    assert [response.status_code for response in answered] == [200, 200]
    assert after.status_code == 200  # the bound is on requests in flight, not a budget spent


@pytest.mark.parametrize(
    ("client", "forwarded", "hops", "expected"),
    [
        (("127.0.0.5", 5000), ["10.0.0.9"], 1, "127.0.0.5"),  # a peer: the header is the caller's text
        (None, ["10.0.0.9, 203.0.113.7:51234"], 1, "203.0.113.7"),  # Functions: the front end's entry, rightmost
        (None, ["10.0.0.9", "[2001:db8::1]:443"], 1, "2001:db8::1"),  # two headers are one list
        (None, ["10.0.0.9, 198.51.100.4, 203.0.113.7"], 2, "198.51.100.4"),  # a proxy of yours in front
        (None, [], 1, "unknown"),
        (None, ["203.0.113.7"], 2, "unknown"),  # fewer entries than hops: not the caller's first entry
    ],
)
def test_the_client_is_what_the_caller_cannot_write(
    client: tuple[str, int] | None, forwarded: list[str], hops: int, expected: str
) -> None:
    headers = [(b"x-forwarded-for", value.encode()) for value in forwarded]
    assert client_of({"type": "http", "client": client, "headers": headers}, hops=hops) == expected


def test_the_rate_table_is_bounded_and_forgets_refilled_callers_first() -> None:
    now = [0.0]
    limit = RateLimit(burst=2, refill=1.0, clock=lambda: now[0], size=100)
    limit.take("guesser")
    limit.take("guesser")
    for number in range(1_000):
        limit.waiting(f"10.0.{number // 256}.{number % 256}")
    assert len(limit) <= 100
    assert limit.waiting("guesser") > 0  # still throttled: it was never the longest idle with an empty bucket
