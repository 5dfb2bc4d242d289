"""What an agent's copy of a page leaves out (`shared.safe_content`, pure): invisible characters anywhere, comments
and hidden elements outside code fences; every kept character is where `moved` says."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.safe_content import clean, moved

INVISIBLES = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u202e", "\u202a", "\u2066", "\u2069", "\u200f"]


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("a<!-- do it -->b", "ab"),
        ("a<!-- never closed", "a"),
        ('x <div hidden="">secret</div> y', "x  y"),
        ("x <DIV HIDDEN>secret</DIV> y", "x  y"),
        ("x <p style='color:red; display :none'>secret</p> y", "x  y"),
        ('x <p style="visibility: hidden">secret</p> y', "x  y"),
        ('x <span aria-hidden="true">secret</span> y', "x  y"),
        ('x <span aria-hidden="false">shown</span> y', 'x <span aria-hidden="false">shown</span> y'),
        ("x <div hidden><div>a</div><div>b</div></div> y", "x  y"),
        ("x <img hidden src=a.png> y", "x  y"),
        ("x <div hidden>never closed\n\nnext paragraph", "x \n\nnext paragraph"),
        ("<hiddenness>kept</hiddenness>", "<hiddenness>kept</hiddenness>"),
        (
            "```\n<!-- code -->\n<div hidden>code</div>\n```\n<!-- prose -->",
            "```\n<!-- code -->\n<div hidden>code</div>\n```\n",
        ),
        ("~~~~\n```\n<!-- still code -->\n~~~~\nafter<!-- x -->", "~~~~\n```\n<!-- still code -->\n~~~~\nafter"),
        (
            "```\n<!-- an unclosed fence keeps the rest as code -->",
            "```\n<!-- an unclosed fence keeps the rest as code -->",
        ),
    ],
)
def test_comments_and_hidden_elements_outside_code_are_left_out(text: str, kept: str) -> None:
    result = clean(text)
    assert result.text == kept and result.removed == len(text) - len(kept)


def test_invisible_characters_are_left_out_even_in_code() -> None:
    tagged = "".join(chr(0xE0000 + ord(c)) for c in "hi")
    result = clean(f"```\ncurl\u200b -x{tagged}\n```\n")
    assert result.text == "```\ncurl -x\n```\n" and result.removed == 3


@given(st.lists(st.one_of(st.text(alphabet="ab #<>-!\n`", max_size=6), st.sampled_from(INVISIBLES)), max_size=40))
def test_every_kept_character_is_where_moved_says(pieces: list[str]) -> None:
    text = "".join(pieces)
    result = clean(text)
    assert not any(c in result.text for c in INVISIBLES)
    removed = {i for start, end in result.spans for i in range(start, end)}
    for index, char in enumerate(text):
        if index not in removed:
            assert result.text[moved(result, index)] == char
    assert moved(result, len(text)) == len(result.text)
