"""The cache's naming rules, the in-memory store, and the newest-copy-wins write rule every store shares."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared.cache import MemoryStore, StoredCopy, index_name, missing_name, store_newest, vectors_name
from shared.errors import ConfigurationError
from shared.settings import PREFIX, load_settings

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def entry(payload: bytes, at: datetime = T0, **fields: object) -> StoredCopy:
    return StoredCopy(payload, at, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("template", "site", "expected"),
    [
        ("{site}-docs-search-index.json", "forge", "forge-docs-search-index.json"),
        ("docs-index.json", "forge", "forge-docs-index.json"),  # no placeholder: the site is prepended
        ("cache/{site}.json", "a/b", "cache/a-b.json"),  # the site is sanitized, the template is not
        ("{site}-{site}.json", "x", "x-x.json"),
        ("{site}.json", 'a<b>c:d"e\\f|g?h*i', "a-b-c-d-e-f-g-h-i.json"),
        ("{site}.json", "tab\there", "tab-here.json"),
        ("{site}.json", "iac-azure-modules", "iac-azure-modules.json"),
        ("my:{site}.json", "s", "my:s.json"),
    ],
)
def test_index_name_follows_the_spec(template: str, site: str, expected: str) -> None:
    assert index_name(template, site) == expected


async def test_memory_store_writes_only_against_the_version_it_expects() -> None:
    store = MemoryStore()
    assert await store.read("s") is None and await store.stat("s") is None

    first = await store.write("s", entry(b"one", entries=1), expected_version=None)
    assert first is not None
    assert await store.write("s", entry(b"two"), expected_version=None) is None  # create-only lost the race
    second = await store.write("s", entry(b"two"), expected_version=first)
    assert second is not None and second != first
    assert await store.write("s", entry(b"three"), expected_version=first) is None  # stale expectation

    stored = await store.read("s")
    assert stored is not None and stored.payload == b"two" and stored.version == second


async def test_memory_store_touch_changes_the_date_and_version_but_not_the_payload() -> None:
    store = MemoryStore()
    version = await store.write("s", entry(b"one", origin_etag='"e"'), expected_version=None)
    assert version is not None
    later = T0 + timedelta(hours=3)

    touched = await store.touch("s", later, expected_version=version)

    stat = await store.stat("s")
    assert touched is not None and stat is not None
    assert (stat.version, stat.fetched_at, stat.origin_etag) == (touched, later, '"e"')
    assert stat.digest == entry(b"one").digest
    assert await store.touch("s", later, expected_version=version) is None


async def test_memory_store_describes_itself_as_process_local() -> None:
    described = MemoryStore().describe()
    assert described.kind == "memory" and described.shared is False
    assert "memory" in str(described.status)


async def test_store_newest_lets_a_newer_copy_replace_an_older_winner() -> None:
    store = MemoryStore()
    await store.write("s", entry(b"old", T0), expected_version=None)

    # This writer read nothing (expected None) and so lost the create race, but its copy is newer: it wins.
    written = await store_newest(store, "s", entry(b"new", T0 + timedelta(minutes=5)), expected_version=None)

    stored = await store.read("s")
    assert written is not None and stored is not None and stored.payload == b"new"


async def test_store_newest_never_lets_an_older_copy_replace_a_newer_one() -> None:
    store = MemoryStore()
    first = await store.write("s", entry(b"base", T0), expected_version=None)
    await store.write("s", entry(b"newer", T0 + timedelta(minutes=10)), expected_version=first)

    written = await store_newest(store, "s", entry(b"older", T0 + timedelta(minutes=5)), expected_version=first)

    stored = await store.read("s")
    assert written is None and stored is not None and stored.payload == b"newer"


def test_age_is_measured_against_an_injectable_now() -> None:
    assert entry(b"x", T0).age_hours(T0 + timedelta(minutes=90)) == pytest.approx(1.5)


@pytest.mark.parametrize("template", ["{site}-docs-search-index.json", "{site}.semantic", "docs.json", "{site}/x.json"])
def test_no_site_index_name_collides_with_another_sites_artifacts(template: str) -> None:
    sites = ["x", "x.semantic", "x-semantic", "embeddings", "embeddings-x"]
    env = {f"{PREFIX}CacheFileNameTemplate": template, f"{PREFIX}Sites": ",".join(sites)}
    try:
        load_settings(env)
    except ConfigurationError as exc:  # the settings refuse a template that would reach the artifacts' names
        assert template == "{site}/x.json" and "'embeddings'" in str(exc)
        return
    indexes = {index_name(template, site) for site in sites}
    artifacts = {vectors_name(site, "model") for site in sites} | {missing_name(site) for site in sites}
    assert len(indexes) == len(sites) and len(artifacts) == 2 * len(sites)
    assert not indexes & artifacts
    assert all(name.startswith(("embeddings/", "derived/")) for name in artifacts)
    assert not any(name.startswith(("embeddings/", "derived/")) for name in indexes)


@pytest.mark.parametrize("model", ["missing", "missing/pages", "pages", "missing-pages", "model"])
@pytest.mark.parametrize("site", ["x", "x/missing", "missing", "embeddings"])
def test_a_missing_pages_record_never_shares_a_name_with_embeddings(site: str, model: str) -> None:
    names = {vectors_name(other, model) for other in ("x", "x/missing", "missing", "embeddings")}
    assert missing_name(site) not in names
    assert missing_name(site).startswith("derived/") and missing_name(site).endswith("/missing/pages.json")
