"""Embeddings around a site's life: found in the store or computed in the background, never waited for, swapped
with their index, shared through the blob store, and a paraphrase answered end to end.

The origin is the MkDocs fixture build behind a static server; stores are the memory store and Azurite. The
lifecycle tests pass the small word encoder through the same seams the composition root uses; the end-to-end
paraphrase runs the real model.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import pytest
from asgi_lifespan import LifespanManager
from azure.storage.blob import BlobServiceClient

from shared.api import create_app
from shared.cache import (
    CopyStore,
    MemoryStore,
    StoredCopy,
    index_name,
    pieces_name,
    ranking_name,
    scan_name,
    vectors_name,
)
from shared.compose import Composition, compose, site_registry
from shared.embedding import MINILM_ID, EmbeddingModel
from shared.errors import EmbeddingStopped
from shared.fetch import OriginClient
from shared.providers.mkdocs.indexes.index import IndexEntry, SiteIndex, parse_index
from shared.providers.mkdocs.lifecycle.loading import LoadedSite
from shared.providers.mkdocs.lifecycle.sites import SiteRegistry
from shared.providers.mkdocs.lifecycle.warm import warm_all
from shared.providers.mkdocs.scoring.federation import Federation, Lexical
from shared.providers.mkdocs.scoring.quantized import split_query
from shared.providers.mkdocs.scoring.stored_vectors import (
    compute_and_store,
    embedded_from,
    ensure_vectors,
    read_scan,
    read_stored,
    repair_scan,
    store_scan,
)
from shared.providers.mkdocs.scoring.text import Query
from shared.providers.mkdocs.scoring.vectors import SiteVectors, embedded_texts, entry_text, page_outline, text_key
from shared.requests import SearchRequest
from shared.settings import DocumentationSettings
from tests.support.clock import Clock
from tests.support.encoders import PieceWords, WordEncoder, model_of
from tests.support.sites import DEFAULT_SITE, PUBLISHED_SITES, ROOTED_OVERRIDE, fixture_settings
from tests.support.stores import CountingStore
from tools.azurite import Azurite
from tools.static_origin import StaticOrigin

SITE = DEFAULT_SITE
MODEL = WordEncoder.model_id
INDEX = index_name("{site}-docs-search-index.json", SITE)
VECTORS = vectors_name(SITE, MODEL)
SCAN = scan_name(SITE, MODEL)


@pytest.fixture
def settings(static_origin: StaticOrigin) -> DocumentationSettings:
    return fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE)


@asynccontextmanager
async def registry_over(
    settings: DocumentationSettings,
    store: CopyStore,
    model: EmbeddingModel | None,
    *,
    clock: Callable[[], float] | None = None,
) -> AsyncIterator[SiteRegistry]:
    async with OriginClient(settings.origin, timeout=5, connect_timeout=2) as client:
        registry = site_registry(settings, client, store, embedding=model, **({"clock": clock} if clock else {}))
        try:
            yield registry
        finally:
            await registry.aclose()


async def load_embedded(registry: SiteRegistry) -> LoadedSite:
    loaded = await registry.get(SITE)
    assert loaded is not None
    await registry.embedded(SITE)
    return registry.current(SITE) or loaded


async def stored_vectors(store: CopyStore, loaded: LoadedSite) -> SiteVectors:
    stored = await store.read(VECTORS)
    assert stored is not None
    vectors = SiteVectors.loads(stored.payload, MODEL)
    assert vectors is not None and vectors.matches(loaded.index.entries, loaded.index.code)
    return vectors


async def publish_newer(store: CopyStore, *, extra: dict[str, str]) -> None:
    """What another instance's warm-up does: a newer copy of the site's index in the shared store."""
    current = await store.read(INDEX)
    assert current is not None
    index = json.loads(current.payload)
    index["docs"].append(extra)
    newer = StoredCopy(json.dumps(index).encode(), current.fetched_at + timedelta(seconds=1))
    assert await store.write(INDEX, newer, expected_version=current.version)


NEW_PAGE = {"location": "brand-new/", "title": "Brand new page", "text": "<p>Fresh words.</p>"}


# -- the registry


async def test_a_first_load_embeds_in_the_background_and_stores_the_vectors(settings: DocumentationSettings) -> None:
    encoder, store = WordEncoder(hold=True), MemoryStore()
    async with registry_over(settings, store, model_of(encoder)) as registry:
        loaded = await registry.get(SITE)
        assert loaded is not None and loaded.ranker.semantic is None
        health = registry.health()[SITE]
        assert (health.ranking, health.semantic) == ("lexical", "pending")
        assert "computed in the background" in str(health.why)

        encoder.released.set()
        await registry.embedded(SITE)

        health = registry.health()[SITE]
        assert (health.ranking, health.semantic) == ("semantic", "ready") and health.why is None
        assert loaded.ranker.semantic is not None
        vectors = await stored_vectors(store, loaded)
        probe = vectors.matrix[0]  # the attached rows are the stored ones (held as int8: to about 0.01 of a cosine)
        pages = len(vectors.matrix) - len(loaded.index.code)  # the code blocks' rows are held apart
        np.testing.assert_allclose(
            vectors.matrix[:pages] @ probe, loaded.ranker.semantic.rows.similarities(split_query(probe)), atol=0.01
        )
        code = loaded.ranker.semantic.code_similarities(split_query(probe))
        assert code is not None and len(loaded.index.code) > 0
        np.testing.assert_allclose(vectors.matrix[pages:] @ probe, code, atol=0.01)


async def test_a_second_instance_attaches_the_stored_vectors_without_computing(
    settings: DocumentationSettings,
) -> None:
    store = CountingStore(MemoryStore())
    async with registry_over(settings, store, model_of(WordEncoder())) as first:
        await load_embedded(first)
    store.calls.clear()
    store.names.clear()
    encoder = WordEncoder()

    async with registry_over(settings, store, model_of(encoder)) as second:
        loaded = await load_embedded(second)
        assert second.health()[SITE].semantic == "ready"

    assert encoder.texts == [] and store.calls["write"] == 0  # neither the index nor the vectors rewritten
    assert loaded.source == "cache" and loaded.ranker.semantic is not None
    # It downloads the scan rows alone, a third of the vectors' bytes, and asks for a prebuilt ranker in one request.
    assert ("read", SCAN) in store.names and ("read", VECTORS) not in store.names
    assert ("read", ranking_name(SITE)) in store.names and ("stat", ranking_name(SITE)) not in store.names


async def test_a_newer_index_is_embedded_before_it_replaces_the_one_served(settings: DocumentationSettings) -> None:
    encoder, store, clock = WordEncoder(), MemoryStore(), Clock()
    async with registry_over(settings, store, model_of(encoder), clock=clock) as registry:
        served = await load_embedded(registry)
        encoder.released.clear()
        encoder.texts.clear()
        await publish_newer(store, extra=NEW_PAGE)

        clock.now += settings.cache.check_interval_seconds
        during = await registry.get(SITE)

        assert during is served and during.ranker.semantic is not None  # still the old index, still semantic
        assert registry.health()[SITE].updating
        encoder.released.set()
        await registry.embedded(SITE)
        swapped = registry.current(SITE)

    assert swapped is not None and swapped is not served
    assert swapped.ranker.semantic is not None  # index and vectors arrived together
    assert len(swapped.index.entries) == len(served.index.entries) + 1
    new_page = swapped.index.entries[-1]
    # the unchanged entries and outlines were reused: only the new page's entry and outline were embedded
    assert encoder.texts == [entry_text(new_page), page_outline([new_page], 0, [0])]
    assert registry.health()[SITE].semantic == "ready"
    await stored_vectors(store, swapped)


async def test_a_newer_index_whose_embedding_fails_is_swapped_in_and_ranks_lexically(
    settings: DocumentationSettings,
) -> None:
    encoder, store, clock = WordEncoder(), MemoryStore(), Clock()
    async with registry_over(settings, store, model_of(encoder), clock=clock) as registry:
        served = await load_embedded(registry)
        encoder.fail_bulk = RuntimeError("onnxruntime failed")
        await publish_newer(store, extra=NEW_PAGE)
        clock.now += settings.cache.check_interval_seconds
        await registry.get(SITE)
        await registry.embedded(SITE)
        swapped = registry.current(SITE)
        health = registry.health()[SITE]

    assert swapped is not None and swapped is not served and swapped.ranker.semantic is None
    assert (health.ranking, health.semantic) == ("lexical", "failed")
    assert health.why == "embedding its index failed: RuntimeError; it is tried again later (backing off)"


async def test_a_failed_embedding_is_tried_again_after_the_retry_delay(static_origin: StaticOrigin) -> None:
    settings = fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, SiteRetrySeconds="1")
    encoder, store = WordEncoder(), MemoryStore()
    encoder.fail_bulk = RuntimeError("onnxruntime failed")
    async with registry_over(settings, store, model_of(encoder)) as registry:
        loaded = await load_embedded(registry)
        assert registry.health()[SITE].semantic == "failed" and loaded.ranker.semantic is None
        encoder.fail_bulk = None  # the model recovers
        for _ in range(300):  # the retry comes after about a second: poll against a deadline
            if registry.health()[SITE].semantic == "ready":
                break
            await asyncio.sleep(0.02)

    assert registry.health()[SITE].semantic == "ready" and loaded.ranker.semantic is not None


async def test_a_version_only_refresh_during_embedding_still_ends_ready(settings: DocumentationSettings) -> None:
    encoder, store, clock = WordEncoder(hold=True), MemoryStore(), Clock()
    async with registry_over(settings, store, model_of(encoder), clock=clock) as registry:
        first = await registry.get(SITE)
        assert first is not None
        current = await store.read(INDEX)
        assert current is not None  # the warm-up rewrites the same content: only the version changes
        assert await store.write(INDEX, current, expected_version=current.version)
        clock.now += settings.cache.check_interval_seconds
        relabelled = await registry.get(SITE)
        assert relabelled is not None and relabelled is not first and relabelled.ranker is first.ranker
        encoder.released.set()
        await registry.embedded(SITE)

    assert registry.health()[SITE].semantic == "ready"
    assert first.ranker.semantic is not None


async def test_stored_vectors_of_another_index_are_recomputed_and_replaced(settings: DocumentationSettings) -> None:
    store = CountingStore(MemoryStore())
    stale = SiteVectors.compute(WordEncoder(), [IndexEntry("old/", "old/", None, "Old", "Old", "Gone.", 1)])
    payload = stale.dumps(MODEL)
    await store.inner.write(VECTORS, StoredCopy(payload, datetime.now(UTC)), expected_version=None)

    async with registry_over(settings, store, model_of(WordEncoder())) as registry:
        loaded = await load_embedded(registry)

    assert registry.health()[SITE].semantic == "ready"
    assert store.calls["write"] == 3  # the index from the origin, then the vectors over the stale ones, their scan rows
    await stored_vectors(store.inner, loaded)


async def test_with_semantic_matching_off_nothing_is_embedded(settings: DocumentationSettings) -> None:
    store = CountingStore(MemoryStore())
    async with registry_over(settings, store, None) as registry:
        loaded = await load_embedded(registry)
        health = registry.health()[SITE]

    assert (health.ranking, health.semantic) == ("lexical", "off") and "Semantic=false" in str(health.why)
    assert loaded.ranker.semantic is None
    assert store.calls["write"] == 1  # the index only


async def test_the_sites_and_the_warm_up_embed_on_one_lane(settings: DocumentationSettings) -> None:
    encoder = WordEncoder(hold=True)
    model = model_of(encoder)
    store = MemoryStore(shared=True)  # the warm-up embeds only into a store other instances can read
    async with registry_over(settings, store, model) as registry:
        await registry.get(SITE)
        warming = asyncio.ensure_future(warm_all(settings, store, embedding=model))
        await asyncio.to_thread(encoder.started.wait, 5)
        encoder.released.set()
        report = await warming
        await registry.embedded(SITE)

    assert encoder.most_running == 1  # never two sites' embeddings at once in one process
    assert {outcome["semantic"] for outcome in report.values() if "semantic" in outcome} <= {"computed", "current"}


# -- through the service: no search waits for embedding work


async def settled(composed: Composition) -> None:
    """Poll health (as an operator would) until no site's embeddings are pending; a deadline, not a sleep."""
    for _ in range(600):
        sites = composed.health().providers["mkdocs"].health.sites
        if all(getattr(sites[site], "semantic", None) != "pending" for site in PUBLISHED_SITES):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("embeddings still pending after 30 s")


async def search(
    settings: DocumentationSettings, model: EmbeddingModel | None, store: CopyStore, query: str
) -> tuple[list[str], dict[str, Any]]:
    async with compose(settings, embedding=model, store=store) as composed:
        response = await composed.service.search(SearchRequest(query, limit=5))
        return [result.location for result in response.results], composed.health()


async def test_the_first_search_answers_lexically_at_once_while_embeddings_are_computed(
    settings: DocumentationSettings,
) -> None:
    encoder, store = WordEncoder(hold=True), MemoryStore()
    lexical, _ = await search(settings, None, MemoryStore(), "install")
    async with compose(settings, embedding=model_of(encoder), store=store) as composed:
        first = await composed.service.search(SearchRequest("install", limit=5))
        sites = composed.health().providers["mkdocs"].health.sites

        assert [result.location for result in first.results] == lexical  # answered, and lexically
        assert encoder.queries == []  # the query was not even embedded: scores of one kind
        assert {sites[site].semantic for site in PUBLISHED_SITES} == {"pending"}
        encoder.released.set()


async def test_stored_vectors_are_attached_before_the_first_search_ranks(settings: DocumentationSettings) -> None:
    store = MemoryStore()
    async with compose(settings, embedding=model_of(WordEncoder()), store=store) as composed:
        await composed.service.search(SearchRequest("*", limit=25))
        await settled(composed)
    encoder = WordEncoder()

    locations, health = await search(settings, model_of(encoder), store, "install")

    assert encoder.queries == ["install"] and encoder.texts == []  # semantic, from stored vectors only
    assert locations and health.providers["mkdocs"].health.lexical_sites == ()


async def test_a_failing_query_embedding_answers_lexically_not_empty(settings: DocumentationSettings) -> None:
    store = MemoryStore()
    lexical, _ = await search(settings, None, MemoryStore(), "install")
    encoder = WordEncoder()
    async with compose(settings, embedding=model_of(encoder), store=store) as composed:
        await composed.service.search(SearchRequest("*", limit=25))
        await settled(composed)
        encoder.fail_queries = RuntimeError("onnxruntime failed")
        response = await composed.service.search(SearchRequest("install", limit=5))

    assert [result.location for result in response.results] == lexical


class WaitsForTheLexicalPart(WordEncoder):
    """Embeds a query only once the search's lexical part has run (or gives up after a while)."""

    def __init__(self) -> None:
        super().__init__()
        self.lexical_ran = threading.Event()
        self.overlapped: list[bool] = []

    def encode(
        self, texts: Sequence[str], *, stop: threading.Event | None = None, query: bool = False
    ) -> npt.NDArray[np.float32]:
        if query:
            self.overlapped.append(self.lexical_ran.wait(5))
        return super().encode(texts, stop=stop, query=query)


async def test_the_lexical_part_is_ranked_while_the_query_is_being_embedded(
    settings: DocumentationSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query's embedding is begun before the lexical part and awaited after it: the two run side by side, and
    the answer is the one ranked with the vector."""
    encoder = WaitsForTheLexicalPart()
    async with compose(settings, embedding=model_of(encoder), store=MemoryStore()) as composed:
        await composed.service.search(SearchRequest("*", limit=25))
        await settled(composed)
        encoder.lexical_ran.set()
        expected = await composed.service.search(SearchRequest("install the agent", limit=5))
        encoder.lexical_ran.clear()
        lexical = Federation.lexical

        def lexical_then_signal(self: Federation, wanted: Query) -> Lexical | None:
            found = lexical(self, wanted)
            encoder.lexical_ran.set()
            return found

        monkeypatch.setattr(Federation, "lexical", lexical_then_signal)
        response = await composed.service.search(SearchRequest("install the agent", limit=5))

    assert encoder.overlapped == [True, True]
    assert response.results == expected.results and response.results


# -- the shared blob store


@pytest.fixture
def published_index(built_origin: Path) -> SiteIndex:
    return parse_index(SITE, (built_origin / SITE / "search" / "search_index.json").read_bytes())


@pytest.fixture
def blob_payload(azurite: Azurite, blob_container: str) -> Callable[[str], bytes | None]:
    def read(name: str) -> bytes | None:
        with BlobServiceClient.from_connection_string(azurite.connection_string) as service:
            blob = service.get_blob_client(blob_container, name)
            return bytes(blob.download_blob().readall()) if blob.exists() else None

    return read


async def test_vectors_are_written_to_the_blob_store_once_under_their_own_name_and_read_back(
    counting_store: CountingStore, published_index: SiteIndex, blob_payload: Callable[[str], bytes | None]
) -> None:
    model = model_of(WordEncoder())
    assert blob_payload(f"embeddings/{SITE}/{MODEL}.json") is None

    computed_vectors, computed = await ensure_vectors(counting_store, model, SITE, published_index)

    assert computed is True and counting_store.calls["write"] == 1
    payload = blob_payload(f"embeddings/{SITE}/{MODEL}.json")
    assert payload is not None
    in_blob = SiteVectors.loads(payload, MODEL)
    assert in_blob is not None and in_blob.matches(published_index.entries, published_index.code)
    np.testing.assert_allclose(in_blob.matrix, computed_vectors.matrix, atol=1e-3)

    again, computed = await ensure_vectors(counting_store, model, SITE, published_index)

    assert computed is False and counting_store.calls["write"] == 1
    assert np.array_equal(again.matrix, in_blob.matrix)


class CountingEncoder(WordEncoder):
    def __init__(self) -> None:
        super().__init__()
        self.texts = 0

    def encode(
        self, texts: Sequence[str], *, stop: threading.Event | None = None, query: bool = False
    ) -> npt.NDArray[np.float32]:
        self.texts += len(texts)
        return super().encode(texts, stop=stop, query=query)


async def test_vectors_record_the_index_copy_they_were_computed_from_and_older_ones_are_recorded_again(
    published_index: SiteIndex,
) -> None:
    """A reader holding the recorded copy skips hashing every text again; vectors stored without the record (by a
    version before it) are stored again with it, and nothing is embedded twice."""
    store, encoder = MemoryStore(), CountingEncoder()
    model, digest = model_of(encoder), "ab" * 32
    unrecorded = SiteVectors.compute(WordEncoder(), published_index.entries, code=published_index.code)
    await store.write(VECTORS, StoredCopy(unrecorded.dumps(MODEL), datetime.now(UTC)), expected_version=None)

    _, computed = await ensure_vectors(store, model, SITE, published_index, digest=digest)

    assert computed is False and encoder.texts == 0
    kept = await store.read(VECTORS)
    assert kept is not None
    recorded = SiteVectors.loads(kept.payload, MODEL)
    assert recorded is not None and recorded.source == embedded_from(digest) and recorded.hubness is not None
    assert (await read_stored(store, model, SITE, published_index, digest=digest)).current is not None
    # The record vouches only for that copy and this code: another copy's reader checks every text.
    other = await read_stored(store, model, SITE, published_index, digest="cd" * 32)
    assert other.current is not None  # the texts match all the same
    assert (await ensure_vectors(store, model, SITE, published_index, digest=digest))[1] is False
    assert encoder.texts == 0


async def test_an_instance_that_reads_the_vectors_for_want_of_rows_stores_the_rows_again(
    settings: DocumentationSettings,
) -> None:
    """Scan rows that are unreadable (the properties of this copy's rows, bad bytes: the warm-up, deciding from
    properties, cannot tell): an instance attaches the vectors themselves, then stores the rows without embedding
    anything; the next instance reads the rows alone, and the warm-up has nothing to store."""
    store = CountingStore(MemoryStore())
    async with registry_over(settings, store, model_of(WordEncoder())) as first:
        before = await load_embedded(first)
    existing = await store.inner.stat(SCAN)
    assert existing is not None
    garbage = StoredCopy(b"not scan rows", datetime.now(UTC), origin_etag=existing.origin_etag)
    assert await store.inner.write(SCAN, garbage, expected_version=existing.version) is not None
    encoder = CountingEncoder()

    store.names.clear()
    async with registry_over(settings, store, model_of(encoder)) as second:
        served = await load_embedded(second)
        assert second.health()[SITE].semantic == "ready" and served.ranker.semantic is not None
    assert ("read", VECTORS) in store.names and encoder.texts == 0
    assert [name for name in store.names if name == ("write", SCAN)] == [("write", SCAN)]  # once
    rows = await read_scan(store, model_of(encoder), SITE, served.index, digest=served.digest)
    assert rows is not None and rows.source == embedded_from(served.digest)

    store.names.clear()
    assert (await ensure_vectors(store, model_of(encoder), SITE, served.index, digest=served.digest))[1] is False
    assert ("write", SCAN) not in store.names

    store.names.clear()
    async with registry_over(settings, store, model_of(encoder)) as third:
        again = await load_embedded(third)
    assert ("read", VECTORS) not in store.names and encoder.texts == 0
    assert before.ranker.semantic is not None and again.ranker.semantic is not None
    np.testing.assert_array_equal(again.ranker.semantic.correction, served.ranker.semantic.correction)


async def test_a_cold_instance_reads_the_word_pieces_after_the_rows_it_searches_with(
    static_origin: StaticOrigin,
) -> None:
    """The instance that computes the vectors holds the rerank's word pieces at once and stores them beside the scan
    rows; the next one attaches the rows (searches rank by meaning from then on) and reads the pieces once every
    configured site has looked its vectors up (here every one loads; one that never does holds them `PIECES_WAIT`)."""
    published = ",".join(PUBLISHED_SITES)
    settings = fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Sites=published)
    store = CountingStore(MemoryStore())
    model_id = PieceWords.model_id
    async with registry_over(settings, store, model_of(PieceWords())) as first:
        computed = await load_embedded(first)
    assert computed.ranker is not None and computed.ranker.semantic is not None
    held = computed.ranker.semantic.pieces.value
    assert held is not None and len(held) == len(computed.index.entries)
    assert await store.inner.stat(pieces_name(SITE, model_id)) is not None

    store.names.clear()
    async with registry_over(settings, store, model_of(PieceWords())) as second:
        await asyncio.gather(*(second.get(site) for site in settings.sites))  # every site loads, as for a search
        served = await load_embedded(second)
    assert served.ranker is not None and served.ranker.semantic is not None
    read = served.ranker.semantic.pieces.value
    assert read is not None
    np.testing.assert_array_equal(read.signs, held.signs)
    reads = [name for operation, name in store.names if operation == "read"]
    assert reads.index(scan_name(SITE, model_id)) < reads.index(pieces_name(SITE, model_id))
    assert vectors_name(SITE, model_id) not in reads  # the vectors themselves are not read


class PiecesHeld(CountingStore):
    """A real store whose reads of word pieces say they were `asked` and wait until `release` is set."""

    def __init__(self, inner: CopyStore) -> None:
        super().__init__(inner)
        self.asked, self.release = asyncio.Event(), asyncio.Event()

    async def read(self, name: str) -> StoredCopy | None:
        if name.endswith(".pieces"):
            self.asked.set()
            await self.release.wait()
        return await super().read(name)


async def stored_with_word_pieces(static_origin: StaticOrigin) -> tuple[DocumentationSettings, PiecesHeld]:
    """One site's scan rows and word pieces stored by a first instance, over a store whose reads of word pieces are
    not asked for yet and let through (`release` set) until a test says otherwise."""
    settings = fixture_settings(static_origin.url, Sites=SITE)
    store = PiecesHeld(MemoryStore())
    store.release.set()
    async with registry_over(settings, store, model_of(PieceWords())) as first:
        await load_embedded(first)
    store.asked.clear()
    return settings, store


async def test_health_says_ready_once_the_rows_are_attached_while_the_word_pieces_are_still_read(
    static_origin: StaticOrigin,
) -> None:
    """A site ranks by meaning from the moment its scan rows are attached; health says so then, not once the rerank's
    word pieces (read after them) are in."""
    settings, store = await stored_with_word_pieces(static_origin)
    store.release.clear()
    async with registry_over(settings, store, model_of(PieceWords())) as second:
        loaded = await second.get(SITE)
        assert loaded is not None and loaded.ranker is not None
        await asyncio.wait_for(store.asked.wait(), 60)  # the rows are attached before the pieces are asked for
        assert loaded.ranker.semantic is not None and loaded.ranker.semantic.pieces.value is None
        assert second.health()[SITE].semantic == "ready"
        store.release.set()
        served = await load_embedded(second)
        assert served.ranker is not None and served.ranker.semantic is not None
        assert served.ranker.semantic.pieces.value is not None
        assert second.health()[SITE].semantic == "ready"


async def test_the_word_pieces_are_read_between_searches_not_beside_one(static_origin: StaticOrigin) -> None:
    """A cold instance's first search loads its sites and waits for their lookups; the rerank's word pieces are read
    once it has ended, not beside it (it ranks by meaning meanwhile, without the rerank)."""
    settings, store = await stored_with_word_pieces(static_origin)
    async with registry_over(settings, store, model_of(PieceWords())) as second:
        with second.searching():
            loaded = await second.get(SITE)
            await second.looked_up([SITE])
            for _ in range(50):  # turns of the event loop in which a read not held back would have begun
                await asyncio.sleep(0)
            assert loaded is not None and loaded.ranker is not None and loaded.ranker.semantic is not None
            assert not store.asked.is_set()
        await asyncio.wait_for(store.asked.wait(), 60)
        served = await load_embedded(second)
        assert served.ranker is not None and served.ranker.semantic is not None
        assert served.ranker.semantic.pieces.value is not None


async def test_scan_rows_of_another_copy_are_left_to_the_warm_up(published_index: SiteIndex) -> None:
    store, model, digest = MemoryStore(), model_of(WordEncoder()), "ab" * 32
    vectors = SiteVectors.compute(WordEncoder(), published_index.entries, code=published_index.code)
    other = vectors.scan_rows(len(published_index.entries), embedded_from("cd" * 32) or "")
    await store_scan(store, model, SITE, other)
    before = await store.stat(SCAN)

    assert await repair_scan(store, model, SITE, published_index, vectors, digest) is False
    after = await store.stat(SCAN)
    assert before is not None and after is not None and after.version == before.version


async def test_scan_rows_of_another_index_copy_are_never_attached(published_index: SiteIndex) -> None:
    store, model, digest = MemoryStore(), model_of(WordEncoder()), "ab" * 32
    vectors = SiteVectors.compute(WordEncoder(), published_index.entries, code=published_index.code)
    await store_scan(store, model, SITE, vectors.scan_rows(len(published_index.entries), embedded_from(digest) or ""))

    assert await read_scan(store, model, SITE, published_index, digest=digest) is not None
    assert await read_scan(store, model, SITE, published_index, digest="cd" * 32) is None
    assert await read_scan(store, model, SITE, published_index, digest=None) is None
    assert await read_scan(store, model_of(OtherWords()), SITE, published_index, digest=digest) is None


class OtherWords(WordEncoder):
    model_id = "other-words"


async def test_a_record_of_another_size_is_not_trusted(published_index: SiteIndex) -> None:
    store, model, digest = MemoryStore(), model_of(WordEncoder()), "ab" * 32
    vectors = SiteVectors.compute(WordEncoder(), published_index.entries, code=published_index.code)
    short = SiteVectors(vectors.matrix[:-1], vectors.keys[:-1])
    payload = short.dumps(MODEL, source=embedded_from(digest))
    await store.write(VECTORS, StoredCopy(payload, datetime.now(UTC)), expected_version=None)

    found = await read_stored(store, model, SITE, published_index, digest=digest)

    assert found.current is None and found.reusable is not None


class StopAfter(WordEncoder):
    """Sets `stop` once it has embedded `chunks` chunks of bulk work: a run cut short (a timeout, a recycled
    instance) at a known point."""

    def __init__(self, stop: threading.Event, chunks: int) -> None:
        super().__init__()
        self._stop, self._left = stop, chunks

    def encode(
        self, texts: Sequence[str], *, stop: threading.Event | None = None, query: bool = False
    ) -> npt.NDArray[np.float32]:
        vectors = super().encode(texts, stop=stop, query=query)
        self._left -= 1
        if self._left == 0:
            self._stop.set()
        return vectors


async def store_a_run_cut_short(store: CopyStore, index: SiteIndex) -> None:
    """Embed `index` in chunks of 8, every progress report due, and stop after two chunks: 16 rows stored."""
    stop = threading.Event()
    ticks = itertools.count(step=100.0)  # every progress report is due
    with pytest.raises(EmbeddingStopped):
        await compute_and_store(
            store,
            model_of(StopAfter(stop, chunks=2)),
            SITE,
            index,
            reuse=None,
            expected_version=None,
            stop=stop,
            clock=lambda: next(ticks),
            progress_entries=8,
        )


async def test_a_run_cut_short_stores_its_progress_and_the_next_run_embeds_only_the_rest(
    counting_store: CountingStore, published_index: SiteIndex
) -> None:
    entries, code = published_index.entries, published_index.code
    await store_a_run_cut_short(counting_store, published_index)

    stored = await counting_store.read(VECTORS)
    assert stored is not None and stored.entries == 16
    progress = SiteVectors.loads(stored.payload, MODEL)
    assert progress is not None and not progress.matches(entries, code)
    assert set(progress.keys) <= {text_key(text) for text in embedded_texts(entries, code)} and len(progress.keys) == 16

    encoder = WordEncoder()
    vectors, computed = await ensure_vectors(counting_store, model_of(encoder), SITE, published_index)

    # the first run's rows were reused
    assert computed is True and len(encoder.texts) == len(embedded_texts(entries, code)) - 16
    again = await counting_store.read(VECTORS)
    assert again is not None
    finished = SiteVectors.loads(again.payload, MODEL)
    assert finished is not None and finished.matches(entries, code)
    whole = SiteVectors.compute(WordEncoder(), entries, code=code)
    np.testing.assert_allclose(finished.matrix, whole.matrix, atol=1e-3)
    np.testing.assert_allclose(vectors.matrix, whole.matrix, atol=1e-3)


# -- end to end through the API, with the real model


async def search_when_ranked(settings: DocumentationSettings, query: str) -> tuple[list[str], set[object]]:
    """The locations the API returns for `query` once every site's embeddings are settled, and their states."""
    app = create_app(settings)
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://test") as http,
    ):
        assert (await http.get("/api/docs/search", params={"q": "*", "limit": 25})).status_code == 200
        for _ in range(1200):  # the real model embeds the fixture sites in a few seconds
            sites = (await http.get("/api/health")).json()["providers"]["mkdocs"]["sites"]
            states = {sites[site]["semantic"] for site in PUBLISHED_SITES}
            if "pending" not in states:
                break
            await asyncio.sleep(0.05)
        response = await http.get("/api/docs/search", params={"q": query, "limit": 5})
    assert response.status_code == 200, response.text
    return [result["location"] for result in response.json()["results"]], states


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

    lexical, lexical_states = await search_when_ranked(settings("false"), query)
    semantic, semantic_states = await search_when_ranked(settings("true"), query)

    assert lexical_states == {"off"} and semantic_states == {"ready"}
    assert lexical[:1] != [answer]
    assert semantic[:1] == [answer]
    assert MINILM_ID in vectors_name(SITE, MINILM_ID)
