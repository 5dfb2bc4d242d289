"""The token checker against a local issuer, with the clock in the test's hands: when the tenant's keys are
fetched, kept, fetched again on schedule and for a rolled key (at most once a minute), and what an outage or a
hung key endpoint does."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import pytest

from shared.entra import (
    FETCH_SECONDS,
    KEYS_REFRESH,
    KEYS_TTL,
    MIN_REFETCH,
    RETRY_SECONDS,
    EntraVerifier,
    Grant,
    Verdict,
)
from shared.errors import KeysUnavailable
from shared.settings import load_settings
from tests.support.clock import Clock
from tests.support.issuer import CLIENT_ID, LocalIssuer, SigningKey
from tests.support.silent import SilentServer


@pytest.fixture
def issuer() -> Iterator[LocalIssuer]:
    with LocalIssuer() as local:
        yield local


@pytest.fixture
async def checked(issuer: LocalIssuer) -> AsyncIterator[tuple[EntraVerifier, Clock]]:
    clock = Clock()
    settings = load_settings({"Forge__Documentation__Origin": "http://127.0.0.1:9", **issuer.settings()})
    verifier = EntraVerifier(settings.auth, clock=clock)
    yield verifier, clock
    await verifier.aclose()


async def test_keys_are_fetched_once_and_kept(checked: tuple[EntraVerifier, Clock], issuer: LocalIssuer) -> None:
    verifier, clock = checked
    for _ in range(3):
        assert (await verifier.check(issuer.token(scp="docs.read"))).verdict is Verdict.ACCEPTED
    clock.now += KEYS_REFRESH - 1
    assert (await verifier.check(issuer.token(scp="docs.read"))).verdict is Verdict.ACCEPTED
    assert issuer.key_requests() == 1
    clock.now += 2  # an hour on: fetched again
    assert (await verifier.check(issuer.token(scp="docs.read"))).verdict is Verdict.ACCEPTED
    assert issuer.key_requests() == 2


async def test_a_removed_key_stops_validating_at_the_next_scheduled_refresh(
    checked: tuple[EntraVerifier, Clock], issuer: LocalIssuer
) -> None:
    verifier, clock = checked
    removed = issuer.keys[0]
    assert (await verifier.check(issuer.token(scp="docs.read"))).verdict is Verdict.ACCEPTED
    issuer.publish(SigningKey())  # the tenant drops the key (compromised, or rolled out)
    clock.now += KEYS_REFRESH - 1
    assert (await verifier.check(issuer.token(key=removed, scp="docs.read"))).verdict is Verdict.ACCEPTED
    clock.now += 1
    assert (await verifier.check(issuer.token(key=removed, scp="docs.read"))).verdict is Verdict.INVALID


async def test_a_failed_scheduled_refresh_keeps_the_keys_in_hand_until_they_are_a_day_old(
    checked: tuple[EntraVerifier, Clock], issuer: LocalIssuer
) -> None:
    verifier, clock = checked
    assert (await verifier.check(issuer.token(scp="docs.read"))).verdict is Verdict.ACCEPTED
    issuer.fail(500)
    clock.now += KEYS_REFRESH
    assert (await verifier.check(issuer.token(scp="docs.read"))).verdict is Verdict.ACCEPTED
    clock.now += KEYS_TTL - KEYS_REFRESH
    with pytest.raises(KeysUnavailable):
        await verifier.check(issuer.token(scp="docs.read"))


async def test_concurrent_checks_share_one_fetch_and_a_failure_is_remembered(
    checked: tuple[EntraVerifier, Clock], issuer: LocalIssuer
) -> None:
    verifier, clock = checked
    issuer.fail(500)
    tokens = [issuer.token(scp="docs.read") for _ in range(20)]
    outcomes = await asyncio.gather(*(verifier.check(token) for token in tokens), return_exceptions=True)
    assert all(isinstance(outcome, KeysUnavailable) for outcome in outcomes)
    assert issuer.key_requests() == 1  # one fetch for twenty requests
    clock.now += RETRY_SECONDS - 1
    with pytest.raises(KeysUnavailable):  # remembered: answered at once, not fetched again
        await verifier.check(tokens[0])
    assert issuer.key_requests() == 1
    issuer.publish(*issuer.keys)
    clock.now += 1
    assert (await verifier.check(tokens[0])).verdict is Verdict.ACCEPTED
    assert issuer.key_requests() == 2


async def test_a_hung_key_endpoint_costs_one_bounded_wait_shared_by_every_request(issuer: LocalIssuer) -> None:
    with SilentServer() as hung:
        settings = load_settings(
            {
                "Forge__Documentation__Origin": "http://127.0.0.1:9",
                **issuer.settings(),
                "Forge__Documentation__Auth__Authority": hung.url,
            }
        )
        verifier = EntraVerifier(settings.auth)
        try:
            started = time.monotonic()
            outcomes = await asyncio.gather(
                *(verifier.check(issuer.token(scp="docs.read")) for _ in range(20)), return_exceptions=True
            )
            waited = time.monotonic() - started
            again = time.monotonic()
            with pytest.raises(KeysUnavailable):
                await verifier.check(issuer.token(scp="docs.read"))
            answered = time.monotonic() - again
        finally:
            await verifier.aclose()
        accepted = hung.accepted

    assert all(isinstance(outcome, KeysUnavailable) for outcome in outcomes)
    assert accepted == 1  # one connection for twenty requests
    assert waited < FETCH_SECONDS * 3 and answered < 1  # the fetch's bound, then at once while remembered


async def test_a_rolled_key_is_fetched_at_most_once_a_minute(
    checked: tuple[EntraVerifier, Clock], issuer: LocalIssuer
) -> None:
    verifier, clock = checked
    old = issuer.keys[0]
    assert (await verifier.check(issuer.token(scp="docs.read"))).verdict is Verdict.ACCEPTED
    rolled = SigningKey()
    issuer.publish(old, rolled)  # the tenant publishes its next key

    clock.now += 10
    assert (await verifier.check(issuer.token(key=rolled, scp="docs.read"))).verdict is Verdict.INVALID
    assert issuer.key_requests() == 1  # under a minute since the last fetch: not asked again

    clock.now += MIN_REFETCH
    assert (await verifier.check(issuer.token(key=rolled, scp="docs.read"))).verdict is Verdict.ACCEPTED
    assert issuer.key_requests() == 2
    stranger = SigningKey()
    for _ in range(5):  # a flood of made-up kids costs at most one fetch a minute
        assert (await verifier.check(issuer.token(key=stranger, scp="docs.read"))).verdict is Verdict.INVALID
    assert issuer.key_requests() == 2


async def test_an_outage_raises_and_is_never_an_acceptance(
    checked: tuple[EntraVerifier, Clock], issuer: LocalIssuer
) -> None:
    verifier, clock = checked
    issuer.fail(503)
    with pytest.raises(KeysUnavailable):
        await verifier.check(issuer.token(scp="docs.read"))
    issuer.publish(*issuer.keys)  # back
    clock.now += RETRY_SECONDS
    assert (await verifier.check(issuer.token(scp="docs.read"))).verdict is Verdict.ACCEPTED
    clock.now += KEYS_TTL
    issuer.fail(500)
    with pytest.raises(KeysUnavailable):  # keys too old to trust and none fresh: refused, not accepted
        await verifier.check(issuer.token(scp="docs.read"))


async def test_grants_scopes_or_roles_and_the_sdk_view(
    checked: tuple[EntraVerifier, Clock], issuer: LocalIssuer
) -> None:
    verifier, _ = checked
    refresh = Grant(frozenset(), frozenset({"Docs.Refresh"}))
    assert (await verifier.check(issuer.token(roles=["Docs.Refresh"]), refresh)).verdict is Verdict.ACCEPTED
    assert (await verifier.check(issuer.token(scp="docs.read"), refresh)).verdict is Verdict.NOT_GRANTED
    access = await verifier.verify_token(issuer.token(scp="docs.read openid", azp="client-1"))
    assert access is not None and access.client_id == "client-1" and "docs.read" in access.scopes
    assert await verifier.verify_token(issuer.token(scp="openid")) is None
    assert verifier.audiences == (f"api://{CLIENT_ID}", CLIENT_ID)
