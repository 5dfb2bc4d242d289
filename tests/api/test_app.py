"""The ASGI app's lifespan owns the composed service: it opens it at start-up, closes it at shutdown, and a host
that never ran it gets a clear 503 instead of a half-built service."""

from __future__ import annotations

import httpx
from asgi_lifespan import LifespanManager

from shared.api import create_app
from shared.settings import load_settings
from tests.support.providers import FakeProvider

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


async def test_without_the_lifespan_requests_get_a_503_that_says_why() -> None:
    app = create_app(load_settings(SETTINGS))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        response = await http.get("/api/docs/search", params={"q": "anything"})
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "starting"
    assert "lifespan" in response.json()["error"]["message"]
