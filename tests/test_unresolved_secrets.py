"""Key Vault references that did not resolve fail closed without taking the app down: App Service hands the app the
reference's own text (`@Microsoft.KeyVault(...)`) until it can read the secret, and that text is never a secret."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from shared.api import create_app
from shared.cache import MemoryStore
from shared.compose import compose
from shared.requests import SearchRequest
from shared.settings import load_settings
from tests.support.sites import ROOTED_OVERRIDE, fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin

REFERENCE = "@Microsoft.KeyVault(SecretUri=https://kv-docs.vault.azure.net/secrets/inbound-tokens/)"


def test_every_secret_setting_names_itself_while_unresolved() -> None:
    settings = load_settings(
        {
            "Forge__Documentation__Inbound__Tokens": f"good,{REFERENCE}",
            "Forge__Documentation__Remote__Endpoint": "https://b.example/api/mcp",
            "Forge__Documentation__Remote__Token": REFERENCE,
            "Forge__Documentation__Remote__FunctionsKey": REFERENCE.lower(),
            "Forge__Documentation__AiSearch__Endpoint": "https://s.search.windows.net",
            "Forge__Documentation__AiSearch__ApiKey": " " + REFERENCE,
        }
    )
    assert settings.unresolved_secrets() == tuple(
        f"Forge__Documentation__{key}"
        for key in ("Inbound__Tokens", "Remote__Token", "Remote__FunctionsKey", "AiSearch__ApiKey")
    )
    assert load_settings({"Forge__Documentation__Inbound__Tokens": "good"}).unresolved_secrets() == ()


def serve(origin: StaticOrigin, **extra: str) -> UvicornServer:
    settings = fixture_settings(origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false", **extra)
    return UvicornServer(create_app(settings, embedding=None))


@pytest.fixture
def shut(static_origin: StaticOrigin) -> Iterator[httpx.Client]:
    with serve(static_origin, Inbound__Tokens=REFERENCE) as server, httpx.Client(base_url=server.url) as client:
        yield client


def test_an_unresolved_inbound_token_shuts_the_gate_and_is_never_accepted(shut: httpx.Client) -> None:
    with_literal = shut.get(
        "/api/docs/search", params={"q": "install"}, headers={"Authorization": f"Bearer {REFERENCE}"}
    )
    without = shut.get("/api/docs/search", params={"q": "install"})
    health = shut.get("/api/health")
    assert with_literal.status_code == 503 and without.status_code == 503
    assert "Inbound__Tokens is an unresolved Key Vault reference" in with_literal.json()["error"]["message"]
    assert health.status_code == 200 and health.json()["status"] == "degraded"
    assert health.json()["unresolvedSecrets"]["keys"] == ["Forge__Documentation__Inbound__Tokens"]


def test_resolved_tokens_still_work_beside_an_unresolved_one(static_origin: StaticOrigin) -> None:
    with (
        serve(static_origin, Inbound__Tokens=f"good,{REFERENCE}") as server,
        httpx.Client(base_url=server.url) as client,
    ):
        good = client.get("/api/docs/search", params={"q": "install"}, headers={"Authorization": "Bearer good"})
        literal = client.get(
            "/api/docs/search", params={"q": "install"}, headers={"Authorization": f"Bearer {REFERENCE}"}
        )
    assert good.status_code == 200 and literal.status_code == 401


@pytest.mark.parametrize(
    ("extra", "absent"),
    [
        ({"Remote__Endpoint": "http://127.0.0.1:9/api/mcp", "Remote__Token": REFERENCE}, "smithy_remote"),
        ({"Remote__Endpoint": "http://127.0.0.1:9/api/mcp", "Remote__FunctionsKey": REFERENCE}, "smithy_remote"),
        ({"AiSearch__Endpoint": "https://s.search.windows.net", "AiSearch__ApiKey": REFERENCE}, "ai_search"),
    ],
    ids=["remote token", "remote functions key", "AI Search key"],
)
async def test_a_provider_whose_credential_is_unresolved_stays_out_of_the_chain(
    static_origin: StaticOrigin, extra: dict[str, str], absent: str
) -> None:
    settings = fixture_settings(
        static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false", **extra
    )
    async with compose(settings, embedding=None, store=MemoryStore()) as composed:
        names = [provider.name for provider in composed.service.providers]
        health = composed.health()
        answer = await composed.service.search(SearchRequest("install"))
    assert absent not in names and names == ["mkdocs"] and answer.provider == "mkdocs"
    assert health.status == "degraded" and health.unresolved_secrets is not None and health.unresolved_secrets.keys
