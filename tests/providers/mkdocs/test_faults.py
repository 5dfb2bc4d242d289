"""Faults at the origin, one at a time: a site that failed recovers, a broken site fails alone, and a search with
nothing to search says so. Real origin (the MkDocs fixture build behind a recording static server), real registry;
only the registry's clock is the test's, so backoffs are shown by what happens, never by waiting."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import pytest

from shared.cache import MemoryStore, StoredCopy, index_name, store_newest
from shared.compose import compose, site_registry
from shared.errors import ResolutionError, ServiceUnavailableError
from shared.fetch import OriginClient
from shared.models import Reason
from shared.providers.mkdocs.lifecycle.sites import SiteRegistry
from shared.providers.mkdocs.lifecycle.versions import Versions
from shared.requests import ReadRequest, SearchRequest
from shared.settings import DocumentationSettings
from tests.support.clock import Clock
from tests.support.sites import DEFAULT_SITE, PUBLISHED_SITES, ROOTED_OVERRIDE, UNPUBLISHED_SITE, fixture_settings
from tools.static_origin import StaticOrigin

SITE = DEFAULT_SITE
INDEX = f"/{SITE}/search/search_index.json"


@pytest.fixture
def settings(static_origin: StaticOrigin) -> DocumentationSettings:
    return fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false")


@asynccontextmanager
async def registry_over(
    settings: DocumentationSettings, clock: Clock, store: MemoryStore | None = None
) -> AsyncIterator[SiteRegistry]:
    async with OriginClient(settings.origin, timeout=5, connect_timeout=2) as client:
        registry = site_registry(settings, client, store or MemoryStore(), clock=clock)
        try:
            yield registry
        finally:
            await registry.aclose()


async def test_a_site_that_failed_is_tried_again_after_its_backoff_and_recovers(
    settings: DocumentationSettings, static_origin: StaticOrigin
) -> None:
    clock = Clock()
    static_origin.fail(INDEX, 500)
    async with registry_over(settings, clock) as registry:
        assert await registry.get(SITE) is None
        failed = registry.health()[SITE]
        assert failed.state == "failed" and failed.unpublished is False and failed.retry_at
        static_origin.reset()  # the origin is back

        clock.now += settings.site_retry_seconds * 0.5
        assert await registry.get(SITE) is None  # not yet: no request reaches the origin
        assert len(static_origin.requests_for(INDEX)) == 1

        clock.now += settings.site_retry_seconds * 0.75  # past the longest jittered backoff
        recovered = await registry.get(SITE)

    assert recovered is not None and registry.health()[SITE].state == "loaded"
    assert len(static_origin.requests_for(INDEX)) == 2


async def test_an_unpublished_site_is_rechecked_only_at_the_unpublished_interval(
    settings: DocumentationSettings, static_origin: StaticOrigin
) -> None:
    clock, path = Clock(), f"/{UNPUBLISHED_SITE}/search/search_index.json"
    async with registry_over(settings, clock) as registry:
        assert await registry.get(UNPUBLISHED_SITE) is None
        assert registry.health()[UNPUBLISHED_SITE].unpublished is True
        clock.now += settings.site_retry_seconds * 2
        assert await registry.get(UNPUBLISHED_SITE) is None
        assert len(static_origin.requests_for(path)) == 1
        clock.now += settings.unpublished_retry_seconds * 1.25
        assert await registry.get(UNPUBLISHED_SITE) is None  # still 404, but asked again

    assert len(static_origin.requests_for(path)) == 2


async def test_an_unpublished_site_costs_one_origin_request_per_check_and_a_later_publish_is_seen(
    settings: DocumentationSettings, static_origin: StaticOrigin
) -> None:
    """First contact asks each layout once (the MkDocs index, Zensical's `search.json`, `versions.json`); every
    check after that asks one of them, in turn, so a site that publishes later is seen within three checks."""
    clock, site = Clock(), UNPUBLISHED_SITE
    checks = 7

    def asked() -> list[str]:
        return [request.path for request in static_origin.requests if request.path.startswith(f"/{site}/")]

    async with OriginClient(settings.origin, timeout=5, connect_timeout=2) as client:
        registry = site_registry(settings, client, MemoryStore(), clock=clock)
        versions = Versions(client, sites=settings.site_map, clock=clock, layouts=registry.layouts)
        try:
            assert await registry.get(site) is None
            assert await versions.within(site, None) is None
            first = asked()
            per_check = []
            for _ in range(checks):
                clock.now += settings.unpublished_retry_seconds * 1.25
                before = len(asked())
                assert await registry.get(site) is None
                assert await versions.within(site, None) is None
                per_check.append(len(asked()) - before)
            static_origin.respond(f"/{site}/search.json", body=ZENSICAL_INDEX)
            seen_after = 0
            while await registry.get(site) is None and seen_after < 3:
                clock.now += settings.unpublished_retry_seconds * 1.25
                seen_after += 1
            state = registry.health()[site].state
        finally:
            await versions.aclose()
            await registry.aclose()

    assert sorted(first) == sorted(
        f"/{site}/{path}" for path in ("search/search_index.json", "search.json", "versions.json")
    )
    assert per_check == [1] * checks
    assert {path.rsplit("/", 1)[-1] for path in asked()[len(first) :]} == {
        "search_index.json",
        "search.json",
        "versions.json",
    }
    assert seen_after <= 3 and state == "loaded"


ZENSICAL_INDEX = json.dumps(
    {"config": {"lang": ["en"]}, "items": [{"location": "", "level": 1, "title": "Home", "text": "Now published"}]}
).encode()


async def test_a_copy_the_warm_up_stores_brings_a_failed_site_back_before_its_backoff(
    settings: DocumentationSettings, static_origin: StaticOrigin
) -> None:
    clock, store = Clock(), MemoryStore()
    published = (static_origin.root / SITE / "search" / "search_index.json").read_bytes()  # type: ignore[operator]
    static_origin.fail(INDEX, 503)
    async with registry_over(settings, clock, store) as registry:
        assert await registry.get(SITE) is None
        entry = StoredCopy(published, datetime.now(UTC), entries=1)
        await store_newest(store, index_name(settings.cache_file_name_template, SITE), entry, expected_version=None)

        clock.now += settings.cache.check_interval_seconds  # well before the retry backoff
        recovered = await registry.get(SITE)

    assert recovered is not None and recovered.source == "cache"
    assert len(static_origin.requests_for(INDEX)) == 1  # picked up from the store, the origin still failing


NESTED = b'{"docs": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
HUGE_BOOST = b'{"docs": [{"location": "a/", "title": "Huge boost", "text": "install", "boost": 1' + b"0" * 400 + b"}]}"
INFINITE_BOOST = b'{"docs": [{"location": "a/", "title": "Infinite boost", "text": "install", "boost": 1e400}]}'


async def test_a_hostile_index_fails_its_site_alone_and_is_not_downloaded_again(
    settings: DocumentationSettings, static_origin: StaticOrigin
) -> None:
    static_origin.respond(INDEX, body=NESTED, content_type="application/json")
    async with compose(settings, embedding=None, store=MemoryStore()) as composed:
        responses = [await composed.service.search(SearchRequest("install")) for _ in range(3)]
        health = composed.health()

    assert all(response.results and response.provider == "mkdocs" for response in responses)
    assert {result.site for response in responses for result in response.results} <= set(PUBLISHED_SITES) - {SITE}
    site = health.providers["mkdocs"].health.sites[SITE]
    assert site.state == "failed" and "unusable index (RecursionError)" in site.reason
    assert health.status == "degraded"
    assert len(static_origin.requests_for(INDEX)) == 1  # failed once, then left alone until its retry


@pytest.mark.parametrize("payload", [HUGE_BOOST, INFINITE_BOOST], ids=["1 and 400 zeros", "1e400"])
async def test_a_boost_beyond_any_float_clamps_to_zero_and_scores_stay_finite(
    settings: DocumentationSettings, static_origin: StaticOrigin, payload: bytes
) -> None:
    static_origin.respond(INDEX, body=payload, content_type="application/json")
    async with compose(settings, embedding=None, store=MemoryStore()) as composed:
        response = await composed.service.search(SearchRequest("install", limit=25, site=SITE))
        listing = await composed.service.search(SearchRequest("*", limit=25, site=SITE))

    assert [result.location for result in listing.results] == ["a/"]  # the site loaded
    assert all(result.score == 0.0 for result in response.results)  # boost 0: found only when nothing else is
    json.dumps([result.model_dump() for result in response.results], allow_nan=False)


async def test_when_no_site_can_be_searched_the_answer_is_unavailable_not_no_match(
    settings: DocumentationSettings, static_origin: StaticOrigin
) -> None:
    static_origin.stop()
    async with compose(settings, embedding=None, store=MemoryStore()) as composed:
        with pytest.raises(ServiceUnavailableError) as caught:
            await composed.service.search(SearchRequest("install"))
        health = composed.health()

    assert set(caught.value.failures["mkdocs"]) == {*PUBLISHED_SITES, UNPUBLISHED_SITE}
    assert health.status == "unavailable"


# -- pages that cannot be converted, and conversion off the event loop

HTML_ONLY = "/alpha/ops/ingress/"
"""The fixture page without a Markdown twin: `get` converts its HTML."""


def page_of(body: str) -> str:
    return f"<html><body><article class='md-content__inner'>{body}</article></body></html>"


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ("<span><b>x</b></span>" * 60_000, "larger than 1,000,000 characters"),
        ("<div>" * 5_000 + "deep" + "</div>" * 5_000, "more than 256 deep"),
        ("x" * 9_000_000, "larger than 8,388,608 bytes"),  # more than the client reads: never "no content"
    ],
    ids=["huge", "deeply nested", "more than is read"],
)
async def test_a_page_that_cannot_be_converted_is_fetch_failed(
    settings: DocumentationSettings, static_origin: StaticOrigin, body: str, detail: str
) -> None:
    static_origin.respond(HTML_ONLY, body=page_of(body), content_type="text/html")
    async with compose(settings, embedding=None, store=MemoryStore()) as composed:
        with pytest.raises(ResolutionError) as caught:
            await composed.service.get(ReadRequest("ops/ingress"))
        still = await composed.service.get(ReadRequest("guide/install"))  # other pages are unaffected

    assert caught.value.resolution.reason is Reason.FETCH_FAILED and detail in caught.value.resolution.detail
    assert still.content


async def test_converting_a_big_page_does_not_hold_up_other_requests(
    settings: DocumentationSettings, static_origin: StaticOrigin
) -> None:
    static_origin.respond(HTML_ONLY, body=page_of("<p><b>word</b> text</p>" * 20_000), content_type="text/html")
    order: list[str] = []
    async with compose(settings, embedding=None, store=MemoryStore()) as composed:
        await composed.service.search(SearchRequest("install"))  # sites loaded: only the conversion is left to race

        async def fetch() -> None:
            await composed.service.get(ReadRequest("ops/ingress"))
            order.append("get")

        getting = asyncio.ensure_future(fetch())
        while not getting.done() and not any(thread.name.startswith("convert") for thread in threading.enumerate()):
            await asyncio.sleep(0)  # until the conversion has started (off the loop, or never)
        for _ in range(3):
            await composed.service.search(SearchRequest("install"))  # answered while the page is being converted
        order.append("searches")
        await getting

    assert order == ["searches", "get"]


# -- fetch scope


async def test_an_index_redirected_to_another_sites_index_is_refused(
    settings: DocumentationSettings, static_origin: StaticOrigin
) -> None:
    static_origin.redirect("/beta-docs/search/search_index.json", f"{static_origin.url}{INDEX}")
    async with compose(settings, embedding=None, store=MemoryStore()) as composed:
        listing = await composed.service.search(SearchRequest("*", limit=25))
        health = composed.health()

    assert "beta-docs" not in {result.site for result in listing.results}
    beta = health.providers["mkdocs"].health.sites["beta-docs"]
    assert beta.state == "failed" and "outside" in beta.reason
    assert static_origin.requests_for(INDEX)  # alpha's index was fetched for alpha only
    assert all(result.url.startswith(f"{static_origin.url}/{result.site}/") for result in listing.results)


LOCATIONS = ["../../secret/", "a/..;/b/", "a/%2e%2e/%2e%2e/b/", "a/%C0%AE%C0%AE/b/", "a/\uff0e\uff0e/b/", "a\\..\\b/"]


async def test_index_entries_that_could_leave_their_site_are_dropped(
    settings: DocumentationSettings, static_origin: StaticOrigin
) -> None:
    docs = [{"location": location, "title": f"Trap {n}", "text": "install"} for n, location in enumerate(LOCATIONS)]
    docs.append({"location": "safe/", "title": "Safe page", "text": "install"})
    static_origin.respond(INDEX, body=json.dumps({"docs": docs}), content_type="application/json")
    async with compose(settings, embedding=None, store=MemoryStore()) as composed:
        listing = await composed.service.search(SearchRequest("*", limit=25, site=SITE))

    assert [result.location for result in listing.results] == ["safe/"]
    assert all(result.url.startswith(f"{static_origin.url}/{SITE}/") for result in listing.results)


async def test_a_truncated_index_fails_its_site_and_never_reaches_the_cache(
    settings: DocumentationSettings, static_origin: StaticOrigin
) -> None:
    published = (static_origin.root / SITE / "search" / "search_index.json").read_bytes()  # type: ignore[operator]
    static_origin.respond(INDEX, body=published[: len(published) // 2], headers={"Content-Length": str(len(published))})
    store = MemoryStore()
    async with compose(settings, embedding=None, store=store) as composed:
        response = await composed.service.search(SearchRequest("install"))
        with pytest.raises(ResolutionError) as caught:
            await composed.service.get(ReadRequest("guide/install"))

    assert response.results and SITE not in {result.site for result in response.results}
    assert caught.value.resolution.reason is Reason.SITE_UNAVAILABLE
    assert await store.read(index_name(settings.cache_file_name_template, SITE)) is None  # nothing half-written
    assert len(static_origin.requests_for(INDEX)) == 1


async def test_an_origin_that_goes_down_after_load_leaves_search_and_get_answering(
    settings: DocumentationSettings, static_origin: StaticOrigin
) -> None:
    store = MemoryStore()
    async with compose(settings, embedding=None, store=store) as composed:
        before = await composed.service.search(SearchRequest("install"))
        static_origin.stop()
        after = await composed.service.search(SearchRequest("install"))
        document = await composed.service.get(ReadRequest("guide/install"))
        cached = await store.read(index_name(settings.cache_file_name_template, SITE))

    assert [result.location for result in after.results] == [result.location for result in before.results]
    assert "fallback: search-index" in document.content  # rebuilt from the index held in memory
    assert cached is not None and cached.payload  # the cached copy is intact
