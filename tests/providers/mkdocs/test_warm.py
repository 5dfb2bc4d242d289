"""The warm-up against the MkDocs-built origin and Azurite: 200, 304 and failure outcomes, and the CLI end to end."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import httpx
import numpy as np
from azure.storage.blob import BlobServiceClient

from shared.api import create_app
from shared.cache import (
    MemoryStore,
    StoredCopy,
    code_ranking_name,
    index_name,
    missing_name,
    open_store,
    ranking_name,
    scan_name,
    vectors_name,
)
from shared.cli import _needs_attention
from shared.compose import compose
from shared.embedding import EmbeddingModel
from shared.errors import StoreError
from shared.fetch import OriginClient
from shared.models import SearchKind
from shared.providers.mkdocs.codeblocks import languages
from shared.providers.mkdocs.codeblocks.languages import fences_name
from shared.providers.mkdocs.indexes.index import parse_index
from shared.providers.mkdocs.lifecycle.outcomes import Outcome, SiteOutcome, Step, StepState
from shared.providers.mkdocs.lifecycle.warm import warm_all
from shared.providers.mkdocs.provider import MkDocsProvider
from shared.providers.mkdocs.scoring.quantized import quantize
from shared.providers.mkdocs.scoring.vectors import ScanRows, SiteVectors
from shared.requests import SearchRequest
from shared.settings import DocumentationSettings
from tests.support.encoders import WordEncoder, model_of
from tests.support.sites import (
    PHANTOM_PAGE,
    PUBLISHED_SITES,
    ROOT_INDEX_PATH,
    ROOTED_OVERRIDE,
    UNPUBLISHED_SITE,
    fixture_env,
    fixture_settings,
)
from tests.support.stores import CountingStore, closed_port
from tests.support.uvicorn_server import UvicornServer
from tools.azurite import Azurite
from tools.static_origin import StaticOrigin

ROOT = Path(__file__).resolve().parents[3]


def index_path(site: str) -> str:
    return ROOT_INDEX_PATH if site == "rooted-docs" else f"/{site}/search/search_index.json"


def blobs(azurite: Azurite, container: str) -> dict[str, bytes]:
    with BlobServiceClient.from_connection_string(azurite.connection_string) as service:
        client = service.get_container_client(container)
        if not client.exists():
            return {}
        return {blob.name: client.download_blob(blob.name).readall() for blob in client.list_blobs()}


def blob_name(site: str) -> str:
    return index_name("{site}-docs-search-index.json", site)


def stored_names(*, embeddings: str | None = None) -> set[str]:
    """What a warm-up leaves in the container: each published site's index, prebuilt ranker and its code part and
    missing-pages record (and its embeddings from the model `embeddings`, and their scan rows)."""
    names = {blob_name(site) for site in PUBLISHED_SITES} | {missing_name(site) for site in PUBLISHED_SITES}
    names |= {ranking_name(site) for site in PUBLISHED_SITES} | {code_ranking_name(site) for site in PUBLISHED_SITES}
    names |= {fences_name(site) for site in PUBLISHED_SITES}  # every fixture site has code blocks
    if embeddings is not None:
        names |= {vectors_name(site, embeddings) for site in PUBLISHED_SITES}
        names |= {scan_name(site, embeddings) for site in PUBLISHED_SITES}
    return names


async def test_a_first_warm_up_writes_every_published_site_and_reports_the_unpublished_one(
    blob_settings: DocumentationSettings,
    counting_store: CountingStore,
    azurite: Azurite,
    blob_container: str,
    built_origin: Path,
) -> None:
    report = await warm_all(blob_settings, counting_store)

    assert {site: outcome.outcome for site, outcome in report.items()} == {
        **dict.fromkeys(PUBLISHED_SITES, Outcome.CHANGED),
        UNPUBLISHED_SITE: Outcome.FAILED,
    }
    assert report[UNPUBLISHED_SITE].status == 404 and "404" in report[UNPUBLISHED_SITE].reason
    assert {site: str(report[site].pages) for site in PUBLISHED_SITES} == {
        **dict.fromkeys(PUBLISHED_SITES, "checked: 0 missing"),
        "alpha": "checked: 1 missing",  # the phantom entry
    }
    stored = blobs(azurite, blob_container)
    assert set(stored) == stored_names()
    assert stored[blob_name("alpha")] == (built_origin / "alpha" / "search" / "search_index.json").read_bytes()
    stat = await counting_store.inner.stat(blob_name("alpha"))
    assert stat is not None and stat.origin_etag and stat.complete


async def test_a_304_only_refreshes_the_metadata(
    blob_settings: DocumentationSettings,
    counting_store: CountingStore,
    static_origin: StaticOrigin,
    azurite: Azurite,
    blob_container: str,
) -> None:
    await warm_all(blob_settings, counting_store)
    before = {site: await counting_store.inner.stat(blob_name(site)) for site in PUBLISHED_SITES}
    payloads = blobs(azurite, blob_container)
    static_origin.clear_requests()
    counting_store.calls.clear()
    counting_store.names.clear()

    report = await warm_all(blob_settings, counting_store)
    downloaded = [name for operation, name in counting_store.names if operation == "read"]

    assert all(report[site].outcome == Outcome.UNCHANGED for site in PUBLISHED_SITES)
    assert str(report["alpha"].pages) == "current: 1 missing"  # complete: only the hidden page is asked again
    hidden = {f"/alpha/{PHANTOM_PAGE}/", f"/alpha/{PHANTOM_PAGE}.md"}
    unpublished = {  # nor a Zensical index, nor mike's versions
        index_path(UNPUBLISHED_SITE),
        f"/{UNPUBLISHED_SITE}/search.json",
        f"/{UNPUBLISHED_SITE}/versions.json",
    }
    assert set(static_origin.paths()) - hidden == {index_path(site) for site in PUBLISHED_SITES} | unpublished
    for site in PUBLISHED_SITES:
        [request] = static_origin.requests_for(index_path(site))
        earlier = before[site]
        assert earlier is not None and request.header("If-None-Match") == earlier.origin_etag
        assert request.status == 304
        after = await counting_store.inner.stat(blob_name(site))
        assert after is not None and after.fetched_at > earlier.fetched_at and after.version != earlier.version
    assert counting_store.calls["write"] == 0 and counting_store.calls["touch"] == len(PUBLISHED_SITES)
    # Properties only: no index is downloaded to decide, only each site's small missing-pages record.
    assert sorted(downloaded) == sorted(missing_name(site) for site in PUBLISHED_SITES)
    assert blobs(azurite, blob_container) == payloads


async def test_changed_origin_content_is_validated_and_written(
    blob_settings: DocumentationSettings,
    counting_store: CountingStore,
    static_origin: StaticOrigin,
    azurite: Azurite,
    blob_container: str,
) -> None:
    await warm_all(blob_settings, counting_store)
    changed = json.dumps({"docs": [{"location": "", "title": "Home", "text": "<p>Rewritten.</p>"}]}).encode()
    static_origin.respond(index_path("beta-docs"), body=changed, content_type="application/json")

    before = datetime.now(UTC).replace(microsecond=0)
    report = await warm_all(blob_settings, counting_store)

    beta = report["beta-docs"]
    assert beta.fetched_at is not None and beta.fetched_at >= before  # the new version's, as the stored copy records it
    assert beta.model_copy(update={"fetched_at": None}) == SiteOutcome(
        outcome=Outcome.CHANGED,
        entries=1,
        ranker=Step(state=StepState.BUILT),
        pages=Step(state=StepState.CHECKED, detail="0 missing"),
        code=Step(state=StepState.CHECKED, detail="0 code blocks on 0 pages"),
    )
    assert report["alpha"].outcome is Outcome.UNCHANGED and report["alpha"].fetched_at is not None
    assert blobs(azurite, blob_container)[blob_name("beta-docs")] == changed


async def test_one_sites_failure_never_stops_the_others_and_bad_content_is_never_written(
    blob_settings: DocumentationSettings,
    counting_store: CountingStore,
    static_origin: StaticOrigin,
    azurite: Azurite,
    blob_container: str,
) -> None:
    await warm_all(blob_settings, counting_store)
    good = blobs(azurite, blob_container)
    static_origin.fail(index_path("alpha"), 500)
    static_origin.respond(index_path("beta-docs"), body=b"<html>maintenance</html>", content_type="text/html")
    static_origin.respond(index_path("gamma-docs"), body=b'{"docs": []}', content_type="application/json")

    report = await warm_all(blob_settings, counting_store)

    assert report["alpha"].outcome == Outcome.FAILED and "HTTP 500" in report["alpha"].reason
    assert report["beta-docs"].outcome == Outcome.FAILED and "not JSON" in report["beta-docs"].reason
    assert report["gamma-docs"].outcome == Outcome.FAILED and "no entries" in report["gamma-docs"].reason
    assert report["rooted-docs"].outcome == Outcome.UNCHANGED
    assert blobs(azurite, blob_container) == good


async def test_a_blob_not_written_by_this_service_is_fetched_whole_and_replaced(
    blob_settings: DocumentationSettings,
    counting_store: CountingStore,
    static_origin: StaticOrigin,
    azurite: Azurite,
    blob_container: str,
    built_origin: Path,
) -> None:
    with BlobServiceClient.from_connection_string(azurite.connection_string) as service:
        service.create_container(blob_container)
        service.get_blob_client(blob_container, blob_name("alpha")).upload_blob(
            b"garbage", metadata={"originetag": '"whatever"'}
        )

    report = await warm_all(blob_settings, counting_store)

    assert report["alpha"].outcome == Outcome.CHANGED
    assert static_origin.requests_for(index_path("alpha"))[0].header("If-None-Match") is None
    published = (built_origin / "alpha" / "search" / "search_index.json").read_bytes()
    assert blobs(azurite, blob_container)[blob_name("alpha")] == published


async def test_unreachable_storage_fails_every_site_without_fetching(static_origin: StaticOrigin) -> None:
    from tools.azurite import connection_string

    unreachable = connection_string(f"http://127.0.0.1:{closed_port()}/devstoreaccount1")
    blob_settings = fixture_settings(static_origin.url, {"AzureWebJobsStorage": unreachable})
    counting_store = open_store(blob_settings)
    try:
        async with OriginClient(blob_settings.origin) as client:
            report = await warm_all(blob_settings, counting_store, client=client)
    finally:
        await counting_store.aclose()

    assert all(outcome.outcome == Outcome.FAILED for outcome in report.values())
    assert all("cache storage unavailable" in outcome.reason for outcome in report.values())
    assert static_origin.requests == []


def test_cli_warm_leaves_one_blob_per_site_and_serve_answers_from_them_with_the_origin_down(
    static_origin: StaticOrigin, azurite: Azurite, blob_container: str
) -> None:
    env = {
        **os.environ,
        **fixture_env(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Cache__Container=blob_container),
        "AzureWebJobsStorage": azurite.connection_string,
    }
    warm = subprocess.run(
        [sys.executable, "-m", "shared", "warm"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )

    assert warm.returncode == 0, warm.stderr
    printed = json.loads(warm.stdout)
    assert printed["cache"]["kind"] == "blob" and printed["cache"]["status"] == "ok"
    assert set(blobs(azurite, blob_container)) == stored_names()

    static_origin.stop()
    blob_settings = fixture_settings(
        static_origin.url,
        {"AzureWebJobsStorage": azurite.connection_string},
        SearchIndexOverrides=ROOTED_OVERRIDE,
        Cache__Container=blob_container,
    )
    with UvicornServer(create_app(blob_settings)) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        for site in PUBLISHED_SITES:
            search = http.get("/api/docs/search", params={"q": "*", "site": site})
            assert search.status_code == 200, search.text
            results = search.json()["results"]
            assert results and {result["site"] for result in results} == {site}
            location = next(result["location"] for result in results if result["location"])
            got = http.get("/api/docs/get", params={"location": location})
            # The origin is down: the page is rebuilt from the index entries held in the blob.
            assert got.status_code == 200, got.text
            document = got.json()
            assert document["resolution"]["site"] == site and document["resolution"]["reason"] == "resolved"
            assert "fallback: search-index" in document["content"]
            assert document["content"].split("---\n", 2)[2].strip()
        everywhere = http.get("/api/docs/search", params={"q": "*", "limit": 25})
        health = http.get("/api/health").json()
    assert everywhere.status_code == 200
    assert {result["site"] for result in everywhere.json()["results"]} == set(PUBLISHED_SITES)
    sites = health["providers"]["mkdocs"]["sites"]
    assert {sites[site]["source"] for site in PUBLISHED_SITES} == {"cache"}
    assert sites[UNPUBLISHED_SITE]["state"] == "failed"


async def test_with_semantic_matching_the_warm_up_stores_embeddings_once_per_index_version(
    blob_settings: DocumentationSettings, azurite: Azurite, blob_container: str
) -> None:
    settings, model = blob_settings, model_of(WordEncoder())
    store = CountingStore(open_store(settings))
    try:
        first = await warm_all(settings, store, embedding=model)
        store.names.clear()
        second = await warm_all(settings, store, embedding=model)
        # Decided from properties: neither the vectors nor their scan rows are downloaded again.
        assert not [name for op, name in store.names if op == "read" and name.startswith("embeddings/")]
        index = await store.read(blob_name("alpha"))
        vectors = await store.read(vectors_name("alpha", model.model_id))
        scan = await store.read(scan_name("alpha", model.model_id))
    finally:
        await store.aclose()

    assert {str(first[site].semantic) for site in PUBLISHED_SITES} == {"computed"}
    assert {str(second[site].semantic) for site in PUBLISHED_SITES} == {"current"}
    assert first[UNPUBLISHED_SITE].semantic is None  # no index, nothing to embed
    assert set(blobs(azurite, blob_container)) == stored_names(embeddings=model.model_id)
    assert vectors_name("alpha", model.model_id) == f"embeddings/alpha/{model.model_id}.json"
    assert index is not None and vectors is not None
    parsed = parse_index("alpha", index.payload)
    stored = SiteVectors.loads(vectors.payload, model.model_id)
    assert stored is not None and stored.matches(parsed.entries, parsed.code)
    assert scan is not None and scan.origin_etag == stored.source
    rows = ScanRows.loads(scan.payload, model.model_id)
    assert rows is not None and rows.source == stored.source and stored.hubness is not None
    np.testing.assert_array_equal(rows.hubness, stored.hubness)
    np.testing.assert_array_equal(rows.quantized.columns, quantize(stored.matrix).columns)


async def test_an_embedding_failure_is_reported_per_site_and_never_stops_the_warm_up(
    blob_settings: DocumentationSettings, azurite: Azurite, blob_container: str
) -> None:
    settings, encoder = blob_settings, WordEncoder()
    encoder.fail_bulk = RuntimeError("onnxruntime failed")
    store = open_store(settings)
    try:
        report = await warm_all(settings, store, embedding=model_of(encoder))
    finally:
        await store.aclose()

    assert {site: report[site].outcome for site in PUBLISHED_SITES} == dict.fromkeys(PUBLISHED_SITES, Outcome.CHANGED)
    assert {str(report[site].semantic) for site in PUBLISHED_SITES} == {"failed: RuntimeError"}
    assert set(blobs(azurite, blob_container)) == stored_names()


async def test_without_shared_storage_the_warm_up_does_not_embed(static_origin: StaticOrigin) -> None:
    settings = fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE)
    report = await warm_all(settings, MemoryStore(), embedding=model_of(WordEncoder()))
    assert {str(report[site].semantic) for site in PUBLISHED_SITES} == {"skipped: no shared storage to keep them in"}


class RefusingVectors(CountingStore):
    """Azurite, except that every write of embeddings is refused (a full or read-only container)."""

    async def write(self, name: str, entry: StoredCopy, *, expected_version: str | None) -> str | None:
        if name.startswith("embeddings/"):
            raise StoreError("storage refused the write")
        return await super().write(name, entry, expected_version=expected_version)


async def test_embeddings_that_could_not_be_stored_fail_their_site_in_the_report(
    blob_settings: DocumentationSettings, azurite: Azurite, blob_container: str
) -> None:
    store = RefusingVectors(open_store(blob_settings))
    try:
        report = await warm_all(blob_settings, store, embedding=model_of(WordEncoder()))
    finally:
        await store.aclose()
    assert {report[site].outcome for site in PUBLISHED_SITES} == {Outcome.CHANGED}
    assert {str(report[site].semantic) for site in PUBLISHED_SITES} == {
        "failed: the computed embeddings could not be stored"
    }
    assert _needs_attention(report["alpha"])  # so `python -m shared warm` exits non-zero, naming the sites


async def test_the_warm_up_stores_the_code_fences_once_per_index_version_for_every_instance(
    blob_settings: DocumentationSettings, azurite: Azurite, blob_container: str
) -> None:
    store = CountingStore(open_store(blob_settings))
    try:
        first = await warm_all(blob_settings, store)
        store.names.clear()
        second = await warm_all(blob_settings, store)
        assert not [name for op, name in store.names if op == "read" and name.endswith("/code/fences.json")]
        index = await store.read(blob_name("gamma-docs"))
        async with compose(blob_settings, embedding=None, store=store) as composed:
            provider = next(p for p in composed.service.providers if isinstance(p, MkDocsProvider))
            await provider.search(SearchRequest("pager receiver", limit=5, site="gamma-docs", kind=SearchKind.CODE))
            await provider.code_fences_read("gamma-docs")
            found = (
                await provider.search(SearchRequest("pager receiver", limit=5, site="gamma-docs", kind=SearchKind.CODE))
            ).results
    finally:
        await store.aclose()

    assert {site: str(first[site].code).split(":")[0] for site in PUBLISHED_SITES} == dict.fromkeys(
        PUBLISHED_SITES, "checked"
    )
    assert str(first["gamma-docs"].code) == "checked: 17 code blocks on 3 pages"
    assert {str(second[site].code) for site in PUBLISHED_SITES} == {"current"}
    assert first[UNPUBLISHED_SITE].code is None
    assert index is not None
    stored = languages.loads(blobs(azurite, blob_container)[fences_name("gamma-docs")], index.digest)
    assert stored is not None and [fence.language for fence in stored["tutorials/first-steps/"]] == [
        "yaml",
        "terraform",
        "",
    ]
    receiver = next(result for result in found if result.code is not None and "gamma_receiver" in result.code.text)
    assert receiver.code is not None and receiver.code.language == "terraform" and receiver.language_guessed is False


async def code_answers(settings: DocumentationSettings, store: CountingStore, model: EmbeddingModel) -> list[object]:
    """A fresh instance over `store`, once every site ranks by meaning: a page search, then code searches; each code
    answer as (location, score, code). `store.names` notes when the page search was done."""
    async with compose(settings, embedding=model, store=store) as composed:
        provider = next(p for p in composed.service.providers if isinstance(p, MkDocsProvider))
        for _ in range(600):
            await provider.search(SearchRequest("pager receiver", limit=5))
            health = composed.health().model_dump(mode="json", by_alias=True)
            sites = health["providers"]["mkdocs"]["sites"]
            published = [sites[site] for site in PUBLISHED_SITES]
            if all(site["state"] == "loaded" and site.get("ranking") == "semantic" for site in published):
                break
            await asyncio.sleep(0.05)
        store.names.append(("mark", "page searches done"))
        answers = []
        for question in ("pager receiver", "terraform resource for the pager receiver", "helm values"):
            found = await provider.search(SearchRequest(question, limit=5, kind=SearchKind.CODE))
            answers.append([(r.location, r.score, r.code.text if r.code else None) for r in found.results])
    return answers


async def test_a_cold_instance_reads_a_sites_code_side_on_its_first_code_search_not_before(
    blob_settings: DocumentationSettings,
) -> None:
    """Over warm storage, page searches read no code part and no code rows; the first code search reads each site's
    once (the `tools/capture.py` captures show its answers are those of an instance that held everything from the
    start). Without its code part, a site's blocks are read from its stored index copy and answer the same."""
    model = model_of(WordEncoder())
    store = CountingStore(open_store(blob_settings))
    try:
        await warm_all(blob_settings, store, embedding=model)
        store.names.clear()
        cold = await code_answers(blob_settings, store, model)
        mark = store.names.index(("mark", "page searches done"))
        before, after = store.names[:mark], store.names[mark:]
        assert not [name for _, name in before if name.endswith("/ranking/code.bin")]
        assert not [name for op, name in before if op == "read" and name.startswith("embeddings/") and ".json" in name]
        scans = [name for op, name in before if op == "read" and name.endswith(".scan")]  # beside the index, once
        published = sorted(scan_name(site, model.model_id) for site in PUBLISHED_SITES)
        assert sorted(scans) == sorted([*published, scan_name(UNPUBLISHED_SITE, model.model_id)])
        parts = sorted(name for op, name in after if op == "read" and name.endswith("/ranking/code.bin"))
        assert parts == sorted(code_ranking_name(site) for site in PUBLISHED_SITES)
        scans = [name for op, name in after if op == "read" and name.endswith(".scan")]
        assert sorted(scans) == sorted(scan_name(site, model.model_id) for site in PUBLISHED_SITES)

        part = await store.inner.read(code_ranking_name("gamma-docs"))
        assert part is not None
        broken = StoredCopy.derived(b"broken", part.fetched_at, built_from=part.origin_etag or "")
        assert await store.inner.write(code_ranking_name("gamma-docs"), broken, expected_version=part.version)
        without_part = await code_answers(blob_settings, store, model)
    finally:
        await store.aclose()
    assert cold[0] and cold == without_part
