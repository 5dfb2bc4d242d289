"""The prebuilt ranker: it ranks exactly as the ranker built from the index does, it is refused whole when any check
fails (never half-served), and the warm-up stores it where a cold instance loads it instead of building."""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from shared.cache import StoredCopy, index_name, ranking_name
from shared.compose import site_registry
from shared.fetch import OriginClient
from shared.providers.mkdocs.indexes.index import parse_index
from shared.providers.mkdocs.indexes.kinds import DEFAULT, PathWeights, configured
from shared.providers.mkdocs.lifecycle.loading import RANKING_CODE
from shared.providers.mkdocs.lifecycle.warm import warm_all
from shared.providers.mkdocs.scoring import artifact
from shared.providers.mkdocs.scoring.parameters import DEFAULT as DEFAULT_PARAMETERS
from shared.providers.mkdocs.scoring.ranking import Ranker
from shared.settings import DocumentationSettings
from tests.support.ranking import search
from tests.support.sites import PUBLISHED_SITES
from tests.support.stores import CountingStore

QUERIES = ["install the agent", "webhook retries", "metrics retention", "authentication token", "handbook chapter"]
WEIGHTS = PathWeights.parse(DEFAULT)
CUT_AT_1 = struct.pack("<qq", 0, 1)
"""The first two offsets of a column, the second inside a two-byte first character."""


def index_bytes(built_origin: Path, site: str) -> bytes:
    path = built_origin / site / "search" / "search_index.json"
    return path.read_bytes() if path.exists() else (built_origin / "search" / "search_index.json").read_bytes()


def built(built_origin: Path, site: str) -> tuple[bytes, str]:
    raw = index_bytes(built_origin, site)
    parsed = parse_index(site, raw)
    digest = hashlib.sha256(raw).hexdigest()
    return artifact.dumps(Ranker.build(parsed, WEIGHTS), parsed, index_digest=digest, code="c1"), digest


@pytest.mark.parametrize("site", ["alpha", "beta-docs", "gamma-docs"])
def test_a_loaded_artifact_ranks_exactly_as_the_built_ranker(built_origin: Path, site: str) -> None:
    raw = index_bytes(built_origin, site)
    parsed = parse_index(site, raw)
    ranker = Ranker.build(parsed, WEIGHTS)
    payload, digest = built(built_origin, site)

    index, loaded = artifact.loads(payload, site=site, index_digest=digest, code="c1", kinds=WEIGHTS)
    # A load cuts no entry whole (each page's path and title alone) and makes no lookup: a search asks for neither.
    assert all(page._cut is None for page in loaded.pages) and index._lookups is None
    assert (
        loaded.rule_numbers.tolist() == ranker.rule_numbers.tolist()
        and loaded.weighted.tolist() == ranker.weighted.tolist()
    )
    each = [WEIGHTS.rule_for(site, page.entry.page) for page in ranker.pages]  # page by page, from the entries
    assert ranker.rule_numbers.tolist() == [-1 if rule is None else rule for rule in each]

    # Searched first, while its entries are cut out only as they are asked for (`EntryColumns`).
    for query in QUERIES:
        expected = [
            (hit.entry.location, hit.score, hit.breadcrumb, hit.preview_source) for hit in search(ranker, query, 10)
        ]
        got = [(hit.entry.location, hit.score, hit.breadcrumb, hit.preview_source) for hit in search(loaded, query, 10)]
        assert got == expected, query
    for page in parsed.pages:
        assert index.sections(page.path) == parsed.sections(page.path)
        assert index.entries_of(page.path) == parsed.entries_of(page.path)
    assert [hit.entry for hit in loaded.listing()] == [hit.entry for hit in ranker.listing()]
    assert index.entries == parsed.entries and index.pages == parsed.pages and index.by_key == parsed.by_key
    assert index.by_leaf == parsed.by_leaf and index.top_dirs == parsed.top_dirs
    assert [page.entry for page in loaded.pages] == [page.entry for page in ranker.pages]
    assert index.page_chars == parsed.page_chars


def test_the_page_kind_rules_are_the_loaders_not_the_artifacts(built_origin: Path) -> None:
    payload, digest = built(built_origin, "alpha")
    none = PathWeights.parse("[]")
    _, loaded = artifact.loads(payload, site="alpha", index_digest=digest, code="c1", kinds=none)
    _, defaulted = artifact.loads(payload, site="alpha", index_digest=digest, code="c1", kinds=WEIGHTS)
    assert loaded.kinds.rules == () and defaulted.kinds.rules == WEIGHTS.rules


def test_only_a_ranker_built_with_the_default_parameters_is_prebuilt(built_origin: Path) -> None:
    """`loads` assembles every artifact with the default parameters, so one built with others would rank otherwise."""
    parsed = parse_index("alpha", index_bytes(built_origin, "alpha"))
    other = Ranker.build(parsed, WEIGHTS, replace(DEFAULT_PARAMETERS, k1=2.0))
    with pytest.raises(ValueError, match="default ranking parameters"):
        artifact.dumps(other, parsed, index_digest="0" * 64, code="c1")


def manifest(payload: bytes) -> dict[str, Any]:
    _, length = struct.unpack_from("<8sI", payload)
    loaded: dict[str, Any] = json.loads(payload[12 : 12 + length])
    return loaded


def rechecksummed(body: bytes) -> bytes:
    return body + hashlib.sha256(body).digest()


def with_manifest(payload: bytes, change: dict[str, object]) -> bytes:
    """The artifact with its manifest edited (and the checksum made to fit again), as an attacker could write it."""
    magic, length = struct.unpack_from("<8sI", payload)
    manifest = json.loads(payload[12 : 12 + length])
    for dotted, value in change.items():
        node = manifest
        *path, last = dotted.split("/")
        for part in path:
            node = node[part]
        node[last] = value
    head = json.dumps(manifest).encode()
    head += b" " * ((-(12 + len(head))) % 8)
    return rechecksummed(struct.pack("<8sI", magic, len(head)) + head + payload[12 + length : -32])


def with_stream(payload: bytes, stream: bytes) -> bytes:
    """The artifact with other arrays (and the checksum made to fit again)."""
    _, length = struct.unpack_from("<8sI", payload)
    return rechecksummed(payload[: 12 + length] + stream)


def with_arrays(payload: bytes, edit: Callable[[bytearray], bytes]) -> bytes:
    """The artifact with its arrays edited."""
    _, length = struct.unpack_from("<8sI", payload)
    return with_stream(payload, edit(bytearray(payload[12 + length : -32])))


def with_bytes(payload: bytes, array: str, data: bytes) -> bytes:
    """The artifact with the start of one array overwritten."""
    _, length = struct.unpack_from("<8sI", payload)
    start = json.loads(payload[12 : 12 + length])["arrays"][array]["offset"]

    def overwritten(arrays: bytearray) -> bytes:
        arrays[start : start + len(data)] = data
        return bytes(arrays)

    return with_arrays(payload, overwritten)


def test_columns_are_trusted_once_the_checksum_matched_and_a_bad_one_never_raises(built_origin: Path) -> None:
    """The SHA-256 is the one check of a payload's bytes: a column that matches it is not decoded whole again. Bytes
    no `dumps` writes (not UTF-8, a cut inside a character) still load, and an entry cut from them decodes with
    U+FFFD, never an error a search would answer with."""
    payload, digest = built(built_origin, "alpha")
    for candidate in (
        with_bytes(payload, "entries.title", b"\xff\xfe"),
        with_bytes(with_bytes(payload, "entries.text", "\u00e9".encode() * 8), "entries.text.offsets", CUT_AT_1),
    ):
        index, _ = artifact.loads(candidate, site="alpha", index_digest=digest, code="c1", kinds=WEIGHTS)
        assert all(isinstance(entry.title, str) and isinstance(entry.text, str) for entry in index.entries)
        assert "\ufffd" in index.entries[0].title + index.entries[0].text


def test_anything_but_this_index_and_this_codes_artifact_is_refused(built_origin: Path) -> None:
    payload, digest = built(built_origin, "alpha")
    flipped = bytearray(payload)
    flipped[len(payload) // 2] ^= 0xFF
    cases = {
        "a flipped byte": (bytes(flipped), digest, "c1"),
        "truncated": (payload[:-100], digest, "c1"),
        "another index version": (payload, "0" * 64, "c1"),
        "other code": (payload, digest, "c2"),
        "not an artifact": (rechecksummed(b"{" * 64), digest, "c1"),
        "an array outside the file": (with_manifest(payload, {"arrays/entries.boost/offset": 10**9}), digest, "c1"),
        "an object array": (with_manifest(payload, {"arrays/entries.boost/dtype": "|O"}), digest, "c1"),
        "another site": (with_manifest(payload, {"site": "beta-docs"}), digest, "c1"),
        "postings past the pages": (with_manifest(payload, {"scalars/titles.documents": 1}), digest, "c1"),
        "an undecodable vocabulary": (with_bytes(payload, "vocabulary.terms", b"\xff\xfe"), digest, "c1"),
        "a column of another length": (with_manifest(payload, {"arrays/entries.boost/shape": [1]}), digest, "c1"),
        "an unknown type": (with_manifest(payload, {"arrays/entries.boost/dtype": "nonsense"}), digest, "c1"),
        "no scalars": (with_manifest(payload, {"scalars": {}}), digest, "c1"),
        "arrays past their stated size": (with_arrays(payload, lambda arrays: bytes(arrays) + b"\0" * 8), digest, "c1"),
        "arrays short of it": (with_arrays(payload, lambda arrays: bytes(arrays[:-8])), digest, "c1"),
        "a posting naming a value that is not there": (
            with_bytes(payload, "section_view.codes", b"\xff\xff"),
            digest,
            "c1",
        ),
        "a page represented by an entry not its own": (
            with_bytes(payload, "pages.heads", struct.pack("<i", manifest(payload)["entries"] - 1)),
            digest,
            "c1",
        ),
        "a page past the entries": (with_bytes(payload, "pages.sections", struct.pack("<i", 10**6)), digest, "c1"),
        "pages of no entries": (with_bytes(payload, "pages.offsets", struct.pack("<qq", 0, 0)), digest, "c1"),
        "a page length missing": (with_manifest(payload, {"arrays/pages.chars/shape": [1]}), digest, "c1"),
    }
    for case, (candidate, index_digest, code) in cases.items():
        with pytest.raises(artifact.ArtifactError):
            artifact.loads(candidate, site="alpha", index_digest=index_digest, code=code, kinds=WEIGHTS)
            pytest.fail(f"{case}: loaded")


async def test_the_warm_up_prebuilds_and_a_cold_instance_loads_it_instead_of_building(
    blob_settings: DocumentationSettings, counting_store: CountingStore
) -> None:
    first = await warm_all(blob_settings, counting_store)
    again = await warm_all(blob_settings, counting_store)
    assert {str(first[site].ranker) for site in PUBLISHED_SITES} == {"built"}
    assert {str(again[site].ranker) for site in PUBLISHED_SITES} == {"current"}  # one per index version

    async with OriginClient(blob_settings.origin) as client:
        cold = site_registry(blob_settings, client, counting_store)
        loaded = await cold.get("alpha")
        report = cold.health()["alpha"]
        await cold.aclose()
    assert loaded is not None and loaded.prebuilt and str(report.ranker) == "prebuilt"

    built_here = Ranker.build(loaded.index, configured(blob_settings.search.path_weights, tuple(blob_settings.sites)))
    for query in QUERIES:
        assert [h.entry.location for h in search(loaded.ranker, query, 10)] == [
            h.entry.location for h in search(built_here, query, 10)
        ]


async def test_a_stored_artifact_that_fails_its_check_is_never_served_the_instance_builds_its_own(
    blob_settings: DocumentationSettings, counting_store: CountingStore
) -> None:
    await warm_all(blob_settings, counting_store)
    stored = await counting_store.inner.read(ranking_name("alpha"))
    assert stored is not None
    broken = StoredCopy(stored.payload[:-1] + b"\0", stored.fetched_at, origin_etag=stored.origin_etag)
    assert await counting_store.inner.write(ranking_name("alpha"), broken, expected_version=stored.version)

    async with OriginClient(blob_settings.origin) as client:
        cold = site_registry(blob_settings, client, counting_store)
        loaded = await cold.get("alpha")
        await cold.aclose()
    assert loaded is not None and not loaded.prebuilt and loaded.source == "cache"
    assert search(loaded.ranker, "install the agent", 3)
    index = await counting_store.inner.stat(index_name(blob_settings.cache_file_name_template, "alpha"))
    assert index is not None and stored.origin_etag == f"{index.digest}/{RANKING_CODE}"
