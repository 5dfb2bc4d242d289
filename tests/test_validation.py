"""Caller input the service refuses, and locations it accepts from pasted URLs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.errors import InvalidRequestError
from shared.validation import check_limit, check_location, check_query

ORIGIN = "http://127.0.0.1:8000"


@pytest.mark.parametrize("query", [None, "", "   ", "a" * 1025, "bad\x00byte", "line\x1bescape", "\x1c\x1d"])
def test_bad_queries_are_refused(query: str | None) -> None:
    with pytest.raises(InvalidRequestError):
        check_query(query)


def test_queries_are_trimmed_and_tabs_allowed() -> None:
    assert check_query("  sync\twindows ") == "sync\twindows"


@pytest.mark.parametrize("limit", [0, -1, 51])
def test_limit_outside_1_to_50_is_refused(limit: int) -> None:
    with pytest.raises(InvalidRequestError, match="from 1 to 50 \\(at most 25 results are returned\\)"):
        check_limit(limit)


@pytest.mark.parametrize(
    "location",
    [
        None,
        " ",
        " \t ",
        "https://evil.example/forge/faq/",
        "//evil.example/forge/faq/",
        "http://127.0.0.1:8001/forge/faq/",
        "javascript:alert(1)",
        "forge/../../etc/passwd",
        "forge/%2e%2e/secret",
        "forge/%252e%252e/secret",
        "forge\\..\\secret",
        "./faq",
        "faq\r\nHost: evil",
        "x" * 1025,
    ],
)
def test_locations_that_could_leave_the_origin_or_are_malformed_are_refused(location: str | None) -> None:
    with pytest.raises(InvalidRequestError):
        check_location(location, ORIGIN)


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("faq/", "faq/"),
        ("forge/faq/#reset", "forge/faq/#reset"),
        (f"{ORIGIN}/forge/operator-manual/rbac/", "/forge/operator-manual/rbac/"),
        (f"{ORIGIN}/iac-okta-modules/resources/group/#example?x", "/iac-okta-modules/resources/group/#example?x"),
        ("user-guide/sync%5Fwindows", "user-guide/sync_windows"),
        ("/", "/"),
        ("", ""),
    ],
)
def test_accepted_locations(location: str, expected: str) -> None:
    assert check_location(location, ORIGIN) == expected


def test_whitespace_is_exactly_dotnets_char_is_whitespace() -> None:
    import unicodedata

    from shared.validation import is_whitespace

    dotnet = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x85} | {
        code for code in range(0x110000) if unicodedata.category(chr(code)) in ("Zs", "Zl", "Zp")
    }
    assert {code for code in range(0x110000) if is_whitespace(chr(code))} == dotnet
    assert not any(is_whitespace(chr(code)) for code in (0x1C, 0x1D, 0x1E, 0x1F))  # str.isspace says yes


def test_str_split_is_the_spec_whitespace_but_four_characters() -> None:
    """`split_whitespace` takes `str.split()` for text without U+001C-U+001F: what makes that exact."""
    from shared.validation import _NOT_SPEC_WHITESPACE, is_whitespace

    python = {code for code in range(0x110000) if chr(code).isspace()}
    spec = {code for code in range(0x110000) if is_whitespace(chr(code))}
    assert python - spec == {ord(char) for char in _NOT_SPEC_WHITESPACE} and spec <= python


@given(st.text(alphabet=st.sampled_from(list("ab \t\n\x1c\x1f\x85\xa0\u2028\u3000\u200b")), max_size=30))
def test_split_whitespace_splits_on_the_spec_whitespace_only(text: str) -> None:
    from shared.validation import WHITESPACE, split_whitespace

    assert split_whitespace(text) == [word for word in WHITESPACE.split(text) if word]


def test_a_multi_line_query_is_whitespace_not_a_control_character() -> None:
    from shared.validation import check_query

    pasted = "Error: sync failed\r\n  at app.sync()\n\tcaused by: deny window\u2028end"
    assert check_query("\r\n " + pasted + "\u3000\n") == pasted
    for bad in ("a\x00b", "a\x1cb", "a\x7fb", "a\x9fb"):
        with pytest.raises(InvalidRequestError):
            check_query(bad)
    assert check_query("zero\u200bwidth\u00adsoft") == "zero\u200bwidth\u00adsoft"  # invisible text pasted along


@given(st.text(max_size=40))
def test_the_documented_query_pattern_is_exactly_what_the_service_accepts(query: str) -> None:
    import re

    from shared.validation import QUERY_PATTERN

    try:
        check_query(query)
        accepted = True
    except InvalidRequestError:
        accepted = False
    assert accepted == bool(re.match(QUERY_PATTERN, query))
