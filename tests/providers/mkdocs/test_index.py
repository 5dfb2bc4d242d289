"""Valid but odd search indexes, each decided on purpose: what loads, what is cleaned, what is dropped."""

from __future__ import annotations

import json
from typing import Any

from shared.providers.mkdocs.index import parse_index


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
