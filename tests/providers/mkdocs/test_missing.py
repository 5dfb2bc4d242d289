"""The missing-pages record on its own: its format, what a reader refuses, and the merge two writers rely on."""

from __future__ import annotations

import json

import pytest

from shared.providers.mkdocs.fetching.unserved import MissingRecord, Validators, Verdict, missing_for, start, verdict

A, B = "a" * 64, "b" * 64


def record(index: str = A, **fields: object) -> MissingRecord:
    return MissingRecord(index, **fields)  # type: ignore[arg-type]


def test_a_record_survives_its_round_trip_and_is_plain_json() -> None:
    original = record(
        missing=frozenset({"legacy/phantom/", "café/"}),
        checked=frozenset({"", "guide/install/"}),
        complete=True,
        validators={"guide/install/": Validators('"5f-1a"', "Tue, 01 Jul 2025 10:00:00 GMT"), "": Validators('"x"')},
        revived=frozenset({"café/"}),
    )

    document = json.loads(original.dumps())

    assert document == {
        "format": 1,
        "index": A,
        "missing": ["café/", "legacy/phantom/"],
        "checked": ["", "guide/install/"],
        "complete": True,
        "validators": {
            "": {"etag": '"x"'},
            "guide/install/": {"etag": '"5f-1a"', "lastModified": "Tue, 01 Jul 2025 10:00:00 GMT"},
        },
        "revived": ["café/"],
    }
    assert MissingRecord.loads(original.dumps()) == original
    assert original.hidden == {"legacy/phantom/"}


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"not json",
        b"[]",
        b'{"index": "x"}',  # no format
        b'{"format": 2, "index": "x"}',
        b'{"format": 1}',
        b'{"format": 1, "index": ""}',
        b'{"format": 1, "index": "x", "missing": "legacy/phantom/"}',
        b'{"format": 1, "index": "x", "missing": [1]}',
        b'{"format": 1, "index": "x", "checked": {}}',
        b'{"format": 1, "index": "x", "complete": "yes"}',
        b'{"format": 1, "index": "x", "validators": []}',
        b'{"format": 1, "index": "x", "validators": {"p/": "etag"}}',
        b'{"format": 1, "index": "x", "validators": {"p/": {"etag": 1}}}',
        b"\xff\xfe",
        b"[" * 100_000 + b"]" * 100_000,
    ],
)
def test_anything_else_reads_as_no_record(payload: bytes) -> None:
    assert MissingRecord.loads(payload) is None


def test_a_minimal_record_reads_with_nothing_missing() -> None:
    assert MissingRecord.loads(b'{"format": 1, "index": "x"}') == record("x")


def test_two_writers_findings_for_one_index_merge_by_union() -> None:
    mine = record(missing=frozenset({"a/"}), checked=frozenset({"c/"}), validators={"c/": Validators('"1"')})
    theirs = record(missing=frozenset({"b/"}), complete=True, validators={"c/": Validators('"2"'), "d/": Validators()})

    merged = mine.merge(theirs)

    assert merged.missing == {"a/", "b/"} and merged.checked == {"c/"} and merged.complete
    assert merged.validators == {"c/": Validators('"2"'), "d/": Validators()}  # the later writer's win
    assert mine.merge(mine) == mine
    with pytest.raises(ValueError, match="different index"):
        mine.merge(record(B))


def test_a_new_index_version_starts_with_nothing_missing_but_keeps_the_validators() -> None:
    old = record(
        missing=frozenset({"a/"}), checked=frozenset({"c/"}), complete=True, validators={"c/": Validators('"1"')}
    )

    assert start(old, A) is old
    assert start(old, B) == record(B, validators={"c/": Validators('"1"')})
    assert start(None, B) == record(B)
    assert missing_for(old, A) == {"a/"} and missing_for(old, B) == frozenset() and missing_for(None, A) == frozenset()


def test_unchecked_pages_keep_their_order_and_skip_what_is_decided() -> None:
    decided = record(missing=frozenset({"b/"}), checked=frozenset({"a/"}))
    assert decided.unchecked(["c/", "a/", "d/", "b/"]) == ["c/", "d/"]


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (200, Verdict.SERVED),
        (204, Verdict.SERVED),
        (304, Verdict.SERVED),
        (404, Verdict.MISSING),
        (410, Verdict.MISSING),
        (500, Verdict.UNKNOWN),
        (503, Verdict.UNKNOWN),
        (403, Verdict.UNKNOWN),
        (429, Verdict.UNKNOWN),
        (301, Verdict.UNKNOWN),
    ],
)
def test_only_404_and_410_are_evidence_of_a_missing_page(status: int, expected: Verdict) -> None:
    assert verdict(status) is expected


def test_validators_become_conditional_headers() -> None:
    assert Validators('"e"', "then").headers() == {"If-None-Match": '"e"', "If-Modified-Since": "then"}
    assert Validators(None, "then").headers() == {"If-Modified-Since": "then"}
    assert Validators().headers() == {} and not Validators()
