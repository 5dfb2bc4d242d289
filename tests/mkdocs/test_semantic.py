"""Semantic matching: the real MiniLM encoder, stored vectors, the ranker's semantic credit, the registry's background
embedding over memory and Azurite stores, and a paraphrase answered end to end through the API.

Nothing is faked: the int8 ONNX model runs (it is quick on inputs this small), the fixture origin is the MkDocs build
behind a static server, and Azurite stands in for the shared blob store.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import pytest
from azure.storage.blob import BlobServiceClient

from shared.api import create_app
from shared.blob_cache import BlobIndexStore
from shared.cache import CachedIndex, MemoryIndexStore
from shared.fetch import OriginClient
from shared.mkdocs import provider as provider_module
from shared.mkdocs.index import IndexEntry, SiteIndex, parse_index
from shared.mkdocs.ranking import Ranker
from shared.mkdocs.semantic import (
    DIMENSIONS,
    FORMAT,
    THRESHOLD,
    WEIGHT,
    EmbeddingStopped,
    Encoder,
    SiteVectors,
    ensure_vectors,
    entry_text,
    vectors_key,
)
from shared.mkdocs.sites import LoadedSite, SiteRegistry
from shared.settings import DocumentationSettings
from tests.support.pages import FILLER, page, ranker
from tests.support.sites import DEFAULT_SITE, PUBLISHED_SITES, ROOTED_OVERRIDE, fixture_settings
from tests.support.stores import CountingStore
from tools.azurite import Azurite
from tools.static_origin import StaticOrigin

SITE = DEFAULT_SITE

SYNC_WINDOWS = "Deny windows block deployments at scheduled times, such as a change freeze at the end of the year."
HOLIDAY_FREEZE = "forbid pushing updates over the holidays"
"""Means what SYNC_WINDOWS says, in words none of which (stemmed) it uses."""
OFF_TOPIC = "bake sourdough bread with a starter"


def entries_of(*pages: list[IndexEntry]) -> list[IndexEntry]:
    return [entry for entries in pages for entry in entries]


def semantic_ranker(encoder: Encoder, *pages: list[IndexEntry]) -> Ranker:
    index = ranker(*pages)
    index.attach(SiteVectors.compute(encoder, index.entries))
    return index


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return Encoder.shared()


def unit(encoder: Encoder, text: str) -> npt.NDArray[np.float32]:
    vector: npt.NDArray[np.float32] = encoder.encode([text])[0]
    return vector


# -- the encoder


def test_embeddings_are_384_dimensional_unit_vectors(encoder: Encoder) -> None:
    vectors = encoder.encode(["reset the administrator password", "x", "word " * 200])
    assert vectors.shape == (3, DIMENSIONS) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_paraphrase_is_closer_than_an_unrelated_sentence(encoder: Encoder) -> None:
    reset, forgot, bread = encoder.encode(
        ["reset the administrator password", "I forgot the admin login", "bake sourdough bread"]
    )
    assert float(reset @ forgot) > float(reset @ bread) + 0.3
    assert float(reset @ bread) < THRESHOLD < float(reset @ forgot)  # the ranker's cut-off separates them too


def test_the_same_text_always_gets_the_same_vector(encoder: Encoder) -> None:
    text = "reset the administrator password"
    assert np.array_equal(unit(encoder, text), unit(encoder, text))
    [first, again] = encoder.encode([text, text])
    assert np.array_equal(first, again)


def test_rows_come_back_in_input_order_across_batches_of_mixed_lengths(encoder: Encoder) -> None:
    # encode sorts by length and works in batches of 32: every row must still land where its text was.
    texts = [f"entry {n} " + "about deny windows " * (n % 5) for n in range(40)]
    together = encoder.encode(texts)
    alone = np.stack([unit(encoder, text) for text in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)


# -- stored vectors


PAGES = entries_of(
    page("sync-windows/", "Sync windows", SYNC_WINDOWS), page("retries/", "Retries", "Failed syncs are retried.")
)


@pytest.fixture(scope="module")
def vectors(encoder: Encoder) -> SiteVectors:
    return SiteVectors.compute(encoder, PAGES)


def test_vectors_round_trip_through_their_stored_form(vectors: SiteVectors) -> None:
    loaded = SiteVectors.loads(vectors.dumps())
    assert loaded is not None and loaded.keys == vectors.keys and loaded.matches(PAGES)
    assert loaded.matrix.shape == (2, DIMENSIONS) and loaded.matrix.dtype == np.float32
    np.testing.assert_allclose(loaded.matrix, vectors.matrix, atol=1e-3)  # stored as float16
    assert not np.array_equal(loaded.matrix, np.zeros_like(loaded.matrix))


class CountingEncoder(Encoder):
    """The real model, remembering every text it was asked to embed."""

    def __init__(self, inner: Encoder) -> None:
        super().__init__(inner._session, inner._tokenizer)
        self.texts: list[str] = []

    def encode(self, texts: Sequence[str], *, stop: threading.Event | None = None) -> npt.NDArray[np.float32]:
        self.texts += texts
        return super().encode(texts, stop=stop)


def test_a_new_index_version_embeds_only_the_entries_whose_text_changed(encoder: Encoder) -> None:
    after = entries_of(
        page("retries/", "Retries", "Failed syncs are retried with a back-off."),  # changed, and moved first
        page("sync-windows/", "Sync windows", SYNC_WINDOWS),  # unchanged
        page("hooks/", "Hooks", "Hooks run before and after a sync."),  # new
    )
    counting = CountingEncoder(encoder)
    previous = SiteVectors.compute(encoder, PAGES)

    refreshed = SiteVectors.compute(counting, after, reuse=previous)

    assert counting.texts == [entry_text(after[0]), entry_text(after[2])]
    assert refreshed.matches(after) and not refreshed.matches(PAGES)
    np.testing.assert_array_equal(refreshed.matrix[1], previous.matrix[0])
    np.testing.assert_allclose(refreshed.matrix, SiteVectors.compute(encoder, after).matrix, atol=1e-5)


def test_embedding_stops_between_batches_when_asked(encoder: Encoder) -> None:
    stop = threading.Event()
    stop.set()
    with pytest.raises(EmbeddingStopped):
        encoder.encode(["one", "two"], stop=stop)


@pytest.mark.parametrize(
    "entries",
    [
        entries_of(page("sync-windows/", "Sync windows", SYNC_WINDOWS), page("retries/", "Retries", "Changed.")),
        list(reversed(PAGES)),
        PAGES[:1],
        [*PAGES, *page("hooks/", "Hooks", "Hooks run.")],
    ],
    ids=["a changed text", "another order", "fewer entries", "more entries"],
)
def test_vectors_apply_only_to_exactly_the_texts_they_embed(vectors: SiteVectors, entries: list[IndexEntry]) -> None:
    loaded = SiteVectors.loads(vectors.dumps())
    assert loaded is not None and loaded.matches(PAGES)
    assert not loaded.matches(entries)


@pytest.mark.parametrize(
    "edit",
    [
        {"model": "all-mpnet-base-v2"},
        {"format": FORMAT + 1},
        {"maxTokens": 512},
        {"dimensions": 768},
        {"keys": "abc"},
        {"keys": [1, 2]},
        {"vectors": "not base64!"},
        {"vectors": base64.b64encode(b"\x00" * 10).decode()},
        {"vectors": None},
    ],
    ids=[
        "another model",
        "another format",
        "another truncation",
        "another size",
        "keys not a list",
        "keys not text",
        "bad base64",
        "short vectors",
        "no vectors",
    ],
)
def test_vectors_in_another_layout_or_from_another_model_are_refused(
    vectors: SiteVectors, edit: dict[str, Any]
) -> None:
    document = json.loads(vectors.dumps())
    assert SiteVectors.loads(json.dumps(document).encode()) is not None
    document.update(edit)
    assert SiteVectors.loads(json.dumps(document).encode()) is None


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\x89PNG\r\n\x1a\n\x00\xff\xfe",
        b'{"format": 1, "model": ',
        b"{}",
        b"[]",
        b"null",
    ],
    ids=["empty", "binary", "truncated", "empty object", "array", "null"],
)
def test_garbage_is_refused_not_raised(payload: bytes) -> None:
    assert SiteVectors.loads(payload) is None


# -- the ranker


def test_a_page_sharing_no_word_with_the_query_is_found_by_meaning(encoder: Encoder) -> None:
    index = semantic_ranker(encoder, page("sync-windows/", "Sync windows", SYNC_WINDOWS), *FILLER)
    query = unit(encoder, HOLIDAY_FREEZE)
    assert index.semantic is not None and index.entries[0].page == "sync-windows/"
    cosine = float(index.semantic.vectors.matrix[0] @ query)

    hits = index.search(HOLIDAY_FREEZE, 5, query)

    assert cosine > THRESHOLD + 0.05  # the premise: the model does connect them
    assert [hit.entry.location for hit in hits] == ["sync-windows/"]
    assert hits[0].score == pytest.approx(WEIGHT * (cosine - THRESHOLD))
    assert index.search(HOLIDAY_FREEZE, 5) == []  # without the query's vector: lexical only, and no word matches
    assert ranker(page("sync-windows/", "Sync windows", SYNC_WINDOWS), *FILLER).search(HOLIDAY_FREEZE, 5, query) == []


def test_an_off_topic_query_gains_nothing_from_meaning(encoder: Encoder) -> None:
    starters = page("starters/", "Starter templates", "Starter templates scaffold a new service repository.")
    index = semantic_ranker(encoder, page("sync-windows/", "Sync windows", SYNC_WINDOWS), starters, *FILLER)

    lexical = index.search(OFF_TOPIC, 5)
    semantic = index.search(OFF_TOPIC, 5, unit(encoder, OFF_TOPIC))

    assert [hit.entry.location for hit in lexical] == ["starters/"]  # `starter` matches a word, not the meaning
    assert [(hit.entry.location, hit.score) for hit in semantic] == [(hit.entry.location, hit.score) for hit in lexical]


def test_semantic_credit_is_multiplied_by_the_page_boost(encoder: Encoder) -> None:
    query = unit(encoder, HOLIDAY_FREEZE)
    scores: dict[float, list[float]] = {}
    for boost in (0.0, 1.0, 2.0):
        index = semantic_ranker(encoder, page("sync-windows/", "Sync windows", SYNC_WINDOWS, boost=boost), *FILLER)
        scores[boost] = [hit.score for hit in index.search(HOLIDAY_FREEZE, 5, query)]

    [credit] = scores[1.0]
    assert credit > 0
    assert scores[2.0] == [pytest.approx(2 * credit)]
    assert scores[0.0] == [0.0]  # boost 0: found, but with no semantic credit at all


def test_attaching_vectors_for_another_number_of_entries_is_refused(encoder: Encoder) -> None:
    index = ranker(page("sync-windows/", "Sync windows", SYNC_WINDOWS, ("deny", "Deny windows", "Block syncs.")))
    fewer = SiteVectors.compute(encoder, index.entries[:1])

    with pytest.raises(ValueError, match="1 vectors for 2 entries"):
        index.attach(fewer)
    assert index.semantic is None


def test_a_page_found_only_by_meaning_carries_its_closest_section(encoder: Encoder) -> None:
    controls = page(
        "controls/",
        "Release controls",
        "",
        ("retries", "Retries", "Failed operations are retried with exponential backoff up to five times."),
        ("sync-windows", "Sync windows", SYNC_WINDOWS),
    )
    index = semantic_ranker(encoder, controls, *FILLER)
    assert index.search(HOLIDAY_FREEZE, 5) == []  # the premise: no lexical evidence at all

    [hit] = index.search(HOLIDAY_FREEZE, 5, unit(encoder, HOLIDAY_FREEZE))

    assert hit.entry.location == "controls/"
    assert hit.section is not None and hit.section.location == "controls/#sync-windows"
    assert hit.breadcrumb == ("Release controls", "Sync windows")
    assert hit.preview_source == SYNC_WINDOWS


# -- the registry over the fixture origin


@asynccontextmanager
async def registry_over(
    settings: DocumentationSettings, store: CountingStore, *, clock: Callable[[], float] | None = None
) -> AsyncIterator[SiteRegistry]:
    async with OriginClient(settings.origin, timeout=5, connect_timeout=2) as client:
        registry = SiteRegistry(settings, client, store, **({"clock": clock} if clock else {}))
        try:
            yield registry
        finally:
            await registry.aclose()


async def load_embedded(registry: SiteRegistry) -> LoadedSite:
    loaded = await registry.get(SITE)
    assert loaded is not None
    await registry.embedded(SITE)
    return loaded


def stored_vectors(stored: CachedIndex | None, loaded: LoadedSite) -> SiteVectors:
    assert stored is not None
    vectors = SiteVectors.loads(stored.payload)
    assert vectors is not None and vectors.matches(loaded.index.entries)
    return vectors


@pytest.fixture
def semantic_settings(static_origin: StaticOrigin) -> DocumentationSettings:
    return fixture_settings(static_origin.url, Search__Semantic="true")


async def test_a_first_load_embeds_the_site_in_the_background_and_stores_the_vectors(
    semantic_settings: DocumentationSettings,
) -> None:
    store = CountingStore(MemoryIndexStore())
    async with registry_over(semantic_settings, store) as registry:
        loaded = await registry.get(SITE)
        assert loaded is not None
        assert registry.health()[SITE]["semantic"] == "pending" and loaded.ranker.semantic is None

        await registry.embedded(SITE)

        assert registry.health()[SITE]["semantic"] == "ready"
        assert loaded.ranker.semantic is not None
        vectors = stored_vectors(await store.inner.read(vectors_key(SITE)), loaded)
        np.testing.assert_allclose(vectors.matrix, loaded.ranker.semantic.vectors.matrix, atol=1e-3)


async def test_a_second_instance_attaches_the_stored_vectors_without_computing(
    semantic_settings: DocumentationSettings,
) -> None:
    store = CountingStore(MemoryIndexStore())
    async with registry_over(semantic_settings, store) as first:
        await load_embedded(first)
    store.calls.clear()

    async with registry_over(semantic_settings, store) as second:
        loaded = await load_embedded(second)

    assert second.health()[SITE]["semantic"] == "ready"
    assert loaded.source == "cache" and store.calls["write"] == 0  # neither the index nor the vectors rewritten
    assert loaded.ranker.semantic is not None
    stored = stored_vectors(await store.inner.read(vectors_key(SITE)), loaded)
    assert np.array_equal(loaded.ranker.semantic.vectors.matrix, stored.matrix)  # float16-rounded: read, not computed
    _, computed = await ensure_vectors(store, SITE, loaded.index)
    assert computed is False


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_swapped_in_newer_index_embeds_only_its_new_entries(
    semantic_settings: DocumentationSettings, encoder: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CountingStore(MemoryIndexStore())
    clock = Clock()
    async with registry_over(semantic_settings, store, clock=clock) as registry:
        first = await load_embedded(registry)
        current = await store.inner.read(SITE)
        assert current is not None
        index = json.loads(current.payload)
        index["docs"].append({"location": "brand-new/", "title": "Brand new page", "text": "<p>Fresh words.</p>"})
        newer = CachedIndex(json.dumps(index).encode(), current.fetched_at + timedelta(seconds=1))
        assert await store.inner.write(SITE, newer, expected_version=current.version)
        counting = CountingEncoder(encoder)
        monkeypatch.setattr(Encoder, "_shared", counting)

        clock.now += semantic_settings.cache.check_interval_seconds
        swapped = await registry.get(SITE)
        assert swapped is not None and swapped is not first
        await registry.embedded(SITE)

    assert registry.health()[SITE]["semantic"] == "ready"
    assert (
        swapped.ranker.semantic is not None
        and len(swapped.ranker.semantic.vectors.matrix) == len(first.index.entries) + 1
    )
    assert counting.texts == [entry_text(swapped.index.entries[-1])]  # the unchanged entries were reused
    stored_vectors(await store.inner.read(vectors_key(SITE)), swapped)  # and the new index's vectors stored


@pytest.fixture
def release(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Embedding is held until the test sets the returned event (set again on teardown, so nothing hangs)."""
    event = threading.Event()
    compute = SiteVectors.compute

    def held(*args: Any, **kwargs: Any) -> SiteVectors:
        assert event.wait(30), "the test never released the embedding"
        return compute(*args, **kwargs)

    monkeypatch.setattr(SiteVectors, "compute", held)
    yield event
    event.set()


async def test_a_version_only_refresh_during_embedding_still_ends_ready(
    semantic_settings: DocumentationSettings, release: threading.Event
) -> None:
    store = CountingStore(MemoryIndexStore())
    clock = Clock()
    async with registry_over(semantic_settings, store, clock=clock) as registry:
        first = await registry.get(SITE)
        assert first is not None and registry.health()[SITE]["semantic"] == "pending"
        current = await store.inner.read(SITE)
        assert current is not None  # the warm-up rewrites the same content: only the version changes
        assert await store.inner.write(SITE, current, expected_version=current.version)
        clock.now += semantic_settings.cache.check_interval_seconds
        relabelled = await registry.get(SITE)
        assert relabelled is not None and relabelled is not first and relabelled.ranker is first.ranker
        release.set()
        await registry.embedded(SITE)

    assert registry.health()[SITE]["semantic"] == "ready"
    assert first.ranker.semantic is not None


async def test_stored_vectors_of_another_index_are_recomputed_and_replaced(
    semantic_settings: DocumentationSettings, encoder: Encoder
) -> None:
    store = CountingStore(MemoryIndexStore())
    stale = SiteVectors.compute(encoder, [IndexEntry("old/", "old/", None, "Old", "Old", "Gone.", 1)])
    await store.inner.write(vectors_key(SITE), CachedIndex(stale.dumps(), datetime.now(UTC)), expected_version=None)

    async with registry_over(semantic_settings, store) as registry:
        loaded = await load_embedded(registry)

    assert registry.health()[SITE]["semantic"] == "ready"
    assert store.calls["write"] == 2  # the index from the origin, then the vectors over the stale ones
    stored_vectors(await store.inner.read(vectors_key(SITE)), loaded)


async def test_with_semantic_matching_off_nothing_is_embedded(static_origin: StaticOrigin) -> None:
    settings = fixture_settings(static_origin.url, Search__Semantic="false")
    store = CountingStore(MemoryIndexStore())
    async with registry_over(settings, store) as registry:
        loaded = await load_embedded(registry)

    assert registry.health()[SITE]["semantic"] == "off"
    assert loaded.ranker.semantic is None
    assert await store.inner.read(vectors_key(SITE)) is None
    assert store.calls["write"] == 1  # the index only


# -- on the shared blob store


@pytest.fixture
def published_index(built_origin: Path) -> SiteIndex:
    return parse_index(SITE, (built_origin / SITE / "search" / "search_index.json").read_bytes())


@pytest.fixture
def blob_payload(azurite: Azurite, blob_container: str, counting_store: CountingStore) -> Callable[[], bytes | None]:
    assert isinstance(counting_store.inner, BlobIndexStore)
    name = counting_store.inner.blob_name(vectors_key(SITE))

    def read() -> bytes | None:
        with BlobServiceClient.from_connection_string(azurite.connection_string) as service:
            blob = service.get_blob_client(blob_container, name)
            return bytes(blob.download_blob().readall()) if blob.exists() else None

    return read


async def test_vectors_are_written_to_the_blob_store_once_and_then_read_back(
    counting_store: CountingStore,
    published_index: SiteIndex,
    blob_payload: Callable[[], bytes | None],
) -> None:
    index = published_index
    assert blob_payload() is None

    computed_vectors, computed = await ensure_vectors(counting_store, SITE, index)

    assert computed is True and counting_store.calls["write"] == 1
    payload = blob_payload()
    assert payload is not None
    in_blob = SiteVectors.loads(payload)
    assert in_blob is not None and in_blob.matches(index.entries)
    np.testing.assert_allclose(in_blob.matrix, computed_vectors.matrix, atol=1e-3)

    again, computed = await ensure_vectors(counting_store, SITE, index)

    assert computed is False and counting_store.calls["write"] == 1
    assert np.array_equal(again.matrix, in_blob.matrix)


# -- end to end through the API


async def search_when_ready(settings: DocumentationSettings, query: str) -> tuple[list[str], set[object]]:
    """The locations the API returns for `query`, and the sites' semantic states after it.

    No waiting here: a search itself waits for embeddings still being computed for the sites it ranks.
    """
    app = create_app(settings)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
            response = await http.get("/api/docs/search", params={"q": query, "limit": 5})
            sites = (await http.get("/api/health")).json()["sites"]
    finally:
        await app.state.holder.close()
    assert response.status_code == 200, response.text
    return [result["location"] for result in response.json()["results"]], {
        sites[site]["semantic"] for site in PUBLISHED_SITES
    }


PARAPHRASES = [
    ("how long until my API key stops working", "beta-docs/api/authentication/"),  # lexically missed
    ("expose the agent to the internet over HTTPS", "ops/ingress/"),  # lexically ranked below another page
]


@pytest.mark.parametrize(("query", "answer"), PARAPHRASES)
async def test_a_paraphrase_finds_the_page_that_answers_it_first(
    static_origin: StaticOrigin, query: str, answer: str
) -> None:
    def settings(semantic: str) -> DocumentationSettings:
        return fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic=semantic)

    lexical, lexical_states = await search_when_ready(settings("false"), query)
    semantic, semantic_states = await search_when_ready(settings("true"), query)

    assert lexical_states == {"off"} and semantic_states == {"ready"}
    assert lexical[:1] != [answer]
    assert semantic[:1] == [answer]


async def test_a_search_waits_only_so_long_for_embeddings_then_ranks_lexically(
    static_origin: StaticOrigin, monkeypatch: pytest.MonkeyPatch, release: threading.Event
) -> None:
    query, answer = PARAPHRASES[0]
    monkeypatch.setattr(provider_module, "EMBEDDING_WAIT_SECONDS", 0.2)
    settings = fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="true")
    app = create_app(settings)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
            early = await http.get("/api/docs/search", params={"q": query, "limit": 5})
            pending = (await http.get("/api/health")).json()["sites"]
            release.set()
            monkeypatch.setattr(provider_module, "EMBEDDING_WAIT_SECONDS", 30.0)
            late = await http.get("/api/docs/search", params={"q": query, "limit": 5})  # waits for them now
            ready = (await http.get("/api/health")).json()["sites"]
    finally:
        release.set()
        await app.state.holder.close()

    assert early.status_code == 200 and late.status_code == 200
    assert {pending[site]["semantic"] for site in PUBLISHED_SITES} == {"pending"}
    assert [result["location"] for result in early.json()["results"]][:1] != [answer]  # lexical, not stalled
    assert {ready[site]["semantic"] for site in PUBLISHED_SITES} == {"ready"}
    assert [result["location"] for result in late.json()["results"]][:1] == [answer]


async def test_a_failing_query_embedding_answers_lexically_not_empty(
    static_origin: StaticOrigin, monkeypatch: pytest.MonkeyPatch
) -> None:
    query, _ = PARAPHRASES[1]
    settings = fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="true")
    lexical, _ = await search_when_ready(
        fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false"), query
    )
    app = create_app(settings)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
            assert (await http.get("/api/docs/search", params={"q": query, "limit": 5})).status_code == 200

            def broken(self: Encoder, texts: Sequence[str], *, stop: threading.Event | None = None) -> Any:
                raise RuntimeError("onnxruntime failed")

            monkeypatch.setattr(Encoder, "encode", broken)
            response = await http.get("/api/docs/search", params={"q": query, "limit": 5})
    finally:
        await app.state.holder.close()

    assert response.status_code == 200
    assert [result["location"] for result in response.json()["results"]] == lexical
