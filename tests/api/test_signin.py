"""Entra ID sign-in, black-box: the app under uvicorn with `Auth__*` pointing at a local issuer (keys made here,
served by a real HTTP server, tokens minted with PyJWT), read as a client reads it: the 401 challenge, the
protected resource metadata it points at, and tokens of every kind on REST and on MCP (the official client)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from azure.core.credentials import AccessToken as AzureAccessToken
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from shared.api import create_app
from shared.providers.remote import RemoteProvider
from shared.requests import SearchRequest
from shared.settings import load_settings
from tests.support.issuer import AUDIENCE, OTHER_TENANT, LocalIssuer, SigningKey
from tests.support.silent import SilentServer
from tests.support.sites import ROOTED_OVERRIDE, fixture_env
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin

ROOT = Path(__file__).resolve().parents[2]

INBOUND = "a-static-read-token"
SEARCH = "/api/docs/search"
MCP_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def env_for(origin: StaticOrigin, issuer: LocalIssuer, **extra: str) -> dict[str, str]:
    return (
        fixture_env(origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false", **extra)
        | issuer.settings()
        | {"Forge__Documentation__Inbound__Tokens": INBOUND}
    )


@pytest.fixture
def issuer() -> Iterator[LocalIssuer]:
    with LocalIssuer() as local:
        yield local


@pytest.fixture
def server(static_origin: StaticOrigin, issuer: LocalIssuer) -> Iterator[UvicornServer]:
    settings = load_settings(env_for(static_origin, issuer, Refresh__AppRoles="Docs.Refresh"))
    with UvicornServer(create_app(settings)) as running:
        yield running


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hs256_with_public_key(issuer: LocalIssuer) -> str:
    """The classic confusion: HMAC 'signed' with the RSA public key, hoping the verifier uses it as a secret."""
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": issuer.keys[0].kid}).encode())
    payload = b64(json.dumps(issuer.claims(scp="docs.read")).encode())
    signature = hmac.new(issuer.keys[0].public_pem(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{b64(signature)}"


def unsigned(issuer: LocalIssuer) -> str:
    header = b64(json.dumps({"alg": "none", "typ": "JWT", "kid": issuer.keys[0].kid}).encode())
    return f"{header}.{b64(json.dumps(issuer.claims(scp='docs.read')).encode())}."


def token_kinds(issuer: LocalIssuer) -> dict[str, tuple[str, int]]:
    """Each kind of token and the status it must get."""
    now = int(time.time())
    other = f"{issuer.authority}/{OTHER_TENANT}/v2.0"
    return {
        "user with the scope": (issuer.token(scp="docs.read"), 200),
        "app-only with the role": (issuer.token(roles=["Docs.Read.All"]), 200),
        "audience as the application id uri": (issuer.token(scp="docs.read", aud=AUDIENCE), 200),
        "expired": (issuer.token(scp="docs.read", exp=now - 600, nbf=now - 4200, iat=now - 4200), 401),
        "not yet valid": (issuer.token(scp="docs.read", nbf=now + 600), 401),
        "wrong audience": (issuer.token(scp="docs.read", aud="api://someone-else"), 401),
        "wrong issuer": (issuer.token(scp="docs.read", iss="https://login.example.net/x/v2.0"), 401),
        "other tenant": (issuer.token(scp="docs.read", tid=OTHER_TENANT, iss=other), 401),
        "alg none": (unsigned(issuer), 401),
        "hs256 with the public key": (hs256_with_public_key(issuer), 401),
        "not a jwt": ("not-a-token", 401),
        "missing scope": (issuer.token(scp="profile openid"), 403),
        "role of another kind": (issuer.token(roles=["Docs.Refresh"]), 403),
    }


def test_every_kind_of_token_gets_its_answer_on_rest_and_on_mcp(server: UvicornServer, issuer: LocalIssuer) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for kind, (token, status) in token_kinds(issuer).items():
            rest = client.get(SEARCH, params={"q": "install"}, headers=bearer(token))
            mcp = client.post("/api/mcp", json=MCP_LIST, headers={**MCP_HEADERS, **bearer(token)})
            assert (rest.status_code, mcp.status_code) == (status, status), kind
            if status == 401:
                assert 'error="invalid_token"' in rest.headers["WWW-Authenticate"], kind
            if status == 403:
                challenge = rest.headers["WWW-Authenticate"]
                assert 'error="insufficient_scope"' in challenge and f'scope="{AUDIENCE}/docs.read"' in challenge
        # A static Inbound__Tokens token is still accepted beside sign-in; health needs nothing.
        assert client.get(SEARCH, params={"q": "install"}, headers=bearer(INBOUND)).status_code == 200
        assert client.get("/api/health").status_code == 200


def test_a_client_discovers_where_to_sign_in_from_the_401(server: UvicornServer, issuer: LocalIssuer) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        refused = client.post("/api/mcp", json=MCP_LIST, headers=MCP_HEADERS)
        assert refused.status_code == 401
        challenge = refused.headers["WWW-Authenticate"]
        assert challenge.startswith("Bearer ") and f'scope="{AUDIENCE}/docs.read"' in challenge
        metadata_url = re.search(r'resource_metadata="([^"]+)"', challenge)
        assert metadata_url is not None
        assert metadata_url.group(1) == f"{server.url}/.well-known/oauth-protected-resource/api/mcp"
        document = client.get(metadata_url.group(1)).json()  # open: no token
        root = client.get("/.well-known/oauth-protected-resource").json()
        spoofed = client.get(metadata_url.group(1), headers={"Host": "attacker.example.net"}).json()

    assert document == root == spoofed  # never built from the request's Host header
    assert document["resource"] == f"{server.url}/api/mcp"
    assert document["authorization_servers"] == [issuer.issuer]
    assert document["scopes_supported"] == [f"{AUDIENCE}/docs.read"]
    assert document["bearer_methods_supported"] == ["header"]


async def test_the_official_mcp_client_calls_tools_with_a_bearer_token(
    server: UvicornServer, issuer: LocalIssuer
) -> None:
    token = issuer.token(scp="docs.read")
    async with (
        httpx2.AsyncClient(headers=bearer(token), timeout=30) as http,
        streamable_http_client(server.url + "/api/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        tools = await client.list_tools()
        found = await client.call_tool("search_docs", {"query": "install"})
    assert {tool.name for tool in tools.tools} == {"search_docs", "get_doc", "list_versions"}
    assert not found.is_error and found.structured_content and found.structured_content["results"]


def test_the_typescript_sdk_discovers_the_metadata_and_calls_with_a_bearer_token(
    server: UvicornServer, issuer: LocalIssuer
) -> None:
    node = shutil.which("node")
    if node is None or not (ROOT / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        pytest.fail("node and the pinned @modelcontextprotocol/sdk are needed: run `make setup`", pytrace=False)
    script = ROOT / "tests" / "support" / "mcp_auth_client.mjs"
    token = issuer.token(scp="docs.read")
    done = subprocess.run(
        [node, str(script), server.url + "/api/mcp", token], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == 401 and report["scope"] == f"{AUDIENCE}/docs.read"
    assert report["resourceMetadataUrl"] == f"{server.url}/.well-known/oauth-protected-resource/api/mcp"
    assert report["metadata"]["authorization_servers"] == [issuer.issuer]
    assert report["resource"] == f"{server.url}/api/mcp"  # what the SDK would ask Entra for: this endpoint
    assert report["tools"] == ["search_docs", "get_doc", "list_versions"]
    assert not report["searchError"] and report["results"] > 0


def test_the_publish_hook_takes_an_app_role_and_not_a_read_scope(server: UvicornServer, issuer: LocalIssuer) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        allowed = client.post(
            "/api/admin/refresh", json={"sites": ["beta-docs"]}, headers=bearer(issuer.token(roles=["Docs.Refresh"]))
        )
        reader = client.post("/api/admin/refresh", headers=bearer(issuer.token(scp="docs.read")))
        reading_app = client.post("/api/admin/refresh", headers=bearer(issuer.token(roles=["Docs.Read.All"])))
        forged = client.post("/api/admin/refresh", headers=bearer(issuer.token(roles=["Docs.Refresh"], aud="api://x")))
    assert allowed.status_code == 200, allowed.text
    assert allowed.json()["sites"]["beta-docs"]["outcome"] in ("changed", "unchanged")
    assert (reader.status_code, reading_app.status_code, forged.status_code) == (403, 403, 401)


def test_keys_out_of_reach_answer_503_and_never_let_a_request_through(
    static_origin: StaticOrigin, issuer: LocalIssuer
) -> None:
    issuer.fail(503)
    settings = load_settings(env_for(static_origin, issuer))
    with UvicornServer(create_app(settings)) as running, httpx.Client(base_url=running.url, timeout=30) as client:
        answer = client.get(SEARCH, params={"q": "install"}, headers=bearer(issuer.token(scp="docs.read")))
        assert answer.status_code == 503 and answer.json()["error"]["code"] == "unavailable"
        assert client.get("/api/health").status_code == 200


async def test_a_hung_key_endpoint_refuses_concurrent_requests_within_seconds_and_lets_none_through(
    static_origin: StaticOrigin, issuer: LocalIssuer
) -> None:
    with SilentServer() as hung:  # accepts the connection, never answers
        settings = load_settings(env_for(static_origin, issuer) | {"Forge__Documentation__Auth__Authority": hung.url})
        tokens = [issuer.token(scp="docs.read") for _ in range(20)]
        with UvicornServer(create_app(settings)) as running:
            async with httpx.AsyncClient(base_url=running.url, timeout=60) as client:
                started = time.monotonic()
                answers = await asyncio.gather(
                    *(client.get(SEARCH, params={"q": "install"}, headers=bearer(token)) for token in tokens)
                )
                waited = time.monotonic() - started
        fetches = hung.accepted

    assert {answer.status_code for answer in answers} == {503}
    assert {answer.json()["error"]["code"] for answer in answers} == {"unavailable"}
    assert waited < 12, waited  # one bounded fetch shared by all, not one 5 s fetch after another
    assert fetches == 1


def test_an_unknown_key_is_fetched_once_then_refused_and_a_rolled_key_is_accepted(
    server: UvicornServer, issuer: LocalIssuer
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert client.get(SEARCH, params={"q": "x"}, headers=bearer(issuer.token(scp="docs.read"))).status_code == 200
        fetched = issuer.key_requests()
        assert fetched == 1  # fetched once, then kept
        stranger = SigningKey()
        refused = [
            client.get(SEARCH, params={"q": "x"}, headers=bearer(issuer.token(key=stranger, scp="docs.read")))
            for _ in range(3)
        ]
        assert {answer.status_code for answer in refused} == {401}
        # Not fetched again for a stranger's kid: the keys in hand are under a minute old (tests/test_entra.py has
        # the clock-driven refetch and the rolled key).
        assert issuer.key_requests() == fetched


def test_no_token_key_or_claim_is_logged(
    server: UvicornServer, issuer: LocalIssuer, caplog: pytest.LogCaptureFixture
) -> None:
    secret_oid = "0d7e5b7c-logged-never-4f2a"
    tokens = [issuer.token(scp="docs.read", oid=secret_oid), issuer.token(scp="nope", oid=secret_oid), "garbage.x.y"]
    with caplog.at_level(logging.DEBUG), httpx.Client(base_url=server.url, timeout=30) as client:
        for token in tokens:
            client.get(SEARCH, params={"q": "x"}, headers=bearer(token))
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert all(token not in logged for token in tokens)
    assert secret_oid not in logged and "user-subject" not in logged and issuer.keys[0].kid not in logged


class IssuerCredential:
    """What the remote provider asks azure-identity for (a managed identity's app-only token), from the local
    issuer: the token another tenant's Entra would give deployment A for deployment B's app role."""

    def __init__(self, issuer: LocalIssuer) -> None:
        self.issuer = issuer
        self.scopes: list[tuple[str, ...]] = []

    async def get_token(self, *scopes: str, **_: Any) -> AzureAccessToken:
        self.scopes.append(scopes)
        return AzureAccessToken(self.issuer.token(roles=["Docs.Read.All"], sub="deployment-a"), int(time.time()) + 3600)

    async def close(self) -> None:
        return None


async def test_two_deployments_trust_each_other_through_an_app_role_without_a_shared_secret(
    server: UvicornServer, issuer: LocalIssuer
) -> None:
    settings = load_settings(
        {
            "Forge__Documentation__Origin": "http://127.0.0.1:9",
            "Forge__Documentation__Sites": "alpha,beta-docs",
            "Forge__Documentation__DefaultSite": "alpha",
            "Forge__Documentation__Remote__Endpoint": server.url + "/api/mcp",
            "Forge__Documentation__Remote__Scope": f"{AUDIENCE}/.default",
        }
    )
    assert settings.remote is not None
    credential = IssuerCredential(issuer)
    provider = RemoteProvider(settings.remote, sites=settings.sites, credential=credential)  # type: ignore[arg-type]
    try:
        results = (await provider.search(SearchRequest("install", limit=3))).results
    finally:
        await provider.aclose()
    assert results and {result.provider for result in results} == {"smithy_remote"}
    assert credential.scopes == [(f"{AUDIENCE}/.default",)]
