"""Entry and page-outline embeddings of an index (stored form, reuse, validation) and the ranker's semantic credit.

The ranker's tests run the real MiniLM model, since what they prove is that meaning connects a question to its page;
the stored form's tests use the small word encoder.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from shared.embedding import MINILM_ID, MiniLM
from shared.providers.mkdocs.indexes.index import IndexEntry, SiteIndex
from shared.providers.mkdocs.indexes.kinds import PathWeights
from shared.providers.mkdocs.scoring.parameters import DEFAULT, RankingParameters
from shared.providers.mkdocs.scoring.pieces import PIECES, pieces_dumps, pieces_loads
from shared.providers.mkdocs.scoring.quantized import split_query
from shared.providers.mkdocs.scoring.ranking import Ranker
from shared.providers.mkdocs.scoring.text import analyze_query, identifier_share
from shared.providers.mkdocs.scoring.vectors import (
    FORMAT,
    OUTLINE_WORDS,
    SCAN_FORMAT,
    ScanRows,
    SiteVectors,
    embedded_texts,
    entry_text,
    neighbour_similarity,
    page_outline,
    text_key,
)
from tests.support.encoders import WordEncoder
from tests.support.pages import FILLER, page, ranker
from tests.support.ranking import search

MODEL = MINILM_ID
FILLER_WORDS = " ".join(f"word{number}" for number in range(40))
SYNC_WINDOWS = "Deny windows block deployments at scheduled times, such as a change freeze at the end of the year."
HOLIDAY_FREEZE = "forbid pushing updates over the holidays"
"""Means what SYNC_WINDOWS says, in words none of which (stemmed) it uses."""
OFF_TOPIC = "bake sourdough bread with a starter"


def entries_of(*pages: list[IndexEntry]) -> list[IndexEntry]:
    return [entry for entries in pages for entry in entries]


def semantic_ranker(encoder: MiniLM, *pages: list[IndexEntry], kinds: PathWeights | None = None) -> Ranker:
    index = ranker(*pages, kinds=kinds)
    index.attach(SiteVectors.compute(encoder, index.entries))
    return index


def reranked(encoder: MiniLM, index: Ranker, parameters: RankingParameters) -> Ranker:
    """The same site ranked with other parameters, with the same embeddings as `index` (computed again: the model is
    deterministic, and a ranker keeps only its int8 rows)."""
    again = Ranker.build(SiteIndex.build("docs", index.entries), index.kinds, parameters)
    again.attach(SiteVectors.compute(encoder, index.entries))
    return again


@pytest.fixture(scope="module")
def encoder() -> MiniLM:
    return MiniLM.load()


def unit(encoder: MiniLM, text: str) -> npt.NDArray[np.float32]:
    vector: npt.NDArray[np.float32] = encoder.encode([text])[0]
    return vector


# -- stored vectors


PAGES = entries_of(
    page("sync-windows/", "Sync windows", SYNC_WINDOWS), page("retries/", "Retries", "Failed syncs are retried.")
)


@pytest.fixture(scope="module")
def vectors(encoder: MiniLM) -> SiteVectors:
    return SiteVectors.compute(encoder, PAGES)


def test_vectors_round_trip_through_their_stored_form(vectors: SiteVectors) -> None:
    loaded = SiteVectors.loads(vectors.dumps(MODEL), MODEL)
    assert loaded is not None and loaded.keys == vectors.keys and loaded.matches(PAGES)
    assert loaded.matrix.shape == (2 + 2, 384) and loaded.matrix.dtype == np.float32  # two entries, two outlines
    np.testing.assert_allclose(loaded.matrix, vectors.matrix, atol=1e-3)  # stored as float16
    assert not np.array_equal(loaded.matrix, np.zeros_like(loaded.matrix))
    assert vectors.pieces is not None and loaded.pieces is not None  # MiniLM gives its word pieces' signs
    np.testing.assert_array_equal(loaded.pieces.signs, vectors.pieces.signs)
    np.testing.assert_array_equal(loaded.pieces.counts, vectors.pieces.counts)
    held = vectors.scan_rows(2, "abc/def")
    assert held.pieces is not None and len(held.pieces) == 2  # the entries' only, held beside the rows
    np.testing.assert_array_equal(held.pieces.signs, vectors.pieces.signs[:2])
    scan = ScanRows.loads(held.dumps(MODEL), MODEL)
    assert scan is not None and scan.pieces is None  # stored in their own blob, read after the rows
    stored = pieces_loads(pieces_dumps(held.pieces, MODEL, "abc/def"), MODEL)
    assert stored is not None and stored[1] == "abc/def"
    np.testing.assert_array_equal(stored[0].signs, held.pieces.signs)
    np.testing.assert_array_equal(stored[0].counts, held.pieces.counts)


@pytest.mark.parametrize(
    ("edit", "cut"),
    [
        ({"model": "all-mpnet-base-v2"}, 0),
        ({"format": 2}, 0),
        ({"rows": 3}, 0),
        ({"pieces": PIECES // 2}, 0),
        ({"source": None}, 0),
        ({}, 1),
    ],
    ids=["another model", "another format", "more rows", "other word pieces", "no source", "short"],
)
def test_word_pieces_in_another_layout_or_that_do_not_add_up_are_refused(
    vectors: SiteVectors, edit: dict[str, Any], cut: int
) -> None:
    held = vectors.scan_rows(2, "abc/def").pieces
    assert held is not None
    header, rest = _parts(pieces_dumps(held, MODEL, "abc/def"), PIECES_MAGIC)
    assert pieces_loads(_stored(header, rest, PIECES_MAGIC), MODEL) is not None
    assert pieces_loads(_stored(header | edit, rest[: len(rest) - cut], PIECES_MAGIC), MODEL) is None
    counted = bytearray(rest)
    counted[-1] = PIECES + 1  # a count above the word pieces a row keeps
    assert pieces_loads(_stored(header, bytes(counted), PIECES_MAGIC), MODEL) is None


def test_vectors_without_word_pieces_round_trip_without_them() -> None:
    computed = SiteVectors.compute(WordEncoder(), PAGES)
    assert computed.pieces is None
    loaded = SiteVectors.loads(computed.dumps(MODEL), MODEL)
    assert loaded is not None and loaded.pieces is None
    scan = ScanRows.loads(computed.scan_rows(2, "abc/def").dumps(MODEL), MODEL)
    assert scan is not None and scan.pieces is None


def test_reused_rows_keep_their_word_pieces_and_rows_without_them_are_embedded_again(encoder: MiniLM) -> None:
    computed = SiteVectors.compute(encoder, PAGES)
    assert computed.pieces is not None
    again = SiteVectors.compute(encoder, PAGES, reuse=computed)
    assert again.pieces is not None
    np.testing.assert_array_equal(again.pieces.signs, computed.pieces.signs)
    without = replace(computed, pieces=None)  # stored by an encoder that gave none: nothing to lend them
    recomputed = SiteVectors.compute(encoder, PAGES, reuse=without)
    assert recomputed.pieces is not None and recomputed.pieces.counts.tolist() == computed.pieces.counts.tolist()


def test_complete_vectors_carry_their_hubness_so_attaching_them_skips_the_all_pairs_pass(encoder: MiniLM) -> None:
    entries = entries_of(
        page("sync-windows/", "Sync windows", SYNC_WINDOWS),
        page("retries/", "Retries", "Failed syncs are retried with backoff."),
        page("bread/", "Bread", "Bake sourdough bread with a starter."),
    )
    computed = SiteVectors.compute(encoder, entries)
    stored = SiteVectors.loads(computed.dumps(MODEL, len(entries)), MODEL)
    bare = SiteVectors.loads(computed.dumps(MODEL), MODEL)
    assert stored is not None and bare is not None and bare.hubness is None
    # Computed from the float16 rows it stores: exactly what an instance loading them would compute.
    assert stored.hubness is not None
    np.testing.assert_array_equal(
        stored.hubness, neighbour_similarity(bare.matrix[: len(entries)], DEFAULT.hub_neighbours)
    )

    with_stored, computed_here = ranker(*[entries]), ranker(*[entries])
    with_stored.attach(stored)
    computed_here.attach(bare)
    assert with_stored.semantic is not None and computed_here.semantic is not None
    np.testing.assert_array_equal(with_stored.semantic.correction, computed_here.semantic.correction)

    # Stored over the default's neighbours: a ranker asking for another number computes its own.
    nearest = replace(DEFAULT, hub_neighbours=1)
    other = Ranker.build(SiteIndex.build("docs", entries), None, nearest)
    other.attach(stored)
    assert other.semantic is not None
    hubness = neighbour_similarity(stored.matrix[: len(entries)], 1)
    np.testing.assert_array_equal(
        other.semantic.correction, (nearest.hub_weight * (hubness - np.median(hubness))).astype(np.float32)
    )
    assert not np.array_equal(other.semantic.correction, with_stored.semantic.correction)
    query = unit(encoder, HOLIDAY_FREEZE)
    assert [(h.entry.location, h.score) for h in search(with_stored, HOLIDAY_FREEZE, 5, query)] == [
        (h.entry.location, h.score) for h in search(computed_here, HOLIDAY_FREEZE, 5, query)
    ]


def test_scan_rows_attach_exactly_as_the_stored_vectors_do(encoder: MiniLM) -> None:
    """What a cold instance downloads instead of the vectors: the int8 rows and neighbour similarities made from the
    float16 rows the vectors store, so both rank every query to the same floats."""
    entries = entries_of(
        page("sync-windows/", "Sync windows", SYNC_WINDOWS),
        page("retries/", "Retries", "Failed syncs are retried with backoff."),
        page("bread/", "Bread", "Bake sourdough bread with a starter."),
    )
    computed = SiteVectors.compute(encoder, entries)
    stored = SiteVectors.loads(computed.dumps(MODEL, len(entries), source="abc/def"), MODEL)
    rows = ScanRows.loads(computed.scan_rows(len(entries), "abc/def").dumps(MODEL), MODEL)
    assert stored is not None and rows is not None and rows.source == "abc/def"
    assert len(rows) == len(computed.keys) and stored.hubness is not None
    np.testing.assert_array_equal(rows.hubness, stored.hubness)
    assert not rows.quantized.columns.flags.writeable  # views of the payload, copied by the scan

    from_vectors, from_rows = ranker(*[entries]), ranker(*[entries])
    from_vectors.attach(stored)
    from_rows.attach(rows)
    assert from_vectors.semantic is not None and from_rows.semantic is not None
    np.testing.assert_array_equal(from_rows.semantic.correction, from_vectors.semantic.correction)
    for question in (HOLIDAY_FREEZE, "retry a failed sync", "bread"):
        query = unit(encoder, question)
        assert [(h.entry.location, h.score) for h in search(from_rows, question, 5, query)] == [
            (h.entry.location, h.score) for h in search(from_vectors, question, 5, query)
        ]

    # A ranker asking for another number of neighbours computes them from the rows, scaled back.
    nearest = replace(DEFAULT, hub_neighbours=1)
    other = Ranker.build(SiteIndex.build("docs", entries), None, nearest)
    other.attach(rows)
    assert other.semantic is not None
    assert not np.array_equal(other.semantic.correction, from_rows.semantic.correction)


SCAN_MAGIC = b"docs-scan-rows\n"
PIECES_MAGIC = b"docs-word-pieces\n"


@pytest.mark.parametrize(
    ("edit", "cut"),
    [
        ({"model": "all-mpnet-base-v2"}, 0),
        ({"format": SCAN_FORMAT + 1}, 0),
        ({"rows": 5}, 0),
        ({"entries": 0}, 0),
        ({"entries": True}, 0),
        ({"source": None}, 0),
        ({}, 4),
    ],
    ids=["another model", "another format", "more rows", "no entries", "entries not a number", "no source", "short"],
)
def test_scan_rows_in_another_layout_or_that_do_not_add_up_are_refused(
    vectors: SiteVectors, edit: dict[str, Any], cut: int
) -> None:
    payload = vectors.scan_rows(2, "abc/def").dumps(MODEL)
    header, rest = _parts(payload, SCAN_MAGIC)
    assert ScanRows.loads(_stored(header, rest, SCAN_MAGIC), MODEL) is not None
    assert ScanRows.loads(_stored(header | edit, rest[: len(rest) - cut], SCAN_MAGIC), MODEL) is None
    flipped = bytearray(payload)
    flipped[len(flipped) // 2] ^= 1
    assert ScanRows.loads(bytes(flipped), MODEL) is None
    assert ScanRows.loads(vectors.dumps(MODEL, 2), MODEL) is None  # the vectors are not scan rows


def test_a_new_index_version_embeds_only_the_entries_whose_text_changed() -> None:
    after = entries_of(
        page("retries/", "Retries", "Failed syncs are retried with a back-off."),  # changed, and moved first
        page("sync-windows/", "Sync windows", SYNC_WINDOWS),  # unchanged
        page("hooks/", "Hooks", "Hooks run before and after a sync."),  # new
    )
    counting = WordEncoder()
    previous = SiteVectors.compute(counting, PAGES)
    counting.texts.clear()

    refreshed = SiteVectors.compute(counting, after, reuse=previous)

    # the changed and the new entry, and their pages' outlines (the changed page's introduction changed too)
    assert counting.texts == [
        entry_text(after[0]),
        entry_text(after[2]),
        *(page_outline(after, n, [n]) for n in (0, 2)),
    ]
    assert refreshed.matches(after) and not refreshed.matches(PAGES)
    np.testing.assert_array_equal(refreshed.matrix[1], previous.matrix[0])
    np.testing.assert_allclose(refreshed.matrix, SiteVectors.compute(WordEncoder(), after).matrix, atol=1e-5)


def test_progress_reports_every_row_known_so_far_reused_or_computed() -> None:
    before = entries_of(page("sync-windows/", "Sync windows", SYNC_WINDOWS))
    after = entries_of(
        *(page(f"p{number}/", f"Page {number}", f"Text number {number}.") for number in range(5)),
        page("sync-windows/", "Sync windows", SYNC_WINDOWS),  # unchanged: reused, never embedded
    )
    previous = SiteVectors.compute(WordEncoder(), before)
    reports: list[SiteVectors] = []

    whole = SiteVectors.compute(
        WordEncoder(), after, reuse=previous, progress=lambda known: reports.append(known()), every=2
    )

    reused = {text_key(entry_text(after[-1])), text_key(page_outline(after, 5, [5]))}
    # Ten rows to embed (five entries, five outlines): reports after each chunk of two but the last, whose rows
    # the result carries.
    assert [len(report.keys) for report in reports] == [2 + 2, 2 + 4, 2 + 6, 2 + 8]
    for report in reports:
        assert reused <= set(report.keys)
        for key, row in zip(report.keys, report.matrix, strict=True):
            np.testing.assert_array_equal(row, whole.matrix[whole.keys.index(key)])


def test_vectors_stored_before_page_outlines_existed_lend_every_entry_row() -> None:
    entries_only = SiteVectors.compute(WordEncoder(), PAGES)
    before = SiteVectors(entries_only.matrix[: len(PAGES)], entries_only.keys[: len(PAGES)])  # the old layout
    stored = SiteVectors.loads(before.dumps(MODEL), MODEL)
    assert stored is not None and not stored.matches(PAGES)  # not applied as they are
    counting = WordEncoder()

    upgraded = SiteVectors.compute(counting, PAGES, reuse=stored)

    assert counting.texts == embedded_texts(PAGES)[len(PAGES) :]  # only the outlines are embedded
    assert upgraded.matches(PAGES)


def test_vectors_of_another_size_lend_no_rows() -> None:
    small = SiteVectors.compute(WordEncoder(), PAGES)
    counting = WordEncoder()
    counting.dimensions = 32

    again = SiteVectors.compute(counting, PAGES, reuse=small)

    assert again.matrix.shape == (4, 32) and len(counting.texts) == 4


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
    loaded = SiteVectors.loads(vectors.dumps(MODEL), MODEL)
    assert loaded is not None and loaded.matches(PAGES)
    assert not loaded.matches(entries)


def _stored(header: dict[str, Any], rest: bytes, magic: bytes = b"docs-vectors\n") -> bytes:
    """A payload in the stored layout (the vectors', or the scan rows' with their `magic`) with this header and
    these bytes after it, checksummed."""
    head = json.dumps(header).encode()
    body = magic + struct.pack("<I", len(head)) + head + rest
    return body + hashlib.sha256(body).digest()


def _parts(payload: bytes, magic: bytes = b"docs-vectors\n") -> tuple[dict[str, Any], bytes]:
    body = payload[:-32]
    (size,) = struct.unpack_from("<I", body, len(magic))
    start = len(magic) + 4
    return json.loads(body[start : start + size]), body[start + size :]


def test_the_stored_form_is_checked_before_it_is_read(vectors: SiteVectors) -> None:
    header, rest = _parts(vectors.dumps(MODEL))
    assert SiteVectors.loads(_stored(header, rest), MODEL) is not None  # the helpers rebuild it faithfully
    payload = bytearray(vectors.dumps(MODEL))
    payload[len(payload) // 2] ^= 1  # one bit of one row
    assert SiteVectors.loads(bytes(payload), MODEL) is None


@pytest.mark.parametrize(
    ("edit", "cut"),
    [
        ({"model": "all-mpnet-base-v2"}, 0),
        ({"format": FORMAT + 1}, 0),
        ({"dimensions": 768}, 0),
        ({"dimensions": "384"}, 0),
        ({"rows": 5}, 0),
        ({"rows": True}, 0),
        ({"hubness": 3}, 0),
        ({"source": 7}, 0),
        ({"pieces": PIECES // 2}, 0),
        ({"pieces": 0}, 0),
        ({}, 2),
    ],
    ids=[
        "another model",
        "another format",
        "another size",
        "a size that is not a number",
        "more rows than it holds",
        "rows that are not a number",
        "more hubness than rows",
        "a source that is not text",
        "other word pieces",
        "word pieces not counted",
        "short vectors",
    ],
)
def test_vectors_in_another_layout_or_from_another_model_are_refused(
    vectors: SiteVectors, edit: dict[str, Any], cut: int
) -> None:
    header, rest = _parts(vectors.dumps(MODEL))
    assert SiteVectors.loads(_stored(header, rest), MODEL) is not None
    assert SiteVectors.loads(_stored(header | edit, rest[: len(rest) - cut]), MODEL) is None


def test_vectors_stored_in_the_json_layout_of_before_are_not_read(vectors: SiteVectors) -> None:
    """Format 3 (JSON, base64) was written only by models of 64 word pieces, whose ids no current model has: its
    reader is gone and such a copy is embedded again, like any other model's."""
    rounded = vectors.matrix.astype(np.float16)
    document = {
        "format": 3,
        "model": MODEL,
        "dimensions": 384,
        "keys": list(vectors.keys),
        "vectors": base64.b64encode(rounded.tobytes()).decode(),
    }
    assert SiteVectors.loads(json.dumps(document).encode(), MODEL) is None


def test_the_stored_form_records_what_the_vectors_were_computed_from(vectors: SiteVectors) -> None:
    recorded = SiteVectors.loads(vectors.dumps(MODEL, source="abc/def"), MODEL)
    assert recorded is not None and recorded.source == "abc/def"
    unrecorded = SiteVectors.loads(vectors.dumps(MODEL), MODEL)
    assert unrecorded is not None and unrecorded.source is None


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\x89PNG\r\n\x1a\n\x00\xff\xfe",
        b'{"format": 1, "model": ',
        b"{}",
        b"[]",
        b"null",
        b"[" * 100_000 + b"]" * 100_000,
    ],
    ids=["empty", "binary", "truncated", "empty object", "array", "null", "deeply nested"],
)
def test_garbage_is_refused_not_raised(payload: bytes) -> None:
    assert SiteVectors.loads(payload, MODEL) is None


# -- the ranker


def test_a_page_sharing_no_word_with_the_query_is_found_by_meaning(encoder: MiniLM) -> None:
    index = semantic_ranker(encoder, page("sync-windows/", "Sync windows", SYNC_WINDOWS), *FILLER)
    query = unit(encoder, HOLIDAY_FREEZE)
    assert index.semantic is not None and index.entries[0].page == "sync-windows/"
    similarities = index.semantic.rows.similarities(split_query(query))  # what the ranker scores with: int8 rows
    cosine = float(similarities[0]) - float(index.semantic.correction[0])
    outline = float(similarities[len(index.entries)])  # the first page's outline row, after every entry's

    hits = search(index, HOLIDAY_FREEZE, 5, query)

    assert cosine > DEFAULT.threshold + 0.05 and outline > DEFAULT.threshold  # the premise: the model connects them
    assert [hit.entry.location for hit in hits] == ["sync-windows/"]
    similarity = (1 - DEFAULT.outline_share) * cosine + DEFAULT.outline_share * outline
    assert hits[0].score == pytest.approx(DEFAULT.weight * (similarity - DEFAULT.threshold))
    assert search(index, HOLIDAY_FREEZE, 5) == []  # without the query's vector: lexical only, and no word matches
    assert search(ranker(page("sync-windows/", "Sync windows", SYNC_WINDOWS), *FILLER), HOLIDAY_FREEZE, 5, query) == []


def test_an_off_topic_query_gains_nothing_from_meaning(encoder: MiniLM) -> None:
    starters = page("starters/", "Starter templates", "Starter templates scaffold a new service repository.")
    index = semantic_ranker(encoder, page("sync-windows/", "Sync windows", SYNC_WINDOWS), starters, *FILLER)

    lexical = search(index, OFF_TOPIC, 5)
    semantic = search(index, OFF_TOPIC, 5, unit(encoder, OFF_TOPIC))

    assert [hit.entry.location for hit in lexical] == ["starters/"]  # `starter` matches a word, not the meaning
    assert [(hit.entry.location, hit.score) for hit in semantic] == [(hit.entry.location, hit.score) for hit in lexical]


def test_semantic_credit_is_demoted_by_a_page_boost_below_one_but_not_promoted_above(encoder: MiniLM) -> None:
    query = unit(encoder, HOLIDAY_FREEZE)
    scores: dict[float, list[float]] = {}
    for boost in (0.0, 0.5, 1.0, 2.0):
        index = semantic_ranker(encoder, page("sync-windows/", "Sync windows", SYNC_WINDOWS, boost=boost), *FILLER)
        scores[boost] = [hit.score for hit in search(index, HOLIDAY_FREEZE, 5, query)]

    [credit] = scores[1.0]
    assert credit > 0
    assert scores[0.5] == [pytest.approx(credit / 2)]
    assert scores[2.0] == [pytest.approx(credit)]  # the boost multiplies the term score (none here), not meaning
    assert scores[0.0] == [0.0]  # boost 0: found, but with no semantic credit at all


@pytest.mark.parametrize(
    ("rules", "factor"),
    [
        ('[{"pattern": "sync-windows/", "weight": 2, "when": ["cli"]}]', 2.0),  # asked for: the credit doubles too
        ('[{"pattern": "sync-windows/", "weight": 2, "when": ["deploy"]}]', 1.0),  # not asked for
        ('[{"pattern": "sync-windows/", "weight": 0.5}]', 0.5),
        ('[{"pattern": "sync-windows/", "weight": 0.5, "unless": ["cli"]}]', 1.0),  # waived
    ],
)
def test_a_page_kind_weight_in_effect_multiplies_the_semantic_credit(
    encoder: MiniLM, rules: str, factor: float
) -> None:
    query = f"{HOLIDAY_FREEZE} from the cli"  # shares no word with the page: its score is its credit alone
    vector = unit(encoder, query)
    sync_windows = page("sync-windows/", "Sync windows", SYNC_WINDOWS)
    [plain] = search(semantic_ranker(encoder, sync_windows, *FILLER, kinds=PathWeights.parse("[]")), query, 5, vector)
    [weighted] = search(
        semantic_ranker(encoder, sync_windows, *FILLER, kinds=PathWeights.parse(rules)), query, 5, vector
    )
    assert plain.score > 0
    assert weighted.score == pytest.approx(plain.score * factor)


def test_a_boost_above_one_still_doubles_the_term_score_beside_the_credit(encoder: MiniLM) -> None:
    text = "Sync windows. " + SYNC_WINDOWS
    plain = semantic_ranker(encoder, page("sync-windows/", "Sync windows", text), *FILLER)
    boosted = semantic_ranker(encoder, page("sync-windows/", "Sync windows", text, boost=2.0), *FILLER)
    query = "sync windows freeze"
    vector = unit(encoder, query)
    [lexical] = search(plain, query, 1)
    [both] = search(plain, query, 1, vector)
    [boosted_both] = search(boosted, query, 1, vector)
    assert {lexical.entry.page, both.entry.page, boosted_both.entry.page} == {"sync-windows/"}
    credit = both.score - lexical.score
    assert lexical.score > 0 and credit > 0
    assert boosted_both.score == pytest.approx(2 * lexical.score + credit)


@pytest.mark.parametrize(
    "query",
    [
        "block deploys over the holidays with deny_window",  # 1 identifier in 7 tokens: no credit at all
        f"{HOLIDAY_FREEZE} while the deny_window setting is on",  # 1 in 12: a sixth of it
        # 1 in 21: about half
        f"{HOLIDAY_FREEZE}, since our whole team is away then and nobody should be paged about a deploy_window",
        HOLIDAY_FREEZE,  # none: the whole credit
    ],
)
def test_identifiers_in_a_query_take_the_semantic_credit_away_in_proportion(encoder: MiniLM, query: str) -> None:
    index = semantic_ranker(encoder, page("sync-windows/", "Sync windows", SYNC_WINDOWS), *FILLER)
    vector = unit(encoder, query)

    said = _credit(reranked(encoder, index, replace(DEFAULT, identifier_scale=10.0)), query, vector)  # the cases' scale
    whole = _credit(reranked(encoder, index, replace(DEFAULT, identifier_scale=0.0)), query, vector)

    assert whole > 0
    assert said == pytest.approx(whole * max(0.0, 1 - 10 * identifier_share(query)))


@pytest.mark.parametrize(
    "query",
    [
        HOLIDAY_FREEZE,  # four terms: the whole credit
        # thirteen terms: 8/13 of it, as its term score would shrink about as much against an eight-term question's
        f"{HOLIDAY_FREEZE}: how can we stop every release to production during the yearly freeze at december's end",
    ],
)
def test_a_long_question_s_credit_shrinks_as_its_term_score_does(encoder: MiniLM, query: str) -> None:
    index = semantic_ranker(encoder, page("sync-windows/", "Sync windows", SYNC_WINDOWS), *FILLER)
    vector = unit(encoder, query)
    terms = len(analyze_query(query).words)

    balance = 8  # the cases' balance
    said = _credit(reranked(encoder, index, replace(DEFAULT, balance_words=balance)), query, vector)
    whole = _credit(reranked(encoder, index, replace(DEFAULT, balance_words=1_000)), query, vector)

    assert whole > 0 and identifier_share(query) == 0
    assert said == pytest.approx(whole * min(1.0, balance / terms))
    assert (said < whole) == (terms > balance)


def _credit(index: Ranker, query: str, vector: npt.NDArray[np.float32]) -> float:
    """The semantic credit the sync-windows page earns for `query`: its score with the vector less without."""
    lexical = {hit.entry.location: hit.score for hit in search(index, query, 5)}
    both = {hit.entry.location: hit.score for hit in search(index, query, 5, vector)}
    return both.get("sync-windows/", 0.0) - lexical.get("sync-windows/", 0.0)


def test_attaching_vectors_for_another_number_of_entries_is_refused(encoder: MiniLM) -> None:
    index = ranker(page("sync-windows/", "Sync windows", SYNC_WINDOWS, ("deny", "Deny windows", "Block syncs.")))
    fewer = SiteVectors.compute(encoder, index.entries[:1])

    with pytest.raises(ValueError, match="2 vectors for 2 entries, 1 page outlines and 0 code blocks"):
        index.attach(fewer)
    assert index.semantic is None


def test_every_page_is_embedded_once_more_from_its_title_headings_and_introduction() -> None:
    controls = page(
        "controls/",
        "Release controls",
        "How releases are held back and retried. " + FILLER_WORDS,
        ("retries", "Retries", "Failed operations are retried."),
        ("sync-windows", "Sync windows", SYNC_WINDOWS),
    )
    entries = entries_of(controls, page("hooks/", "Hooks", "Hooks run."))

    texts = embedded_texts(entries)

    assert texts[: len(entries)] == [entry_text(entry) for entry in entries]
    introduction = " ".join(entries[0].text.split()[:OUTLINE_WORDS])
    assert texts[len(entries) :] == [f"Release controls: Retries; Sync windows\n{introduction}", "Hooks: \nHooks run."]
    assert len(introduction.split()) == OUTLINE_WORDS < len(entries[0].text.split())


def test_a_page_found_only_by_meaning_carries_its_closest_section(encoder: MiniLM) -> None:
    controls = page(
        "controls/",
        "Release controls",
        "",
        ("retries", "Retries", "Failed operations are retried with exponential backoff up to five times."),
        ("sync-windows", "Sync windows", SYNC_WINDOWS),
    )
    index = semantic_ranker(encoder, controls, *FILLER)
    assert search(index, HOLIDAY_FREEZE, 5) == []  # the premise: no lexical evidence at all

    [hit] = search(index, HOLIDAY_FREEZE, 5, unit(encoder, HOLIDAY_FREEZE))

    assert hit.entry.location == "controls/"
    assert hit.section is not None and hit.section.location == "controls/#sync-windows"
    assert hit.breadcrumb == ("Release controls", "Sync windows")
    assert hit.preview_source == SYNC_WINDOWS


# -- hubness


def _unit_rows(rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float32]:
    unit_rows: npt.NDArray[np.float32] = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    return unit_rows


def test_neighbour_similarity_is_the_mean_cosine_with_the_nearest_other_rows() -> None:
    rows = _unit_rows(np.random.default_rng(7).normal(size=(1300, 12)))  # more rows than one block holds
    products = rows.astype(np.float64) @ rows.T.astype(np.float64)
    np.fill_diagonal(products, -np.inf)
    expected = np.sort(products, axis=1)[:, -10:].mean(axis=1)

    assert neighbour_similarity(rows, 10) == pytest.approx(expected, abs=1e-5)
    assert neighbour_similarity(rows[:3], 10) == pytest.approx(  # fewer rows than neighbours: every other row
        [
            (products[0, 1] + products[0, 2]) / 2,
            (products[1, 0] + products[1, 2]) / 2,
            (products[2, 0] + products[2, 1]) / 2,
        ],
        abs=1e-5,
    )
    assert neighbour_similarity(rows[:1], 10).tolist() == [0.0]  # alone: nobody to be close to


def test_a_page_close_to_everything_on_its_site_loses_its_edge_to_the_specific_page() -> None:
    """The hub page's best section is nearer the question than the specific page is, but it is as near to every
    other page of the site: after the correction the specific page ranks first (found by meaning alone here)."""
    hub_direction, specific_direction, query = np.eye(6)[2], np.eye(6)[1], np.eye(6)[0]
    specific = page("specific/", "Specific", "alpha")
    hub = page("overview/", "Overview", "beta")
    generic = FILLER
    index = ranker(specific, hub, *generic)
    rows = []
    for entry in index.entries:
        if entry.page == "specific/":
            rows.append(0.60 * query + 0.80 * specific_direction)
        elif entry.page == "overview/":
            rows.append(0.64 * query + 0.768 * hub_direction)
        else:  # every other page sits near the hub: the kind of section an overview summarises
            rows.append(0.2 * query + hub_direction + 0.05 * np.eye(6)[3 + len(rows) % 3])
    rows += rows[: len(index.pages)]  # each page's outline: one entry each, so its entry's direction
    matrix = _unit_rows(np.array(rows))
    index.attach(SiteVectors(matrix, tuple(str(n) for n in range(len(matrix)))))
    semantic = index.semantic
    assert semantic is not None
    raw = matrix @ query.astype(np.float32)
    assert raw[1] > raw[0] > DEFAULT.threshold  # the premise: uncorrected, the overview is nearer the question

    hits = search(index, "unrelated words", 3, query.astype(np.float32))

    assert [hit.entry.location for hit in hits][:2] == ["specific/", "overview/"]
    hubness = neighbour_similarity(matrix[: len(index.entries)], DEFAULT.hub_neighbours)  # outlines: not corrected
    assert semantic.correction == pytest.approx(DEFAULT.hub_weight * (hubness - np.median(hubness)), abs=1e-6)
    assert semantic.correction[0] < semantic.correction[1]  # the lone page is raised more than the one among many
