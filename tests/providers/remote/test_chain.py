"""The remote provider in the composed chain of deployment A, against deployment B (this app under uvicorn over the
MkDocs fixture origin): A brokers to B, and every way B fails (down, refusing the token, empty) falls through to
A's own MkDocs, without connecting again during the cooldown."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from shared.cache import MemoryStore
from shared.compose import Composition, compose
from shared.errors import ResolutionError
from shared.models import Reason
from shared.requests import ReadRequest, SearchRequest
from shared.settings import DocumentationSettings
from tests.providers.remote.conftest import DeadEndpoint, Deployment, b_settings
from tools.static_origin import StaticOrigin


def a_settings(origin: StaticOrigin, endpoint: str, **extra: str) -> DocumentationSettings:
    return b_settings(origin, Remote__Endpoint=endpoint, **extra)


@asynccontextmanager
async def deployment_a(settings: DocumentationSettings) -> AsyncIterator[Composition]:
    async with compose(settings, embedding=None, store=MemoryStore()) as composition:
        yield composition


def remote_health(composition: Composition) -> dict[str, Any]:
    """The remote provider's entry in health, as operators read it (JSON)."""
    report: dict[str, Any] = composition.health().providers["smithy_remote"].model_dump(mode="json", by_alias=True)
    return report


async def test_registered_only_with_an_endpoint_between_ai_search_and_mkdocs(
    static_origin: StaticOrigin, dead_endpoint: DeadEndpoint
) -> None:
    async with deployment_a(b_settings(static_origin, Remote__Token="t")) as composed:
        assert [p.name for p in composed.service.providers] == ["mkdocs"]
    async with deployment_a(a_settings(static_origin, dead_endpoint.url, Remote__FunctionsKey="k")) as composed:
        assert [(p.name, p.order) for p in composed.service.providers] == [("smithy_remote", 50), ("mkdocs", 100)]
        health = remote_health(composed)
    assert health["status"] == "ok" and health["fetch"] is True and health["coolingDownUntil"] is None
    assert health["endpoint"] == dead_endpoint.url.split("/")[2] and health["functionsKey"] is True
    assert health["authentication"] == "none"
    assert dead_endpoint.connections == 0  # composing and health connect to nothing


async def test_a_answers_from_b_and_gets_its_first_location_from_b(
    static_origin: StaticOrigin, deploy: Callable[..., Deployment]
) -> None:
    b = deploy()
    direct = httpx.get(b.url + "/api/docs/search", params={"q": "install the agent", "limit": 3}).json()
    page = httpx.get(b.url + "/api/docs/get", params={"location": direct["results"][0]["location"]}).json()

    async with deployment_a(a_settings(static_origin, b.mcp, Remote__FunctionsKey="functions-key")) as a:
        response = await a.service.search(SearchRequest("install the agent", limit=3))
        document = await a.service.get(ReadRequest(response.results[0].location))
        health = remote_health(a)

    assert response.provider == "smithy_remote" and direct["provider"] == "mkdocs"
    assert [r.location for r in response.results] == [r["location"] for r in direct["results"]]
    assert [r.preview_text for r in response.results] == [r["previewText"] for r in direct["results"]]
    assert {r.provider for r in response.results} == {"smithy_remote"}
    assert document.provider == "smithy_remote" and document.resolution.reason is Reason.RESOLVED
    assert (document.location, document.site, document.url) == (page["location"], page["site"], page["url"])
    assert document.content.split("retrieved:")[0] == page["content"].split("retrieved:")[0]
    assert health["status"] == "ok" and health["lastAnswer"]["remoteProvider"] == "mkdocs"
    sent = b.mcp_requests()
    assert sent and all(h["x-docs-forwarded"] == "1" and h["x-functions-key"] == "functions-key" for h in sent)
    assert not any("authorization" in h for h in sent)  # neither Token nor Scope: no bearer header


async def test_b_down_falls_through_then_cools_down_without_connecting(
    static_origin: StaticOrigin, dead_endpoint: DeadEndpoint
) -> None:
    async with deployment_a(a_settings(static_origin, dead_endpoint.url)) as a:
        first = await a.service.search(SearchRequest("install the agent", limit=3))
        attempts = dead_endpoint.connections
        health = remote_health(a)
        again = await a.service.search(SearchRequest("install the agent", limit=3))
        document = await a.service.get(ReadRequest(first.results[0].location))

    assert first.provider == again.provider == document.provider == "mkdocs"
    assert attempts >= 1 and dead_endpoint.connections == attempts  # nothing more during the cooldown
    assert health["status"] == "degraded" and health["coolingDownUntil"] is not None
    assert health["lastError"]["kind"] == "unreachable"


async def test_b_refusing_the_token_falls_through(
    static_origin: StaticOrigin, deploy: Callable[..., Deployment]
) -> None:
    b = deploy(Inbound__Tokens="right-token")

    async with deployment_a(a_settings(static_origin, b.mcp, Remote__Token="wrong-token")) as a:
        refused = await a.service.search(SearchRequest("install the agent", limit=3))
        health = remote_health(a)
    async with deployment_a(a_settings(static_origin, b.mcp, Remote__Token="right-token")) as a:
        accepted = await a.service.search(SearchRequest("install the agent", limit=3))

    assert refused.provider == "mkdocs" and accepted.provider == "smithy_remote"
    assert health["lastError"] == {"kind": "unauthorized", "status": 401, "at": health["lastError"]["at"]}
    assert health["coolingDownUntil"] is not None and health["authentication"] == "token"


async def test_b_answering_nothing_falls_through_to_mkdocs(
    static_origin: StaticOrigin, deploy: Callable[..., Deployment]
) -> None:
    b = deploy(Search__MinScore="1000")

    async with deployment_a(a_settings(static_origin, b.mcp)) as a:
        response = await a.service.search(SearchRequest("install the agent", limit=3))
        health = remote_health(a)

    assert response.provider == "mkdocs" and response.results
    assert len(b.mcp_requests()) >= 1 and health["status"] == "ok" and health["coolingDownUntil"] is None


async def test_a_remote_miss_never_hides_a_local_ambiguity(
    static_origin: StaticOrigin, deploy: Callable[..., Deployment]
) -> None:
    b = deploy(Sites="alpha,rooted-docs")  # B has no `metrics` page at all
    direct = httpx.get(b.url + "/api/docs/get", params={"location": "metrics"})

    async with deployment_a(a_settings(static_origin, b.mcp)) as a:
        with pytest.raises(ResolutionError) as missed:
            await a.service.get(ReadRequest("metrics"))
        health = remote_health(a)

    assert direct.json()["error"]["code"] == "not_found"
    assert missed.value.resolution.reason is Reason.AMBIGUOUS and missed.value.resolution.candidates
    assert health["status"] == "ok"  # a miss is an answer, not a failure
