"""Pages kept briefly: a page read again within a minute costs no origin request, one read later is revalidated
(a `304` reuses it without converting), a changed page is fetched anew, and the cache stays within its bound."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import pytest

from shared.cache import MemoryStore
from shared.compose import mkdocs_provider, site_registry
from shared.fetch import OriginClient
from shared.providers.mkdocs.fetching.pagecache import FRESH_SECONDS, KEEP_SECONDS, CachedPage, PageCache
from shared.providers.mkdocs.provider import MkDocsProvider
from shared.requests import ReadRequest
from shared.settings import DocumentationSettings
from tests.support.clock import Clock
from tests.support.sites import HTML_ONLY_PAGE, ROOTED_OVERRIDE, fixture_settings
from tools.static_origin import StaticOrigin

RAW = "/alpha/guide/install.md"
HTML = f"/alpha/{HTML_ONLY_PAGE}/"


@pytest.fixture
def settings(static_origin: StaticOrigin) -> DocumentationSettings:
    return fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false")


@asynccontextmanager
async def provider(settings: DocumentationSettings, clock: Clock) -> AsyncIterator[MkDocsProvider]:
    async with OriginClient(settings.origin, timeout=5, connect_timeout=2) as client:
        registry = site_registry(settings, client, MemoryStore(), clock=Clock())
        served = mkdocs_provider(settings, client, registry, pages=PageCache(clock=clock))
        try:
            yield served
        finally:
            await served.aclose()


async def test_a_page_read_again_within_a_minute_costs_no_origin_request(
    settings: DocumentationSettings, static_origin: StaticOrigin
) -> None:
    clock = Clock()
    async with provider(settings, clock) as docs:
        first = await docs.get(ReadRequest("guide/install"))
        clock.now += FRESH_SECONDS - 1
        again = await docs.get(ReadRequest("guide/install"))
    assert len(static_origin.requests_for(RAW)) == 1
    assert again.content == first.content  # `retrieved` is when the origin served it


@pytest.mark.parametrize("path", [RAW, HTML], ids=["raw Markdown", "converted HTML"])
async def test_a_page_kept_longer_is_revalidated_and_a_304_reuses_it(
    settings: DocumentationSettings, static_origin: StaticOrigin, path: str
) -> None:
    location = "guide/install" if path == RAW else HTML_ONLY_PAGE
    clock = Clock()
    async with provider(settings, clock) as docs:
        first = await docs.get(ReadRequest(location))
        clock.now += FRESH_SECONDS + 1
        again = await docs.get(ReadRequest(location))
    asked = static_origin.requests_for(path)
    assert len(asked) == 2 and asked[0].header("If-None-Match") is None
    assert asked[1].header("If-None-Match") is not None  # conditional: the origin answered 304
    assert again.content.split("retrieved:")[0] == first.content.split("retrieved:")[0]


async def test_a_page_changed_at_the_origin_is_fetched_anew_once_it_is_not_fresh(
    settings: DocumentationSettings, static_origin: StaticOrigin
) -> None:
    clock = Clock()
    async with provider(settings, clock) as docs:
        await docs.get(ReadRequest("guide/install"))
        static_origin.respond(RAW, body=b"# Install\n\nChanged at the origin.\n", content_type="text/markdown")
        clock.now += FRESH_SECONDS - 1
        kept = await docs.get(ReadRequest("guide/install"))
        clock.now += 2
        changed = await docs.get(ReadRequest("guide/install"))
        clock.now += KEEP_SECONDS + 1
        refetched = await docs.get(ReadRequest("guide/install"))
    assert "Changed at the origin" not in kept.content
    assert "Changed at the origin" in changed.content and "Changed at the origin" in refetched.content
    assert static_origin.requests_for(RAW)[-1].header("If-None-Match") is None  # too old to revalidate


def test_the_cache_holds_at_most_its_characters_least_recently_used_out_first() -> None:
    clock = Clock()
    cache = PageCache(max_chars=100, clock=clock)

    def page(size: int) -> CachedPage:
        return CachedPage("x" * size, "u", True, None, None, datetime.now(UTC), clock())

    cache.put("s", "a", page(40))
    cache.put("s", "b", page(40))
    assert cache.fresh("s", "a") is not None  # a is now the most recently used
    cache.put("s", "c", page(40))
    assert cache.kept("s", "b") is None and cache.kept("s", "a") is not None and len(cache) == 2
    cache.put("s", "huge", page(101))
    assert cache.kept("s", "huge") is None  # larger than the whole cache: never kept
