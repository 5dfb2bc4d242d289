"""The redirect probe on its own: a stub's target is read from its refresh, probes past the rate cap are plain
misses that reach nothing, and a chain of stubs is followed only a few hops."""

from __future__ import annotations

from shared.fetch import OriginClient
from shared.providers.mkdocs.fetching.redirect_stubs import BURST, MAX_HOPS, RedirectProbe, stub_target
from tests.support.clock import Clock
from tools.static_origin import StaticOrigin

STUB = '<html><head><meta http-equiv="refresh" content="0; url={to}"></head></html>'


def test_a_stubs_target_is_its_refresh_and_other_pages_have_none() -> None:
    assert stub_target(STUB.format(to="../../ops/backup/")) == "../../ops/backup/"
    assert stub_target("<html><head><link rel='canonical' href='/x/'></head><body>A page.</body></html>") is None
    assert stub_target("<meta" * 50_000) is None  # a hostile page costs its first 16 KB, no more


async def test_probes_past_the_cap_reach_nothing(static_origin: StaticOrigin) -> None:
    clock = Clock()
    async with OriginClient(static_origin.url) as client:
        probe = RedirectProbe(client, clock=clock)

        async def known(relative: str) -> str | None:
            return None

        base = static_origin.url + "/alpha"
        for number in range(int(BURST) + 5):
            await probe.moved(base, f"old/{number}", "v1", known)
        clock.now += 1.0  # a second later the bucket holds a few again
        await probe.moved(base, "old/later", "v1", known)
    asked = [request.path for request in static_origin.requests if request.path.startswith("/alpha/old/")]
    assert len(asked) == int(BURST) + 1


async def test_a_chain_of_stubs_is_followed_a_few_hops(static_origin: StaticOrigin) -> None:
    for hop in range(MAX_HOPS + 2):
        static_origin.respond(f"/alpha/chain/{hop}/", body=STUB.format(to=f"../{hop + 1}/"))
    async with OriginClient(static_origin.url) as client:
        probe = RedirectProbe(client)

        async def known(relative: str) -> str | None:
            return relative if relative == f"chain/{MAX_HOPS + 1}/" else None

        found = await probe.moved(static_origin.url + "/alpha", "chain/0", "v1", known)
    assert found is None and len([r for r in static_origin.requests if "/chain/" in r.path]) == MAX_HOPS


async def test_the_origin_client_sends_no_dot_segment_in_any_spelling(static_origin: StaticOrigin) -> None:
    """Whatever reaches the probe (or any other caller of the origin client), the origin never sees a dot segment:
    `..;` (Tomcat), fullwidth and leader dots (NFKC: IIS) are refused like `..`."""
    async with OriginClient(static_origin.url) as client:
        probe = RedirectProbe(client)

        async def known(relative: str) -> str | None:
            return None

        for old in ("..;/hostile/target", "\uff0e\uff0e/hostile", "\u2025/hostile", "%E2%80%A5/x", "a/.;/b"):
            assert await probe.moved(static_origin.url + "/alpha", old, "v1", known) is None
    assert static_origin.requests == []
