"""Site loading on the shared blob cache: fresh, stale, corrupt and missing copies, outages, and the periodic swap.

Everything is real except the clock of the periodic check: the MkDocs-built origin behind a recording static
server, Azurite behind the Azure SDK, and the registry between them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from asgi_lifespan import LifespanManager
from azure.storage.blob import BlobServiceClient

from shared.api import create_app
from shared.cache import CopyStore, MemoryStore, StoredCopy, store_newest
from shared.compose import site_registry
from shared.fetch import OriginClient
from shared.providers.mkdocs.lifecycle.health import SiteState
from shared.settings import DocumentationSettings
from tests.support.clock import Clock
from tests.support.sites import DEFAULT_SITE, ROOTED_OVERRIDE, UNPUBLISHED_SITE, fixture_settings
from tests.support.stores import CountingStore, StallingStore, closed_port
from tools.azurite import Azurite, connection_string
from tools.static_origin import StaticOrigin

SITE = DEFAULT_SITE
INDEX_PATH = f"/{SITE}/search/search_index.json"
BLOB = f"{SITE}-docs-search-index.json"
LONG_AGO = datetime.now(UTC) - timedelta(days=2)


@pytest.fixture
async def client(blob_settings: DocumentationSettings) -> AsyncIterator[OriginClient]:
    async with OriginClient(blob_settings.origin, timeout=5, connect_timeout=2) as origin:
        yield origin


@pytest.fixture
def published(built_origin: Path) -> bytes:
    return (built_origin / SITE / "search" / "search_index.json").read_bytes()


@pytest.fixture
def blob_payload(azurite: Azurite, blob_container: str) -> Callable[[], bytes]:
    def read() -> bytes:
        with BlobServiceClient.from_connection_string(azurite.connection_string) as service:
            return bytes(service.get_blob_client(blob_container, BLOB).download_blob().readall())

    return read


def with_extra_page(payload: bytes) -> bytes:
    index = json.loads(payload)
    index["docs"].append({"location": "brand-new/", "title": "Brand new page", "text": "<p>Fresh words.</p>"})
    return json.dumps(index).encode()


async def put(counting_store: CopyStore, payload: bytes, at: datetime, **fields: object) -> str:
    version = await store_newest(counting_store, BLOB, StoredCopy(payload, at, **fields), expected_version=None)  # type: ignore[arg-type]
    assert version is not None
    return version


# -- first load


async def test_a_fresh_blob_is_used_without_touching_the_origin(
    blob_settings: DocumentationSettings,
    client: OriginClient,
    counting_store: CountingStore,
    static_origin: StaticOrigin,
) -> None:
    await put(
        counting_store.inner,
        with_extra_page(b'{"docs": [{"location": "only/", "title": "Only", "text": "x"}]}'),
        datetime.now(UTC),
    )

    loaded = await site_registry(blob_settings, client, counting_store).get(SITE)

    assert loaded is not None and loaded.source == "cache"
    assert {entry.location for entry in loaded.index.entries} == {"only/", "brand-new/"}
    assert static_origin.requests_for(INDEX_PATH) == []


async def test_a_stale_blob_the_origin_still_vouches_for_costs_a_304_and_a_metadata_update(
    blob_settings: DocumentationSettings,
    client: OriginClient,
    counting_store: CountingStore,
    static_origin: StaticOrigin,
    blob_payload: Callable[[], bytes],
    published: bytes,
) -> None:
    first = await site_registry(blob_settings, client, counting_store).get(
        SITE
    )  # writes the blob with the origin's validators
    assert first is not None and first.source == "origin"
    stat = await counting_store.inner.stat(BLOB)
    assert stat is not None and stat.origin_etag
    await counting_store.inner.touch(BLOB, LONG_AGO, expected_version=stat.version)  # age it past CacheDurationHours
    static_origin.clear_requests()
    counting_store.calls.clear()

    loaded = await site_registry(blob_settings, client, counting_store).get(SITE)

    assert loaded is not None and loaded.source == "cache"
    [request] = static_origin.requests_for(INDEX_PATH)
    assert (request.header("If-None-Match"), request.status) == (stat.origin_etag, 304)
    assert counting_store.calls["write"] == 0 and counting_store.calls["touch"] == 1
    after = await counting_store.inner.stat(BLOB)
    assert after is not None and after.fetched_at > LONG_AGO and blob_payload() == published


async def test_a_stale_blob_is_refetched_from_the_origin_and_written_back(
    blob_settings: DocumentationSettings,
    client: OriginClient,
    counting_store: CountingStore,
    static_origin: StaticOrigin,
    blob_payload: Callable[[], bytes],
    published: bytes,
) -> None:
    await put(counting_store.inner, with_extra_page(published), LONG_AGO)

    loaded = await site_registry(blob_settings, client, counting_store).get(SITE)

    assert loaded is not None and loaded.source == "origin"
    assert len(static_origin.requests_for(INDEX_PATH)) == 1
    assert blob_payload() == published
    stat = await counting_store.inner.stat(BLOB)
    assert stat is not None and stat.origin_etag and stat.entries == len(loaded.index.entries)


async def test_a_corrupted_blob_is_ignored_and_replaced_from_the_origin(
    blob_settings: DocumentationSettings,
    client: OriginClient,
    counting_store: CountingStore,
    blob_payload: Callable[[], bytes],
    published: bytes,
) -> None:
    await put(counting_store.inner, b'{"docs": [tru', datetime.now(UTC))  # fresh, but not an index

    loaded = await site_registry(blob_settings, client, counting_store).get(SITE)

    assert loaded is not None and loaded.source == "origin"
    assert blob_payload() == published


async def test_invalid_origin_content_never_replaces_a_good_blob(
    blob_settings: DocumentationSettings,
    client: OriginClient,
    counting_store: CountingStore,
    static_origin: StaticOrigin,
    blob_payload: Callable[[], bytes],
    published: bytes,
) -> None:
    await put(counting_store.inner, published, LONG_AGO)
    registry = site_registry(blob_settings, client, counting_store)
    static_origin.respond(INDEX_PATH, body=b'{"docs": []}', content_type="application/json")  # parses, no entries

    loaded = await registry.get(SITE)

    assert loaded is not None and loaded.source == "stale-cache"
    assert counting_store.calls["write"] == 0 and blob_payload() == published


# -- outages


async def test_origin_down_and_a_blob_present_serves_the_blob(
    blob_settings: DocumentationSettings,
    client: OriginClient,
    counting_store: CountingStore,
    static_origin: StaticOrigin,
    published: bytes,
) -> None:
    await put(counting_store.inner, published, LONG_AGO)
    static_origin.stop()
    registry = site_registry(blob_settings, client, counting_store)

    loaded = await registry.get(SITE)

    assert loaded is not None and loaded.source == "stale-cache"
    assert registry.health()[SITE].state == SiteState.LOADED


async def test_origin_down_and_no_blob_fails_the_site_for_the_process_lifetime(
    blob_settings: DocumentationSettings,
    client: OriginClient,
    counting_store: CountingStore,
    static_origin: StaticOrigin,
) -> None:
    static_origin.stop()
    registry = site_registry(blob_settings, client, counting_store)

    assert await registry.get(SITE) is None
    health = registry.health()[SITE]
    assert health.state == SiteState.FAILED and "origin request failed" in str(health.reason)

    static_origin.start()
    assert await registry.get(SITE) is None  # the spec: failed for the process lifetime, then skipped
    assert static_origin.requests_for(INDEX_PATH) == []


async def test_an_unpublished_site_fails_and_writes_nothing(
    blob_settings: DocumentationSettings, client: OriginClient, counting_store: CountingStore
) -> None:
    registry = site_registry(blob_settings, client, counting_store)

    assert await registry.get(UNPUBLISHED_SITE) is None
    assert "404" in str(registry.health()[UNPUBLISHED_SITE].reason)
    assert counting_store.calls["write"] == 0


async def test_storage_unreachable_still_answers_from_the_origin_and_health_says_so(
    static_origin: StaticOrigin,
) -> None:
    unreachable = connection_string(f"http://127.0.0.1:{closed_port()}/devstoreaccount1")
    blob_settings = fixture_settings(
        static_origin.url, {"AzureWebJobsStorage": unreachable}, SearchIndexOverrides=ROOTED_OVERRIDE
    )
    app = create_app(blob_settings)
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://test") as http,
    ):
        search = await http.get("/api/docs/search", params={"q": "*", "limit": 25})
        health = (await http.get("/api/health")).json()

    assert search.status_code == 200 and search.json()["results"]
    assert health["cache"]["kind"] == "blob" and health["cache"]["status"] == "unreachable"
    site = health["providers"]["mkdocs"]["sites"][SITE]
    assert site == site | {"state": "loaded", "source": "origin"}


# -- a warm instance and newer copies


async def test_a_warm_instance_picks_up_a_newer_blob_after_the_check_interval_and_not_before(
    blob_settings: DocumentationSettings, client: OriginClient, counting_store: CountingStore, published: bytes
) -> None:
    clock = Clock()
    registry = site_registry(blob_settings, client, counting_store, clock=clock)
    first = await registry.get(SITE)
    assert first is not None
    entries_before = len(first.index.entries)
    current = await counting_store.inner.stat(BLOB)
    assert current is not None
    # Another instance (the warm-up) writes a newer copy.
    newer = StoredCopy(with_extra_page(published), datetime.now(UTC) + timedelta(seconds=1))
    assert await counting_store.inner.write(BLOB, newer, expected_version=current.version)
    counting_store.calls.clear()
    interval = blob_settings.cache.check_interval_seconds
    assert interval == 15  # the default: a publish reaches every instance within it

    clock.now += interval - 1
    assert await registry.get(SITE) is first
    assert sum(counting_store.calls.values()) == 0  # not even a property check before the interval

    clock.now += 1
    swapped = await registry.get(SITE)

    assert swapped is not None and swapped is not first and swapped.source == "cache"
    assert len(swapped.index.entries) == entries_before + 1
    assert len(first.index.entries) == entries_before  # a request still holding the old index sees it whole
    # One property check each for the index, its prebuilt ranker and its missing-pages record (there are none);
    # one index download.
    assert (counting_store.calls["stat"], counting_store.calls["read"]) == (3, 1)


async def test_a_check_on_a_store_that_never_answers_holds_a_request_no_longer_than_the_site_wait(
    static_origin: StaticOrigin, client: OriginClient
) -> None:
    settings = fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__SiteWaitSeconds="0.2")
    store = StallingStore(MemoryStore())
    clock = Clock()
    registry = site_registry(settings, client, store, clock=clock)
    first = await registry.get(SITE)
    others = await registry.within(settings.sites, 5)
    store.stalled = True
    clock.now += settings.cache.check_interval_seconds

    # Each answered from the index in hand after the site wait, however long the store takes; nothing is built.
    assert await asyncio.wait_for(registry.get(SITE), 5) is first
    held = await asyncio.wait_for(registry.within(settings.sites, 0.2), 5)
    assert held == {site: loaded for site, loaded in others.items() if loaded is not None}
    await registry.aclose()


async def test_an_unchanged_blob_costs_one_property_check_and_no_download(
    blob_settings: DocumentationSettings, client: OriginClient, counting_store: CountingStore
) -> None:
    clock = Clock()
    registry = site_registry(blob_settings, client, counting_store, clock=clock)
    first = await registry.get(SITE)
    assert first is not None
    counting_store.calls.clear()

    clock.now += 60
    assert await registry.get(SITE) is first
    # A 304 from the warm-up changes the blob's ETag but not its content: still no download or rebuild.
    stat = await counting_store.inner.stat(BLOB)
    assert stat is not None
    await counting_store.inner.touch(BLOB, datetime.now(UTC), expected_version=stat.version)
    clock.now += 60
    after_touch = await registry.get(SITE)
    clock.now += 60
    await registry.get(SITE)

    assert after_touch is not None and after_touch.index is first.index
    # Per check, one property check each for the index and its missing-pages record.
    assert (counting_store.calls["stat"], counting_store.calls["read"]) == (3 * 2, 0)


async def test_an_older_blob_never_replaces_the_index_in_hand(
    blob_settings: DocumentationSettings, client: OriginClient, counting_store: CountingStore, published: bytes
) -> None:
    clock = Clock()
    registry = site_registry(blob_settings, client, counting_store, clock=clock)
    first = await registry.get(SITE)
    assert first is not None
    current = await counting_store.inner.stat(BLOB)
    assert current is not None
    older = StoredCopy(with_extra_page(published), first.fetched_at - timedelta(minutes=5))
    assert await counting_store.inner.write(BLOB, older, expected_version=current.version)
    counting_store.calls.clear()

    clock.now += 60
    assert (await registry.get(SITE)) is not None
    clock.now += 60
    loaded = await registry.get(SITE)

    assert loaded is not None and loaded.index is first.index
    # Judged from its properties, never downloaded (each check also looks at the missing-pages record's).
    assert (counting_store.calls["stat"], counting_store.calls["read"]) == (2 * 2, 0)
