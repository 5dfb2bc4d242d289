"""Valid but odd search indexes, each decided on purpose: what loads, what is cleaned, what is dropped."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from shared.errors import IndexFormatError
from shared.providers.mkdocs.indexes.columns import TEXT_FIELDS, EntryColumns
from shared.providers.mkdocs.indexes.index import IndexEntry, IndexFormat, parse_index


def index_of(*docs: dict[str, Any]) -> bytes:
    return json.dumps({"docs": list(docs)}).encode()


def test_a_lone_surrogate_in_text_or_title_becomes_a_replacement_character() -> None:
    payload = b'{"docs": [{"location": "a/", "title": "T\\ud800", "text": "<p>x\\udfff y</p>"}]}'
    entry = parse_index("s", payload).entries[0]
    assert (entry.title, entry.text.strip()) == ("T\ufffd", "x\ufffd y")
    json.dumps(entry.text).encode("utf-8")  # an answer carrying it can be encoded


def test_entries_no_answer_could_carry_are_dropped_and_the_rest_load() -> None:
    payload = index_of(
        {"location": "ok/", "title": "Kept", "text": "t"},
        {"location": "x" * 1025, "title": "A 1 MB location is refused by get", "text": "t"},
    ).replace(b'"x', b'"\\ud800x', 0)
    surrogate = b'{"location": "bad\\ud800/", "title": "Unencodable", "text": "t"}'
    payload = payload[:-2] + b", " + surrogate + b"]}"
    index = parse_index("s", payload)
    assert [entry.location for entry in index.entries] == ["ok/"]


def test_odd_values_are_read_as_what_they_must_mean() -> None:
    index = parse_index(
        "s",
        b"\xef\xbb\xbf"  # a byte-order mark before the JSON
        + index_of(
            {"location": "a/", "title": 2024, "text": None, "boost": "NaN"},
            {"location": "b/", "title": {"nested": "object"}, "text": ["list"], "boost": float("inf")},
            {"location": "c/", "title": True, "text": 1.5},
        ),
    )
    titles = {entry.location: (entry.title, entry.text, entry.boost) for entry in index.entries}
    assert titles == {"a/": ("2024", "", 0.0), "b/": ("", "", 0.0), "c/": ("", "1.5", 1.0)}


def stored(entries: list[IndexEntry]) -> tuple[dict[str, bytes], dict[str, list[int]], list[bool], list[float]]:
    """The entries as a prebuilt ranker stores them: each field in one UTF-8 column, cut at each entry's bounds."""
    columns, bounds = {}, {}
    for name in TEXT_FIELDS:
        values = [(getattr(entry, name) or "").encode() for entry in entries]
        columns[name] = b"".join(values)
        bounds[name] = list(itertools.accumulate((len(value) for value in values), initial=0))
    return columns, bounds, [entry.anchor is not None for entry in entries], [entry.boost for entry in entries]


def test_entry_columns_give_the_entries_they_were_made_from() -> None:
    docs = [
        {"location": "a/", "title": "A", "text": "intro"},
        {"location": "a/#one", "title": "One", "text": "first"},
        {"location": "a/#", "title": "Empty anchor", "text": ""},
        {"location": "b/", "title": "B \u00e9t\u00e9", "text": "bee \ud83d\ude80 rocket", "boost": 2},
    ]
    entries = list(parse_index("s", json.dumps({"docs": docs})).entries)
    columns = EntryColumns(*stored(entries))

    assert len(columns) == 4 and columns[3] == entries[3] and columns[-1] == entries[3]
    assert columns[1:3] == entries[1:3] and list(columns) == entries and columns == entries
    assert columns[2].anchor == "" and columns[0].anchor is None  # an empty anchor is not a missing one
    assert columns != entries[:3] and columns != "abcd"
    for outside in (4, -5):
        with pytest.raises(IndexError):
            columns[outside]


def test_entry_columns_refuse_bounds_that_do_not_fit_their_strings() -> None:
    entries = list(parse_index("s", json.dumps({"docs": [{"location": "a/", "title": "A", "text": "x"}]})).entries)
    columns, bounds, anchored, boosts = stored(entries)
    for broken in ({**bounds, "text": [0, 5]}, {**bounds, "title": [0]}, {**bounds, "page": [1, 3]}):
        with pytest.raises(ValueError):
            EntryColumns(columns, broken, anchored, boosts)
    with pytest.raises(ValueError):
        EntryColumns(columns, bounds, [False, True], boosts)
    with pytest.raises(ValueError):
        EntryColumns({**columns, "extra": b""}, bounds, anchored, boosts)


def test_a_zensical_index_is_read_with_each_pages_trail_as_its_breadcrumb() -> None:
    items = [
        {"location": "", "level": 1, "title": "Home", "text": "<p>Welcome.</p>", "path": ["Home"], "tags": []},
        {
            "location": "guide/install/",
            "level": 1,
            "title": "Install",
            "text": "<p>Intro.</p>",
            "path": ["Guide", "Install"],
        },
        {
            "location": "guide/install/#packages",
            "level": 2,
            "title": "Packages",
            "text": "<p>Use apt.</p>",
            "path": ["Guide", "Install"],
            "tags": ["ops"],
        },
        {"location": "odd/", "title": "Odd", "text": "x", "path": "not a list"},
    ]
    index = parse_index("z", json.dumps({"config": {"lang": ["en"]}, "items": items}))

    assert (
        index.format is IndexFormat.ZENSICAL
        and parse_index("m", json.dumps({"docs": items})).format is IndexFormat.MKDOCS
    )
    assert [entry.location for entry in index.entries] == ["", "guide/install/", "guide/install/#packages", "odd/"]
    install, packages, odd = index.entries[1], index.entries[2], index.entries[3]
    assert packages.page == "guide/install/" and packages.anchor == "packages" and packages.text.strip() == "Use apt."
    assert packages.trail_titles == ("Guide",) and install.trail_titles == ("Guide",) and odd.trail == ""
    assert EntryColumns(*stored(list(index.entries)))[2] == packages  # the trail survives a prebuilt ranker
    with pytest.raises(IndexFormatError):
        parse_index("z", json.dumps({"config": {}, "pages": items}))
