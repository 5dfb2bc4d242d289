"""The blob store against Azurite with the real SDK: naming, metadata, conditional writes, races, outages."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from azure.storage.blob import BlobServiceClient

from shared.cache import MemoryStore, StoredCopy, index_name, open_store, store_newest, vectors_name
from shared.cache.blob import OPERATION_TIMEOUT, PROBE_AFTER, BlobStore
from shared.errors import StoreError
from shared.settings import PREFIX, load_settings
from tests.support.stores import closed_port
from tools.azurite import Azurite, connection_string

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def blob_settings(azurite: Azurite, container: str, **extra: str) -> dict[str, str]:
    return {"AzureWebJobsStorage": azurite.connection_string, f"{PREFIX}Cache__Container": container, **extra}


@pytest.fixture
async def store(azurite: Azurite, blob_container: str) -> AsyncIterator[BlobStore]:
    opened = open_store(load_settings(blob_settings(azurite, blob_container)))
    assert isinstance(opened, BlobStore)
    yield opened
    await opened.aclose()


@pytest.fixture
def raw(azurite: Azurite, blob_container: str) -> Callable[[str], dict[str, object]]:
    """What is really in the container, read with the plain synchronous SDK client."""

    def read(name: str) -> dict[str, object]:
        with BlobServiceClient.from_connection_string(azurite.connection_string) as client:
            blob = client.get_blob_client(blob_container, name)
            properties = blob.get_blob_properties()
            return {"payload": blob.download_blob().readall(), "metadata": properties.metadata, "etag": properties.etag}

    return read


def entry(payload: bytes, at: datetime = T0, **fields: object) -> StoredCopy:
    return StoredCopy(payload, at, **fields)  # type: ignore[arg-type]


# -- choosing the store


async def test_no_storage_configured_means_memory_only() -> None:
    store = open_store(load_settings({}))
    assert isinstance(store, MemoryStore)
    assert store.describe().shared is False
    await store.aclose()


@pytest.mark.parametrize(
    ("environ", "source"),
    [
        ({"AzureWebJobsStorage": "{cs}"}, "AzureWebJobsStorage"),
        ({f"{PREFIX}Cache__ConnectionString": "{cs}"}, f"{PREFIX}Cache__ConnectionString"),
        (  # the cache's own account wins over the host's
            {f"{PREFIX}Cache__ConnectionString": "{cs}", "AzureWebJobsStorage": "UseDevelopmentStorage=true"},
            f"{PREFIX}Cache__ConnectionString",
        ),
        ({f"{PREFIX}Cache__BlobServiceUri": "https://acct.blob.core.windows.net"}, f"{PREFIX}Cache__BlobServiceUri"),
        (
            {"AzureWebJobsStorage__blobServiceUri": "https://acct.blob.core.windows.net"},
            "AzureWebJobsStorage__blobServiceUri",
        ),
    ],
)
async def test_the_storage_account_comes_from_the_first_configured_setting(
    environ: dict[str, str], source: str
) -> None:
    cs = connection_string("http://127.0.0.1:1/devstoreaccount1")
    store = open_store(load_settings({key: value.replace("{cs}", cs) for key, value in environ.items()}))
    try:
        described = store.describe()
        assert (described.kind, described.source, described.shared) == ("blob", source, True)
        assert described.container == "docs-index-cache"
        assert described.status == "unknown"  # opening a store does no I/O
        assert "AccountKey" not in str(described)
    finally:
        await store.aclose()


async def test_an_unusable_connection_string_degrades_to_memory_and_says_so() -> None:
    store = open_store(load_settings({"AzureWebJobsStorage": "not a connection string"}))
    described = store.describe()
    assert (described.kind, described.status) == ("memory", "degraded")
    assert "AzureWebJobsStorage" in str(described.detail)
    await store.aclose()


# -- round trip


async def test_round_trip_with_metadata_in_a_container_created_on_first_write(
    store: BlobStore, raw: Callable[[str], dict[str, object]]
) -> None:
    assert await store.read("forge") is None and await store.stat("forge") is None  # no container yet

    written = await store.write(
        "forge",
        entry(b'{"docs": []}', origin_etag='"abc"', origin_last_modified="Wed, 01 Jan 2026 10:00:00 GMT", entries=7),
        expected_version=None,
    )

    assert written is not None
    stored = raw("forge")
    assert stored["payload"] == b'{"docs": []}' and stored["etag"] == written
    assert stored["metadata"] == {
        "fetchedat": T0.isoformat(),
        "originetag": '"abc"',
        "originlastmodified": "Wed, 01 Jan 2026 10:00:00 GMT",
        "entries": "7",
        "sha256": entry(b'{"docs": []}').digest,
    }
    read = await store.read("forge")
    assert read == entry(
        b'{"docs": []}',
        origin_etag='"abc"',
        origin_last_modified="Wed, 01 Jan 2026 10:00:00 GMT",
        version=written,
        entries=7,
    )
    stat = await store.stat("forge")
    assert stat is not None and stat.version == written and stat.complete
    assert store.describe().status == "ok"


async def test_blobs_are_named_exactly_as_the_store_is_asked(azurite: Azurite, blob_container: str) -> None:
    settings = load_settings(blob_settings(azurite, blob_container, **{f"{PREFIX}CacheFileNameTemplate": "idx.json"}))
    store = open_store(settings)
    assert isinstance(store, BlobStore)
    try:
        await store.write(index_name(settings.cache_file_name_template, "a:b"), entry(b"x"), expected_version=None)
        await store.write(vectors_name("a:b", "model"), entry(b"y"), expected_version=None)
        with BlobServiceClient.from_connection_string(azurite.connection_string) as client:
            names = [blob.name for blob in client.get_container_client(blob_container).list_blobs()]
        assert sorted(names) == ["a-b-idx.json", "embeddings/a-b/model.json"]
    finally:
        await store.aclose()


async def test_missing_or_unreadable_metadata_makes_a_copy_look_old(
    store: BlobStore, azurite: Azurite, blob_container: str
) -> None:
    with BlobServiceClient.from_connection_string(azurite.connection_string) as client:
        client.create_container(blob_container)
        client.get_blob_client(blob_container, "s").upload_blob(b"{}", metadata={"fetchedat": "yesterday"})

    read = await store.read("s")
    stat = await store.stat("s")

    assert read is not None and read.fetched_at.year == 1970 and read.age_hours() > 1
    assert stat is not None and not stat.complete  # not written by this service: its validators are not trusted


# -- races


async def test_of_two_writers_expecting_the_same_version_exactly_one_wins(
    store: BlobStore, raw: Callable[[str], dict[str, object]]
) -> None:
    base = await store.write("s", entry(b"base"), expected_version=None)

    results = await asyncio.gather(
        store.write("s", entry(b"from-a"), expected_version=base),
        store.write("s", entry(b"from-b"), expected_version=base),
    )

    winners = [result for result in results if result is not None]
    assert len(winners) == 1
    assert raw("s")["payload"] == (b"from-a" if results[0] else b"from-b")


async def test_two_first_copies_race_and_only_one_is_created(store: BlobStore) -> None:
    results = await asyncio.gather(*(store.write("s", entry(b"%d" % i), expected_version=None) for i in range(4)))
    assert sum(result is not None for result in results) == 1


async def test_an_older_copy_never_replaces_a_newer_one(
    store: BlobStore, raw: Callable[[str], dict[str, object]]
) -> None:
    base = await store.write("s", entry(b"base", T0), expected_version=None)
    older, newer = entry(b"older", T0 + timedelta(minutes=1)), entry(b"newer", T0 + timedelta(minutes=2))

    # Both writers read `base`; the newer one lands first, then the older one retries against it and gives up.
    assert await store_newest(store, "s", newer, expected_version=base) is not None
    assert await store_newest(store, "s", older, expected_version=base) is None

    assert raw("s")["payload"] == b"newer"


async def test_a_newer_copy_replaces_an_older_one_that_won_the_race(
    store: BlobStore, raw: Callable[[str], dict[str, object]]
) -> None:
    base = await store.write("s", entry(b"base", T0), expected_version=None)
    await store.write("s", entry(b"older", T0 + timedelta(minutes=1)), expected_version=base)

    written = await store_newest(store, "s", entry(b"newer", T0 + timedelta(minutes=2)), expected_version=base)

    assert written is not None and raw("s")["payload"] == b"newer"


async def test_touch_updates_only_the_metadata_and_only_against_the_expected_version(
    store: BlobStore, raw: Callable[[str], dict[str, object]]
) -> None:
    version = await store.write("s", entry(b"payload", origin_etag='"o"', entries=3), expected_version=None)
    assert version is not None
    later = T0 + timedelta(hours=5)

    touched = await store.touch("s", later, expected_version=version)

    stored = raw("s")
    assert touched is not None and touched != version and stored["etag"] == touched
    assert stored["payload"] == b"payload"
    metadata = stored["metadata"]
    assert isinstance(metadata, dict)
    assert metadata["fetchedat"] == later.isoformat() and metadata["originetag"] == '"o"'
    assert metadata["sha256"] == entry(b"payload").digest
    assert await store.touch("s", later, expected_version=version) is None  # stale: someone changed it since


# -- proxies


@pytest.mark.parametrize("named", [True, False], ids=["a proxy named", "no proxy named"])
async def test_storage_reads_the_environments_proxy_only_when_the_settings_name_one(
    azurite: Azurite, blob_container: str, named: bool
) -> None:
    """The SDK's session reads the environment's proxy settings only when the settings name a proxy: reading them
    costs two worker-thread hops per request, and storage needs nothing else from the environment. The proxy here is
    a closed port, so a request that went through it fails."""
    proxy = f"http://user:secret@127.0.0.1:{closed_port()}"
    settings = load_settings(blob_settings(azurite, blob_container, **({"https_proxy": proxy} if named else {})))
    assert settings.proxy_configured is named and "secret" not in repr(settings)
    store = open_store(settings)
    assert isinstance(store, BlobStore)
    with pytest.MonkeyPatch.context() as environment:  # what the SDK finds, were it to look (undone before teardown)
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
            environment.delenv(name, raising=False)
            environment.delenv(name.lower(), raising=False)
        environment.setenv("HTTP_PROXY", proxy)
        try:
            if named:
                with pytest.raises(StoreError):
                    await store.read("s")
            else:
                assert await store.write("s", entry(b"direct"), expected_version=None) is not None
                found = await store.read("s")
                assert found is not None and found.payload == b"direct"
        finally:
            await store.aclose()


# -- outages


async def test_an_unreachable_account_fails_fast_and_health_says_so() -> None:
    ticks = [0.0]
    cs = connection_string(f"http://127.0.0.1:{closed_port()}/devstoreaccount1")
    store = BlobStore.from_connection_string(
        cs, "docs-index-cache", source="test", clock=lambda: ticks[0], cool_down=30
    )
    try:
        started = asyncio.get_running_loop().time()
        with pytest.raises(StoreError):
            await store.read("s")
        assert asyncio.get_running_loop().time() - started < 5
        described = store.describe()
        assert described.status == "unreachable" and "origin" in str(described.detail)

        with pytest.raises(StoreError, match="cool-down"):  # not asked again during the cool-down
            await store.stat("s")
        ticks[0] = 31.0
        with pytest.raises(StoreError, match="ServiceRequestError"):  # asked again afterwards
            await store.write("s", entry(b"x"), expected_version=None)
    finally:
        await store.aclose()


@pytest.fixture
def own_azurite() -> Iterator[Azurite]:
    """An Azurite of this test's own, to stall without stalling every other test's."""
    with Azurite() as own:
        yield own


async def test_a_stalled_account_costs_one_short_wait_then_is_skipped(own_azurite: Azurite) -> None:
    store = BlobStore.from_connection_string(own_azurite.connection_string, "stalled-cache", source="test")
    try:
        await store.write("s", entry(b"x"), expected_version=None)
        with own_azurite.paused():  # it accepts connections and never answers
            loop = asyncio.get_running_loop()
            started = loop.time()
            with pytest.raises(StoreError, match="Timeout"):
                await store.stat("s")
            # A few times the answer timeout, never the operation's 30 s: the request it rides on answers.
            assert loop.time() - started < OPERATION_TIMEOUT / 3
            assert store.describe().status == "unreachable"
            started = loop.time()
            with pytest.raises(StoreError, match="cool-down"):  # skipped, no second wait
                await store.read("s")
            assert loop.time() - started < 1
    finally:
        await store.aclose()


async def test_health_hears_of_a_stall_within_seconds_with_no_call_under_way(own_azurite: Azurite) -> None:
    ticks = [0.0]
    store = BlobStore.from_connection_string(
        own_azurite.connection_string, "stalled-cache", source="test", clock=lambda: ticks[0]
    )
    try:
        await store.write("s", entry(b"x"), expected_version=None)
        store.probe()  # heard from just now: nothing asked
        assert store.describe().status == "ok"
        with own_azurite.paused():
            ticks[0] = PROBE_AFTER + 1
            store.probe()
            store.probe()  # one probe at a time
            deadline = time.monotonic() + OPERATION_TIMEOUT / 3
            while store.describe().status != "unreachable":
                assert time.monotonic() < deadline, store.describe()
                await asyncio.sleep(0.05)
    finally:
        await store.aclose()
