"""The inbound check (`Inbound__Tokens`) on the real app under uvicorn: `/api/*` but health needs an accepted bearer
token, compared in constant time; without the setting nothing changes; the forwarding marker reaches the remote
provider as "declined"."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from shared.api.gate import inbound
from tests.providers.remote.conftest import MCP, Deployment
from tests.support.mcp_wire import INITIALIZE, MCP_HEADERS

SEARCH = "/api/docs/search?q=install&limit=1"


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong", "Bearer", "Basic czNjcmV0LW9uZQ==", "s3cret-one", "Bearer s3cret-one-and-more"],
    ids=["none", "wrong", "empty", "basic", "no scheme", "longer"],
)
def test_a_missing_or_wrong_token_is_401(deploy: Callable[..., Deployment], authorization: str | None) -> None:
    b = deploy(Inbound__Tokens="s3cret-one,s3cret-two")
    headers = {"Authorization": authorization} if authorization is not None else {}

    rest = httpx.get(b.url + SEARCH, headers=headers)
    mcp = httpx.post(b.mcp, json=INITIALIZE, headers={**MCP_HEADERS, **headers})
    unknown = httpx.get(b.url + "/api/nothing-here", headers=headers)

    for response in (rest, mcp, unknown):
        assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
        assert response.json()["error"]["code"] == "unauthorized"


def test_an_accepted_token_passes_and_health_stays_open(deploy: Callable[..., Deployment]) -> None:
    b = deploy(Inbound__Tokens__0="s3cret-one", Inbound__Tokens__1="s3cret-two")

    first = httpx.get(b.url + SEARCH, headers={"Authorization": "Bearer s3cret-one"})
    second = httpx.get(b.url + SEARCH, headers={"Authorization": "bearer s3cret-two"})
    mcp = httpx.post(b.mcp, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": "Bearer s3cret-two"})
    health = httpx.get(b.url + "/api/health")

    assert first.status_code == second.status_code == mcp.status_code == 200
    assert health.status_code == 200 and health.json()["status"] in ("ok", "degraded")


def test_without_tokens_nothing_is_checked(deploy: Callable[..., Deployment]) -> None:
    b = deploy()

    assert httpx.get(b.url + SEARCH).status_code == 200
    assert httpx.post(b.mcp, json=INITIALIZE, headers=MCP_HEADERS).status_code == 200


def test_tokens_are_compared_in_constant_time(
    deploy: Callable[..., Deployment], monkeypatch: pytest.MonkeyPatch
) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = inbound.hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(inbound.hmac, "compare_digest", spy)
    b = deploy(Inbound__Tokens="s3cret-one,s3cret-two")

    assert httpx.get(b.url + SEARCH, headers={"Authorization": "Bearer s3cret-one"}).status_code == 200
    assert httpx.get(b.url + SEARCH, headers={"Authorization": "Bearer nope"}).status_code == 401

    # every accepted token is compared every time, also after a match, so timing does not tell which matched
    assert compared == [
        (b"s3cret-one", b"s3cret-one"),
        (b"s3cret-one", b"s3cret-two"),
        (b"nope", b"s3cret-one"),
        (b"nope", b"s3cret-two"),
    ]


def test_the_marker_is_honoured_only_after_the_token_check(deploy: Callable[..., Deployment]) -> None:
    b = deploy(Inbound__Tokens="s3cret-one")

    marked = httpx.get(b.url + SEARCH, headers={"x-docs-forwarded": "1"})

    assert marked.status_code == 401 and MCP not in b.counting.paths()
