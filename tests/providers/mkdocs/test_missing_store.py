"""Phantom index entries: pages an index lists that the origin does not serve, found by `get` or by the warm-up,
remembered with the cached index for every instance until a new index version, left out of search, counted in
health. Real origin (the MkDocs fixture build behind a recording static server), real registry and provider, and
real stores (memory, or Azurite for the warm-up); only the registry's clock is the test's."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from shared.cache import CopyStat, CopyStore, MemoryStore, StoredCopy, index_name, missing_name
from shared.compose import mkdocs_provider, site_registry
from shared.errors import ResolutionError, StoreError
from shared.fetch import OriginClient
from shared.models import Reason
from shared.providers.mkdocs.fetching.unserved import MissingRecord, Validators
from shared.providers.mkdocs.fetching.unserved_check import page_check
from shared.providers.mkdocs.fetching.unserved_store import save
from shared.providers.mkdocs.lifecycle.outcomes import Outcome
from shared.providers.mkdocs.lifecycle.sites import SiteRegistry
from shared.providers.mkdocs.lifecycle.warm import warm_all, warm_site
from shared.providers.mkdocs.provider import MkDocsProvider
from shared.requests import ReadRequest, SearchRequest
from shared.settings import DocumentationSettings
from tests.support.clock import Clock
from tests.support.sites import DEFAULT_SITE, PHANTOM_PAGE, PUBLISHED_SITES, ROOTED_OVERRIDE, fixture_settings
from tests.support.stores import CountingStore
from tools.azurite import Azurite
from tools.static_origin import StaticOrigin

SITE = DEFAULT_SITE
PHANTOM = f"{PHANTOM_PAGE}/"
GHOST = "legacy/ghost/"
INDEX_PATH = f"/{SITE}/search/search_index.json"
QUERY = "legacy phantom removed"


@pytest.fixture
def settings(static_origin: StaticOrigin) -> DocumentationSettings:
    return fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE)


@asynccontextmanager
async def instance(
    settings: DocumentationSettings, store: CopyStore, clock: Clock | None = None
) -> AsyncIterator[tuple[MkDocsProvider, SiteRegistry]]:
    """One serving instance: its own origin client, registry and provider over a store it shares."""
    async with OriginClient(settings.origin, timeout=5, connect_timeout=2) as client:
        registry = site_registry(settings, client, store, clock=clock or Clock())
        provider = mkdocs_provider(settings, client, registry)
        try:
            yield provider, registry
        finally:
            await provider.aclose()


async def found(provider: MkDocsProvider, query: str = QUERY) -> set[str]:
    return {result.location for result in (await provider.search(SearchRequest(query, limit=10, site=SITE))).results}


async def listed(provider: MkDocsProvider) -> set[str]:
    return {result.location for result in (await provider.search(SearchRequest("*", limit=25, site=SITE))).results}


async def fetch_fails(provider: MkDocsProvider, location: str) -> None:
    with pytest.raises(ResolutionError) as failed:
        await provider.get(ReadRequest(location))
    assert failed.value.resolution.reason is Reason.FETCH_FAILED


async def stored_record(store: CopyStore, site: str = SITE) -> MissingRecord | None:
    entry = await store.read(missing_name(site))
    return MissingRecord.loads(entry.payload) if entry is not None else None


async def stored_digest(store: CopyStore, settings: DocumentationSettings, site: str = SITE) -> str:
    stat = await store.stat(index_name(settings.cache_file_name_template, site))
    assert stat is not None and stat.digest is not None
    return stat.digest


def with_ghost(payload: bytes) -> bytes:
    """The index with one more phantom entry: a new index version."""
    index = json.loads(payload)
    index["docs"].append({"location": GHOST, "title": "Legacy ghost page", "text": "<p>Gone, but indexed.</p>"})
    return json.dumps(index).encode()


# -- found by get


async def test_a_get_that_finds_a_phantom_drops_it_from_search_and_records_it_beside_the_index(
    settings: DocumentationSettings, static_origin: StaticOrigin, caplog: pytest.LogCaptureFixture
) -> None:
    store = MemoryStore()
    caplog.set_level(logging.DEBUG)
    async with instance(settings, store) as (provider, registry):
        assert PHANTOM in await found(provider) and PHANTOM in await listed(provider)
        assert registry.health()[SITE].missing_pages == 0

        await fetch_fails(provider, PHANTOM_PAGE)

        assert PHANTOM not in await found(provider) and PHANTOM not in await listed(provider)
        everywhere = (await provider.search(SearchRequest("*", limit=25))).results  # loads every site
        assert everywhere and PHANTOM not in {result.location for result in everywhere}
        health = provider.health().sites
        assert health[SITE].missing_pages == 1
        assert {health[site].missing_pages for site in PUBLISHED_SITES if site != SITE} == {0}
        await registry.recorded()
        record = await stored_record(store)
        assert record is not None and record.missing == {PHANTOM}
        assert record.index == await stored_digest(store, settings)

        await fetch_fails(provider, PHANTOM_PAGE)  # still fetch_failed; the origin is asked again
        await registry.recorded()
        assert await stored_record(store) == record

    assert len(static_origin.requests_for(f"/{SITE}/{PHANTOM}")) == 2
    assert not [r for r in caplog.records if "phantom" in r.getMessage().lower()]  # counts and sites only


async def test_another_instance_leaves_it_out_until_a_new_index_version_arrives(
    settings: DocumentationSettings, static_origin: StaticOrigin
) -> None:
    store = MemoryStore()
    async with instance(settings, store) as (first, registry):
        await fetch_fails(first, PHANTOM_PAGE)
        await registry.recorded()
    static_origin.clear_requests()

    clock = Clock()
    async with instance(settings, store, clock) as (second, registry):
        assert PHANTOM not in await found(second) and PHANTOM not in await listed(second)  # without a get of its own
        assert registry.health()[SITE].missing_pages == 1
        assert static_origin.requests_for(f"/{SITE}/{PHANTOM}") == []

        name = index_name(settings.cache_file_name_template, SITE)
        current = await store.read(name)
        assert current is not None
        newer = StoredCopy(with_ghost(current.payload), datetime.now(UTC) + timedelta(seconds=1))
        assert await store.write(name, newer, expected_version=current.version)
        clock.now += settings.cache.check_interval_seconds

        assert PHANTOM in await found(second)  # a new version: nothing is known missing from it yet
        assert registry.health()[SITE].missing_pages == 0
        old = await stored_record(store)
        assert old is not None and old.index != newer.digest  # the old version's record is ignored, not deleted

        await fetch_fails(second, "legacy/ghost")
        await registry.recorded()
        assert GHOST not in await found(second, "legacy ghost indexed") and PHANTOM in await found(second)
        renewed = await stored_record(store)
        assert renewed is not None and (renewed.index, renewed.missing) == (newer.digest, {GHOST})


async def test_a_warm_instance_picks_up_another_instances_finding_at_its_next_store_check(
    settings: DocumentationSettings,
) -> None:
    store, clock = MemoryStore(), Clock()
    async with (
        instance(settings, store) as (finder, finder_registry),
        instance(settings, store, clock) as (other, other_registry),
    ):
        assert PHANTOM in await found(other)
        await fetch_fails(finder, PHANTOM_PAGE)
        await finder_registry.recorded()

        assert PHANTOM in await found(other)  # not checked yet
        clock.now += settings.cache.check_interval_seconds
        await found(other)  # the check is due: the record is looked up in the background
        await other_registry.recorded()
        assert PHANTOM not in await found(other)


class SlowRecordStore(MemoryStore):
    """A store that answers at once for the index and takes `delay` seconds for the missing-pages record."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    async def stat(self, name: str) -> CopyStat | None:
        if name == missing_name(SITE):
            await asyncio.sleep(self.delay)
        return await super().stat(name)

    async def read(self, name: str) -> StoredCopy | None:
        if name == missing_name(SITE):
            await asyncio.sleep(self.delay)
        return await super().read(name)


async def test_a_search_whose_store_check_is_due_never_waits_for_the_record(settings: DocumentationSettings) -> None:
    store, clock = SlowRecordStore(0.0), Clock()
    async with instance(settings, store, clock) as (provider, registry):
        await found(provider)
        await registry.recorded()
        store.delay = 30.0  # far beyond the test's patience: a search that waited would time out below
        clock.now += settings.cache.check_interval_seconds
        assert await asyncio.wait_for(found(provider), timeout=5)


class RacingStore(MemoryStore):
    """A memory store where another instance writes the missing-pages record between this one's read and write."""

    def __init__(self) -> None:
        super().__init__()
        self.competing: Callable[[], Awaitable[object]] | None = None

    async def write(self, name: str, entry: StoredCopy, *, expected_version: str | None) -> str | None:
        if name == missing_name(SITE) and self.competing is not None:
            competing, self.competing = self.competing, None
            await competing()
        return await super().write(name, entry, expected_version=expected_version)


async def test_two_instances_recording_at_once_keep_each_others_findings(settings: DocumentationSettings) -> None:
    store = RacingStore()
    name = index_name(settings.cache_file_name_template, SITE)
    await store.write(name, StoredCopy(b'{"docs": []}', datetime.now(UTC)), expected_version=None)
    digest = await stored_digest(store, settings)
    store.competing = lambda: save(store, SITE, MissingRecord(digest, frozenset({"theirs/"})), index_name=name)

    saved = await save(store, SITE, MissingRecord(digest, frozenset({"mine/"})), index_name=name)

    assert store.competing is None  # the conflict happened
    assert saved is not None and saved.record is not None and saved.record.missing == {"mine/", "theirs/"}
    assert await stored_record(store) == saved.record
    stale = MissingRecord("0" * 64, frozenset({"old/"}))  # found in an index version the store no longer holds
    assert await save(store, SITE, stale, index_name=name) is None
    assert await stored_record(store) == saved.record


async def test_a_server_error_or_a_refusal_is_no_evidence_of_a_missing_page(
    settings: DocumentationSettings, static_origin: StaticOrigin
) -> None:
    store = MemoryStore()
    async with instance(settings, store) as (provider, registry):
        static_origin.fail(f"/{SITE}/{PHANTOM}", 503)  # the origin is down for the page: rebuilt from the index
        document = await provider.get(ReadRequest(PHANTOM_PAGE))
        assert "fallback: search-index" in document.content
        static_origin.fail(f"/{SITE}/{PHANTOM}", 403)
        await fetch_fails(provider, PHANTOM_PAGE)
        static_origin.reset()
        static_origin.fail(f"/{SITE}/{PHANTOM_PAGE}.md", 500)  # raw Markdown failing, HTML 404
        await fetch_fails(provider, PHANTOM_PAGE)
        await registry.recorded()

        assert registry.health()[SITE].missing_pages == 0
        assert PHANTOM in await found(provider)
    assert await stored_record(store) is None


class FlakyStore(MemoryStore):
    """A memory store whose artifact writes fail, or hang until released, as a test says."""

    def __init__(self) -> None:
        super().__init__()
        self.failing = False
        self.release: asyncio.Event | None = None

    async def write(self, name: str, entry: StoredCopy, *, expected_version: str | None) -> str | None:
        if name.startswith(("embeddings/", "derived/")):
            if self.failing:
                raise StoreError("index cache write failed: ServiceRequestError")
            if self.release is not None:
                await self.release.wait()
        return await super().write(name, entry, expected_version=expected_version)


async def test_a_store_failure_never_fails_the_get_and_the_finding_is_written_at_the_next_check(
    settings: DocumentationSettings,
) -> None:
    store, clock = FlakyStore(), Clock()
    async with instance(settings, store, clock) as (provider, registry):
        store.failing = True
        await fetch_fails(provider, PHANTOM_PAGE)
        await registry.recorded()
        assert await stored_record(store) is None
        assert PHANTOM not in await found(provider)  # this instance knows, whatever the store said

        store.failing = False
        clock.now += settings.cache.check_interval_seconds
        await found(provider)  # the periodic store check tries the write again
        await registry.recorded()
        record = await stored_record(store)
        assert record is not None and record.missing == {PHANTOM}


async def test_a_get_never_waits_for_the_finding_to_be_written(settings: DocumentationSettings) -> None:
    store = FlakyStore()
    async with instance(settings, store) as (provider, registry):
        await found(provider)
        store.release = asyncio.Event()
        await asyncio.wait_for(fetch_fails(provider, PHANTOM_PAGE), timeout=5)  # the write is still held
        assert await stored_record(store) is None
        store.release.set()
        await registry.recorded()
        assert await stored_record(store) is not None


# -- found by the warm-up


def page_requests(origin: StaticOrigin, site: str = SITE) -> list[tuple[str, str, str | None, int]]:
    """The warm-up's page requests for a site: method, path, If-None-Match and status (the index's excluded, and the
    code pages' Markdown it reads for their fences: `warm.warm_fences`)."""
    return [
        (r.method, r.path, r.header("If-None-Match"), r.status)
        for r in origin.requests
        if r.path.startswith(f"/{site}/")
        and not r.path.endswith("search_index.json")
        and not (r.method == "GET" and r.path.endswith(".md") and r.status == 200)
    ]


async def test_the_warm_up_finds_a_phantom_in_a_new_index_version_with_conditional_requests(
    blob_settings: DocumentationSettings,
    counting_store: CountingStore,
    static_origin: StaticOrigin,
    built_origin: Path,
) -> None:
    first = await warm_all(blob_settings, counting_store)
    assert str(first[SITE].pages) == "checked: 1 missing"
    asked = page_requests(static_origin)
    assert asked and all(method == "HEAD" and etag is None for method, _, etag, _ in asked)
    assert {(path, status) for _, path, _, status in asked if status == 404} == {
        (f"/{SITE}/{PHANTOM}", 404),
        (f"/{SITE}/{PHANTOM_PAGE}.md", 404),  # confirmed against the raw Markdown too
    }
    published = (built_origin / SITE / "search" / "search_index.json").read_bytes()
    static_origin.respond(INDEX_PATH, body=with_ghost(published), content_type="application/json")
    static_origin.clear_requests()

    second = await warm_all(blob_settings, counting_store)

    assert second[SITE].outcome == Outcome.CHANGED and str(second[SITE].pages) == "checked: 2 missing"
    asked = page_requests(static_origin)
    phantoms = {f"/{SITE}/{PHANTOM}", f"/{SITE}/{PHANTOM_PAGE}.md", f"/{SITE}/{GHOST}", "/alpha/legacy/ghost.md"}
    served = [request for request in asked if request[1] not in phantoms]
    assert served and all(method == "HEAD" and etag and status == 304 for method, _, etag, status in served)
    assert {path for _, path, _, _ in asked} - {path for _, path, _, _ in served} == phantoms
    assert all(page_requests(static_origin, site) == [] for site in PUBLISHED_SITES if site != SITE)
    record = await stored_record(counting_store)
    assert record is not None and record.complete and record.missing == {PHANTOM, GHOST}
    assert record.index == await stored_digest(counting_store, blob_settings)
    static_origin.clear_requests()

    third = await warm_all(blob_settings, counting_store)

    assert third[SITE].outcome is Outcome.UNCHANGED and str(third[SITE].pages) == "current: 2 missing"
    # an unchanged version costs only a look at the pages it hides, in case they came back
    assert {path for _, path, _, _ in page_requests(static_origin)} == phantoms
    async with instance(blob_settings, counting_store) as (provider, registry):
        assert not {PHANTOM, GHOST} & await listed(provider)
        assert registry.health()[SITE].missing_pages == 2


async def test_a_hidden_page_that_comes_back_is_shown_again_after_the_next_warm_up(
    blob_settings: DocumentationSettings, counting_store: CountingStore, static_origin: StaticOrigin
) -> None:
    async with instance(blob_settings, counting_store) as (provider, registry):
        await fetch_fails(provider, PHANTOM_PAGE)  # found missing by a get (a page uploaded after its index)
        await registry.recorded()
    first = await warm_all(blob_settings, counting_store)
    assert str(first[SITE].pages) == "checked: 1 missing"
    static_origin.respond(f"/{SITE}/{PHANTOM}", body="<html><body><p>Back again.</p></body></html>")
    second = await warm_all(blob_settings, counting_store)

    assert str(second[SITE].pages) == "current: 0 missing"
    record = await stored_record(counting_store)
    assert record is not None and record.revived == {PHANTOM} and not record.hidden
    async with instance(blob_settings, counting_store) as (provider, registry):
        assert PHANTOM in await listed(provider)
        assert registry.health()[SITE].missing_pages == 0
    static_origin.clear_requests()
    third = await warm_all(blob_settings, counting_store)
    assert str(third[SITE].pages) == "current: 0 missing" and page_requests(static_origin) == []


async def test_a_5xx_or_a_timeout_during_the_check_is_no_evidence_and_is_checked_next_time(
    blob_settings: DocumentationSettings, counting_store: CountingStore, static_origin: StaticOrigin
) -> None:
    static_origin.fail(f"/{SITE}/guide/install/", 503)
    static_origin.fail(f"/{SITE}/{PHANTOM}", 500)
    static_origin.respond(f"/{SITE}/faq/", body="<html>slow</html>", content_type="text/html", delay=5)
    async with OriginClient(blob_settings.origin, timeout=1, connect_timeout=1) as client:
        report = await warm_all(blob_settings, counting_store, client=client)

    assert str(report[SITE].pages).startswith("partial: ") and str(report[SITE].pages).endswith(
        ", 0 missing; the rest next time"
    )
    record = await stored_record(counting_store)
    assert record is not None and not record.complete and record.missing == frozenset()
    assert not {"guide/install/", "faq/", PHANTOM} & record.checked
    static_origin.reset()
    static_origin.clear_requests()

    report = await warm_all(blob_settings, counting_store)

    assert str(report[SITE].pages) == "checked: 1 missing"
    asked = {path for _, path, _, _ in page_requests(static_origin)}
    assert asked == {f"/{SITE}/guide/install/", f"/{SITE}/faq/", f"/{SITE}/{PHANTOM}", f"/{SITE}/{PHANTOM_PAGE}.md"}


async def test_an_origin_that_refuses_head_is_asked_with_conditional_gets(
    blob_settings: DocumentationSettings,
    counting_store: CountingStore,
    static_origin: StaticOrigin,
    built_origin: Path,
) -> None:
    await warm_all(blob_settings, counting_store)
    published = (built_origin / SITE / "search" / "search_index.json").read_bytes()
    static_origin.respond(INDEX_PATH, body=with_ghost(published), content_type="application/json")
    static_origin.respond(f"/{SITE}/", status=405, body=b"")  # the site root comes first in index order
    static_origin.clear_requests()

    async with OriginClient(blob_settings.origin) as client:
        check = page_check(client, blob_settings, concurrency=1)
        report = await warm_site(client, blob_settings, counting_store, SITE, check=check)

    assert str(report.pages).startswith("partial: ")  # the root answered 405 to both: undecided
    asked = page_requests(static_origin)
    assert asked[:2] == [("HEAD", f"/{SITE}/", asked[0][2], 405), ("GET", f"/{SITE}/", asked[1][2], 405)]
    rest = [request for request in asked[2:] if request[1] not in (f"/{SITE}/{GHOST}", "/alpha/legacy/ghost.md")]
    rest = [request for request in rest if request[1] not in (f"/{SITE}/{PHANTOM}", f"/{SITE}/{PHANTOM_PAGE}.md")]
    assert rest and all(method == "GET" and etag and status == 304 for method, _, etag, status in rest)


async def test_without_shared_storage_the_warm_up_checks_no_page(static_origin: StaticOrigin) -> None:
    settings = fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE)
    report = await warm_all(settings, MemoryStore())
    assert {str(report[site].pages) for site in PUBLISHED_SITES} == {"skipped: no shared storage to keep the record in"}
    assert page_requests(static_origin) == []


async def test_a_sites_check_stops_at_its_time_budget_and_leaves_the_rest_for_the_next_run(
    azurite: Azurite, blob_container: str, counting_store: CountingStore, static_origin: StaticOrigin
) -> None:
    settings = fixture_settings(  # the budget and the lane come from the app settings
        static_origin.url,
        {"AzureWebJobsStorage": azurite.connection_string},
        SearchIndexOverrides=ROOTED_OVERRIDE,
        Cache__Container=blob_container,
        Warmup__PageCheckSeconds="1",
        Warmup__PageCheckConcurrency="1",
    )
    static_origin.respond(f"/{SITE}/", body="<html>slow</html>", content_type="text/html", delay=5)

    async with OriginClient(settings.origin) as client:  # its own timeout (10 s) is not what stops it
        report = await warm_site(client, settings, counting_store, SITE)

    assert str(report.pages).startswith("partial: 0 of ") and str(report.pages).endswith(
        ", 0 missing; the rest next time"
    )
    assert [path for _, path, _, _ in page_requests(static_origin)] == [f"/{SITE}/"]  # nothing sent past the budget
    record = await stored_record(counting_store)
    assert record is not None and not record.complete and not record.checked and not record.missing


async def test_a_new_index_versions_record_replaces_the_old_one_instead_of_growing() -> None:
    store = MemoryStore()
    name = "index.json"
    for version in range(3):
        payload = json.dumps({"docs": [{"location": f"v{version}/p{n}/", "title": "t", "text": "x"} for n in range(3)]})
        entry = StoredCopy(payload.encode(), datetime.now(UTC))
        held = await store.read(name)
        await store.write(name, entry, expected_version=held.version if held else None)
        pages = {f"v{version}/p{n}/": Validators(etag=f'"{version}-{n}"') for n in range(3)}
        findings = MissingRecord(entry.digest, frozenset({f"v{version}/p0/"}), frozenset(pages), True, pages)
        saved = await save(store, SITE, findings, index_name=name)
        assert saved is not None and saved.record == findings  # the old version's pages and validators are gone


class ConflictingStore(MemoryStore):
    """A store where every write of the missing-pages record loses to another instance's."""

    async def write(self, name: str, entry: StoredCopy, *, expected_version: str | None) -> str | None:
        if name == missing_name(SITE):
            return None
        return await super().write(name, entry, expected_version=expected_version)


async def test_findings_that_lose_every_write_race_are_kept_for_the_next_check(settings: DocumentationSettings) -> None:
    store = ConflictingStore()
    async with instance(settings, store) as (provider, registry):
        await fetch_fails(provider, PHANTOM_PAGE)
        await registry.recorded()
        assert PHANTOM not in await found(provider)  # still hidden here
        assert registry._missing._unsaved == {SITE}  # and written again at the next store check
