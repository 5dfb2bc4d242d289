"""The ASGI app's lifespan owns the composed service: it opens it at start-up, closes it at shutdown, and a host
that never ran it gets a clear 503 instead of a half-built service."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest
from asgi_lifespan import LifespanManager

from shared.api import create_app
from shared.embedding import EmbeddingModel
from shared.models import Found
from shared.requests import SearchRequest
from shared.settings import load_settings
from tests.support.encoders import WordEncoder, model_of
from tests.support.mcp_wire import INITIALIZE, MCP_HEADERS
from tests.support.providers import FakeProvider

VAULT_REFERENCE = "@Microsoft.KeyVault(SecretUri=https://vault.example.net/secrets/read-token/)"
SETTINGS = {"Forge__Documentation__Origin": "http://127.0.0.1:9", "Forge__Documentation__Search__Semantic": "false"}


async def test_the_lifespan_composes_the_service_with_the_given_providers_and_closes_them() -> None:
    fake = FakeProvider("fake", 0, results=1, sites=("forge",))
    app = create_app(load_settings(SETTINGS), providers=(fake,))
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://test") as http,
    ):
        found = (await http.get("/api/docs/search", params={"q": "anything"})).json()
        health = (await http.get("/api/health")).json()
        assert not fake.closed
    assert found["provider"] == "fake"
    assert list(health["providers"]) == ["fake", "mkdocs"] and health["embedding"] == {"state": "off"}
    assert fake.closed and app.state.composition is None


async def test_a_model_the_app_builds_is_closed_with_its_lifespan_and_a_host_given_one_is_not() -> None:
    built: list[EmbeddingModel] = []

    def build(settings: object) -> EmbeddingModel:
        built.append(model_of(WordEncoder()))
        return built[-1]

    given = model_of(WordEncoder())
    builds_its_own = create_app(load_settings(SETTINGS), build_embedding=build)
    for app in (builds_its_own, create_app(load_settings(SETTINGS), embedding=given, build_embedding=build)):
        async with LifespanManager(app):
            pass
    assert len(built) == 1 and built[0].closed and not given.closed
    given.close()


async def test_without_the_lifespan_requests_get_a_503_that_says_why() -> None:
    app = create_app(load_settings(SETTINGS))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        response = await http.get("/api/docs/search", params={"q": "anything"})
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "starting"
    assert "lifespan" in response.json()["error"]["message"]


async def test_no_redirect_is_built_from_the_host_header_and_the_log_names_routes_not_paths(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = create_app(load_settings(SETTINGS), providers=(FakeProvider("fake", 0, results=1, document=True),))
    secret = "sig=SECRET-9d1"
    with caplog.at_level(logging.INFO, logger="shared"):
        async with (
            LifespanManager(app) as manager,
            httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://attacker.test") as http,
        ):
            slashed = await http.get("/api/docs/search/", params={"q": "x"})
            pasted = await http.get(f"/api/docs/get/{secret}")
            fine = await http.get("/api/docs/search", params={"q": secret})

    assert slashed.status_code == 404 and "location" not in slashed.headers
    assert pasted.status_code == 404 and fine.status_code == 200
    logged = [record.getMessage() for record in caplog.records if record.name == "shared.api.gate.access"]
    assert "GET /api/docs/search 200" in " ".join(logged) and "GET (unmatched) 404" in " ".join(logged)
    assert not [line for line in logged if "SECRET-9d1" in line]


async def test_a_malformed_url_location_is_a_400_and_nothing_of_it_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    app = create_app(load_settings(SETTINGS), providers=(FakeProvider("fake", 0, results=1, document=True),))
    with caplog.at_level(logging.DEBUG):
        async with (
            LifespanManager(app) as manager,
            httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://test") as http,
        ):
            answers = [
                await http.get("/api/docs/get", params={"location": location})
                for location in ("http://[abc/x", "//[x", "https://docs.saif.com\uff03SECRET-5e1/x")
            ]

    assert [answer.status_code for answer in answers] == [400, 400, 400]
    assert {answer.json()["error"]["code"] for answer in answers} == {"bad_request"}
    service_records = [record for record in caplog.records if not record.name.startswith(("httpx", "httpcore"))]
    assert not [record for record in service_records if "SECRET-5e1" in record.getMessage()]  # not the test client


async def test_an_unexpected_failure_is_a_500_logged_with_its_type_never_its_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broken = FakeProvider("broken", 0, error=RuntimeError("query was SECRET-77a"))
    app = create_app(load_settings(SETTINGS), providers=(broken,))
    app.state.composition = None

    async def explode() -> None:
        raise RuntimeError("location was SECRET-77a")

    app.add_api_route("/api/explode", explode)
    with caplog.at_level(logging.DEBUG):
        async with (
            LifespanManager(app) as manager,
            httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://test") as http,
        ):
            response = await http.get("/api/explode")

    assert response.status_code == 500 and response.json()["error"]["code"] == "internal_error"
    assert "unhandled RuntimeError at" in caplog.text and "SECRET-77a" not in caplog.text


async def test_the_access_log_names_the_mcp_and_metadata_routes(caplog: pytest.LogCaptureFixture) -> None:
    app = create_app(load_settings(SETTINGS), providers=(FakeProvider("fake", 0, results=1, document=True),))
    with caplog.at_level(logging.INFO, logger="shared"):
        async with (
            LifespanManager(app) as manager,
            httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://127.0.0.1") as http,
        ):
            answers = [
                await http.post("/api/mcp", json=INITIALIZE, headers=MCP_HEADERS),
                await http.post("/api/mcp/", json=INITIALIZE, headers=MCP_HEADERS),
                await http.get("/api/mcp", headers=MCP_HEADERS),
                await http.get("/.well-known/oauth-protected-resource"),
                await http.get("/.well-known/oauth-protected-resource/api/mcp"),
            ]

    assert [answer.status_code for answer in answers] == [200, 200, 405, 404, 404]  # sign-in is off: no metadata
    logged = " ".join(record.getMessage() for record in caplog.records if record.name == "shared.api.gate.access")
    assert "POST /api/mcp 200" in logged and "POST /api/mcp/ 200" in logged and "GET /api/mcp 405" in logged
    assert "GET /.well-known/oauth-protected-resource 404" in logged
    assert "GET /.well-known/oauth-protected-resource/api/mcp 404" in logged
    assert "(unmatched)" not in logged


class HeldProvider(FakeProvider):
    """A provider whose searches wait until `release` is set: a request held in flight."""

    def __init__(self) -> None:
        super().__init__("held", 0, results=1)
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def search(self, request: SearchRequest) -> Found:
        self.entered.set()
        await self.release.wait()
        return await super().search(request)


async def test_the_access_log_logs_every_refusal_and_no_method_the_client_made_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    held = HeldProvider()
    settings = {
        **SETTINGS,
        "Forge__Documentation__Inbound__Tokens": "read-token",
        "Forge__Documentation__Inbound__MaxConcurrentPerClient": "1",
        "Forge__Documentation__Refresh__Tokens": "publish-token",
    }
    app = create_app(load_settings(settings), providers=(held,))
    made_up = "SECRETMETHOD" * 834  # 10,008 characters
    reader = {"Authorization": "Bearer read-token"}
    with caplog.at_level(logging.INFO, logger="shared"):
        async with (
            LifespanManager(app) as manager,
            httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://test") as http,
        ):
            invented = await http.request(made_up, "/api/docs/search", headers=reader)
            unsigned = await http.get("/api/docs/search", params={"q": "x"})
            hooked = await http.post("/api/admin/refresh", headers={"Authorization": "Bearer a-guess"})
            first = asyncio.create_task(http.get("/api/docs/search", params={"q": "x"}, headers=reader))
            await held.entered.wait()
            crowded = await http.get("/api/docs/search", params={"q": "y"}, headers=reader)
            held.release.set()
            answered = await first
    shut = create_app(load_settings({**SETTINGS, "Forge__Documentation__Inbound__Tokens": VAULT_REFERENCE}))
    with caplog.at_level(logging.INFO, logger="shared"):
        async with (
            LifespanManager(shut) as manager,
            httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://test") as http,
        ):
            unavailable = await http.get("/api/docs/get", params={"location": "x"})

    statuses = [answer.status_code for answer in (invented, unsigned, hooked, crowded, answered, unavailable)]
    assert statuses == [405, 401, 401, 429, 200, 503]
    logged = [record.getMessage() for record in caplog.records if record.name == "shared.api.gate.access"]
    assert not [line for line in logged if "SECRETMETHOD" in line or len(line) > 80], logged
    for line in (
        "OTHER /api/docs/search 405",
        "GET /api/docs/search 401",
        "POST /api/admin/refresh 401",
        "GET /api/docs/search 429",
        "GET /api/docs/search 200",
        "GET /api/docs/get 503",
    ):
        assert any(entry.startswith(line + " ") for entry in logged), (line, logged)
