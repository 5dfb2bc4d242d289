"""A→B→A cannot loop: two deployments under uvicorn, each the other's remote. A request to A goes to B once,
marked as forwarded; B answers it from its own MkDocs and never calls A back."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from shared.api import create_app
from tests.providers.remote.conftest import MCP, Built, Counting, b_settings, wait_bound
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin


@pytest.fixture
def pair(static_origin: StaticOrigin) -> Iterator[tuple[UvicornServer, Counting, UvicornServer, Counting]]:
    """A and B, each with the other's `/api/mcp` as its `Remote__Endpoint` (both bound before either is built)."""
    servers: dict[str, UvicornServer] = {}

    def app_pointing_at(other: str) -> Built:
        def build() -> Counting:
            endpoint = wait_bound(servers[other]) + MCP
            return Counting(create_app(b_settings(static_origin, Remote__Endpoint=endpoint), embedding=None))

        return Built(build)

    a_app, b_app = app_pointing_at("b"), app_pointing_at("a")
    servers["a"], servers["b"] = UvicornServer(a_app), UvicornServer(b_app)
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(UvicornServer.start, servers.values()))
    try:
        yield servers["a"], a_app._app, servers["b"], b_app._app  # type: ignore[misc]
    finally:
        for server in servers.values():
            server.stop()


def test_a_request_forwarded_to_b_is_never_sent_back_to_a(
    pair: tuple[UvicornServer, Counting, UvicornServer, Counting],
) -> None:
    a, a_requests, b, b_requests = pair

    search = httpx.get(a.url + "/api/docs/search", params={"q": "install the agent", "limit": 3}, timeout=20)
    location = search.json()["results"][0]["location"]
    got = httpx.get(a.url + "/api/docs/get", params={"location": location}, timeout=20)
    b_health = httpx.get(b.url + "/api/health").json()["providers"]["smithy_remote"]

    assert search.status_code == 200 and search.json()["provider"] == "smithy_remote"
    assert got.status_code == 200 and got.json()["provider"] == "smithy_remote"
    assert [path for path in a_requests.paths() if path == MCP] == []  # B never called A back
    assert b_requests.paths().count(MCP) >= 2
    assert all(headers.get("x-docs-forwarded") == "1" for path, headers in b_requests.requests if path == MCP)
    assert b_health["lastSuccessAt"] is None and "lastError" not in b_health  # B's remote declined, never tried
