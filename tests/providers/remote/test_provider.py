"""The remote provider on its own, against B, a dead or silent endpoint, or a server that does not speak MCP: every
failure is a RemoteError of the right kind (a ResolutionError for a remote miss), the cooldown declines without
connecting and ends, tokens come from the configured scope, and calls stay within the request's deadline."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from azure.core.credentials import AccessToken
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shared.deadline import budget
from shared.errors import ProviderDeclinedError, ResolutionError
from shared.models import Reason
from shared.providers.remote import RemoteError, RemoteProvider, forwarded_request
from shared.requests import ReadRequest, SearchRequest
from shared.settings import RemoteSettings
from tests.providers.remote.conftest import MCP, DeadEndpoint, Deployment
from tests.support.clock import Clock
from tests.support.uvicorn_server import UvicornServer


def remote(endpoint: str, **options: Any) -> RemoteSettings:
    return RemoteSettings.model_validate({"Endpoint": endpoint, **options})


class FakeCredential:
    """An async token credential that hands out one token and records the scopes asked for."""

    def __init__(self, token: str | None) -> None:
        self.token, self.scopes, self.closed = token, [], False

    async def get_token(self, *scopes: str, **_: Any) -> AccessToken:
        self.scopes.append(scopes)
        if self.token is None:
            raise RuntimeError("no identity here")
        return AccessToken(self.token, int(time.time()) + 3600)

    async def close(self) -> None:
        self.closed = True


@pytest.fixture
def not_mcp() -> Iterator[UvicornServer]:
    """Answers `/api/mcp` with whatever the test sets: a status, or JSON that is not JSON-RPC."""
    answer: dict[str, Any] = {"status": 500, "body": {"error": "boom"}}

    async def endpoint(_: Request) -> Response:
        return JSONResponse(answer["body"], status_code=answer["status"])

    with UvicornServer(Starlette(routes=[Route(MCP, endpoint, methods=["GET", "POST", "DELETE"])])) as server:
        server.answer = answer  # type: ignore[attr-defined]
        yield server


async def test_search_and_get_through_b(deploy: Callable[..., Deployment]) -> None:
    b = deploy()
    provider = RemoteProvider(remote(b.mcp), sites=("alpha",))

    results = (await provider.search(SearchRequest("install the agent", limit=2))).results
    document = await provider.get(ReadRequest(results[0].location))
    with pytest.raises(ResolutionError) as missed:
        await provider.get(ReadRequest("metrics"))

    assert 1 <= len(results) <= 2 and {r.provider for r in results} == {"smithy_remote"}
    assert document.provider == "smithy_remote" and document.content.startswith("---\nsource: ")
    assert missed.value.resolution.reason is Reason.AMBIGUOUS
    assert missed.value.resolution.candidates == ["beta-docs/metrics/", "gamma-docs/metrics/"]
    assert provider.health().last_answer.remote_provider == "mkdocs"  # type: ignore[union-attr]


async def test_a_site_b_does_not_serve_is_a_tool_failure_without_cooldown(deploy: Callable[..., Deployment]) -> None:
    b = deploy(Sites="alpha,rooted-docs")
    provider = RemoteProvider(remote(b.mcp), sites=("alpha", "beta-docs"))

    with pytest.raises(RemoteError) as failed:
        await provider.search(SearchRequest("install", limit=3, site="beta-docs"))

    assert failed.value.kind == "tool" and "bad_request" in str(failed.value)
    assert provider.health().cooling_down_until is None
    assert await provider.search(SearchRequest("install the agent", limit=3))  # still asked


async def test_the_cooldown_declines_without_connecting_and_then_ends(dead_endpoint: DeadEndpoint) -> None:
    clock = Clock()
    provider = RemoteProvider(remote(dead_endpoint.url, CooldownSeconds="60"), sites=("alpha",), clock=clock)

    with pytest.raises(RemoteError) as failed:
        await provider.search(SearchRequest("install", limit=3))
    connected = dead_endpoint.connections
    with pytest.raises(ProviderDeclinedError):
        await provider.get(ReadRequest("guide/install"))
    clock.now += 59
    with pytest.raises(ProviderDeclinedError):
        await provider.search(SearchRequest("install", limit=3))
    assert dead_endpoint.connections == connected and provider.health().status == "degraded"
    clock.now += 2
    assert provider.health().cooling_down_until is None
    with pytest.raises(RemoteError):
        await provider.search(SearchRequest("install", limit=3))

    assert failed.value.kind == "unreachable" and connected >= 1
    assert dead_endpoint.connections > connected  # tried again once the cooldown was over


async def test_a_silent_endpoint_times_out_within_the_setting_and_cools_down() -> None:
    silent = DeadEndpoint(hold=True)
    try:
        provider = RemoteProvider(remote(silent.url, TimeoutSeconds="0.3"), sites=("alpha",))
        started = time.monotonic()
        with pytest.raises(RemoteError) as failed:
            await provider.search(SearchRequest("install", limit=3))
        elapsed = time.monotonic() - started
    finally:
        silent.close()

    assert failed.value.kind == "timeout" and failed.value.details == {"error": "timeout"}
    assert elapsed < 5 and provider.health().cooling_down_until is not None


async def test_the_request_deadline_bounds_the_call(dead_endpoint: DeadEndpoint) -> None:
    provider = RemoteProvider(remote(dead_endpoint.url), sites=("alpha",))

    with budget(0.0001), pytest.raises(RemoteError) as failed:  # nothing left: not even a connection attempt
        await provider.search(SearchRequest("install", limit=3))

    assert failed.value.kind == "timeout" and dead_endpoint.connections == 0
    assert provider.health().cooling_down_until is None  # the request ran out of time, not the remote


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (500, {"error": "boom"}, "status"),
        (403, {"error": "forbidden"}, "unauthorized"),
        (200, {"not": "json-rpc"}, "protocol"),
    ],
    ids=["500", "403", "not JSON-RPC"],
)
async def test_a_server_that_does_not_answer_mcp_is_a_failure(
    not_mcp: UvicornServer, status: int, body: dict[str, str], kind: str
) -> None:
    not_mcp.answer.update(status=status, body=body)  # type: ignore[attr-defined]
    provider = RemoteProvider(remote(not_mcp.url + MCP), sites=("alpha",))

    with pytest.raises(RemoteError) as failed:
        await provider.get(ReadRequest("guide/install"))

    assert failed.value.kind == kind
    assert provider.health().last_error.kind == kind  # type: ignore[union-attr]


async def test_a_token_for_the_scope_comes_from_the_credential(deploy: Callable[..., Deployment]) -> None:
    b = deploy(Inbound__Tokens="entra-token")
    credential = FakeCredential("entra-token")
    options = remote(b.mcp, Scope="api://docs-b/.default")
    provider = RemoteProvider(options, sites=("alpha",), credential=credential)  # type: ignore[arg-type]

    results = (await provider.search(SearchRequest("install the agent", limit=2))).results
    health = provider.health()
    await provider.aclose()

    assert results and credential.scopes == [("api://docs-b/.default",)] and credential.closed
    assert health.authentication == "entra-id"
    assert all(h["authorization"] == "Bearer entra-token" for h in b.mcp_requests())


async def test_a_credential_that_fails_cools_down_without_connecting(dead_endpoint: DeadEndpoint) -> None:
    options = remote(dead_endpoint.url, Scope="api://docs-b/.default")
    provider = RemoteProvider(options, sites=("alpha",), credential=FakeCredential(None))  # type: ignore[arg-type]

    with pytest.raises(RemoteError) as failed:
        await provider.search(SearchRequest("install", limit=3))

    assert failed.value.kind == "credential" and dead_endpoint.connections == 0
    assert provider.health().cooling_down_until is not None


async def test_a_forwarded_request_is_declined_without_connecting(dead_endpoint: DeadEndpoint) -> None:
    provider = RemoteProvider(remote(dead_endpoint.url), sites=("alpha",))

    with forwarded_request(), pytest.raises(ProviderDeclinedError):
        await provider.search(SearchRequest("install", limit=3))

    assert dead_endpoint.connections == 0 and provider.health().last_error is None
