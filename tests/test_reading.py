"""The read model on its own: Markdown structure, outlines with the index's anchors, sections, parts that join."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.errors import InvalidRequestError
from shared.markdown import structure
from shared.models import Document, Reason, Resolution, View
from shared.reading import (
    MAX_PART_CHARS,
    Read,
    UnknownSectionError,
    apply,
    check_read,
    content_hash,
    cut,
    find_section,
    outline,
)

PAGE = """---
source: https://docs.example.test/alpha/p/
site: alpha
retrieved: 2026-12-02T10:00:00Z
---

# Handbook

Intro text.

## Install `agent` {#custom}

Steps.

```bash
# a comment, not a heading
echo hi
```

### Example

One.

## Configure

Text.

### Example

Two.

Appendix
--------

The end.
"""

SECTIONS = [
    ("install-agent", "Install agent"),
    ("example", "Example"),
    ("not-in-markdown", "A section the Markdown lacks"),
    ("configure", "Configure"),
    ("example_1", "Example"),
    ("appendix", "Appendix"),
]


def document(content: str = PAGE) -> Document:
    resolution = Resolution(requested_location="p", reason=Reason.RESOLVED)
    return Document(
        requested_location="p",
        location="p",
        site="alpha",
        url="https://docs.example.test/alpha/p/",
        provider="mkdocs",
        content=content,
        resolution=resolution,
        outline=outline(content, SECTIONS),
    )


def test_the_structure_skips_front_matter_and_code_and_reads_both_heading_styles() -> None:
    parsed = structure(PAGE)
    assert PAGE[: parsed.body_start].endswith("---\n") and PAGE[parsed.body_start :].startswith("\n# Handbook")
    titles = [(heading.level, heading.title) for heading in parsed.headings]
    assert titles == [
        (1, "Handbook"),
        (2, "Install agent"),
        (3, "Example"),
        (2, "Configure"),
        (3, "Example"),
        (2, "Appendix"),
    ]
    assert len(parsed.fences) == 1 and PAGE[slice(*parsed.fences[0])].startswith("```bash")


def test_the_outline_takes_anchors_from_the_index_sections_in_order() -> None:
    entries = outline(PAGE, SECTIONS)
    assert [(entry.title, entry.anchor, entry.level) for entry in entries] == [
        ("Handbook", None, 1),
        ("Install agent", "install-agent", 2),
        ("Example", "example", 3),
        ("Configure", "configure", 2),
        ("Example", "example_1", 3),
        ("Appendix", "appendix", 2),
    ]
    install = entries[1]
    assert PAGE[install.offset :].startswith("## Install")
    assert PAGE[install.offset : install.offset + install.chars].endswith("One.\n\n")  # up to the next ##
    assert entries[0].chars == len(PAGE) - entries[0].offset


def test_a_section_is_found_by_anchor_or_text_and_comes_with_the_front_matter() -> None:
    page = document()
    by_anchor = apply(page, Read(section="configure"))
    by_text = apply(page, Read(section="  CONFIGURE "))
    assert by_anchor.content == by_text.content and by_anchor.section == "configure"
    assert by_anchor.content.startswith("---\nsource: ") and "\n## Configure\n" in by_anchor.content
    assert "Two." in by_anchor.content and "Appendix" not in by_anchor.content and "One." not in by_anchor.content
    assert by_anchor.total_chars == len(by_anchor.content) and by_anchor.next_offset is None
    assert by_anchor.content_hash == content_hash(PAGE)
    assert apply(page, Read(section="#example_1")).content.endswith("Two.\n\n")


@pytest.mark.parametrize(
    ("wanted", "listed"),
    [("no-such-section", 6), ("Example", 2)],
    ids=["unknown", "two headings share the text"],
)
def test_a_section_the_page_does_not_name_once_is_refused_with_the_choices(wanted: str, listed: int) -> None:
    with pytest.raises(UnknownSectionError) as refused:
        find_section(document().outline or [], wanted)
    assert len(refused.value.sections) == listed
    assert isinstance(refused.value, InvalidRequestError)  # a 400, never the chain's not_found


def test_the_outline_view_has_no_body() -> None:
    answer = apply(document(), Read(view=View.OUTLINE))
    assert answer.content == "" and answer.total_chars == len(PAGE)
    assert answer.outline is not None and len(answer.outline) == 6
    within = apply(document(), Read(section="configure", view=View.OUTLINE))
    assert [entry.anchor for entry in within.outline or []] == ["configure", "example_1"]


def test_the_hash_leaves_out_only_the_retrieval_time() -> None:
    later = PAGE.replace("2026-12-02T10:00:00Z", "2026-12-02T11:30:00Z")
    assert content_hash(later) == content_hash(PAGE)
    assert content_hash(PAGE.replace("The end.", "The end!")) != content_hash(PAGE)


def read_all(text: str, max_chars: int) -> list[str]:
    parts, offset = [], 0
    while True:
        part, following = cut(text, offset, max_chars)
        parts.append(part)
        if following is None:
            return parts
        assert following > offset
        offset = following


def test_parts_end_at_line_boundaries_and_never_split_a_short_code_block() -> None:
    parts = read_all(PAGE, 60)
    assert "".join(parts) == PAGE
    assert all(part.endswith("\n") for part in parts[:-1])
    fence = PAGE[slice(*structure(PAGE).fences[0])]
    assert any(fence in part for part in parts)  # the 50-character block stays whole


def test_a_code_block_longer_than_a_part_is_cut_inside_it() -> None:
    block = "```text\n" + "".join(f"line {n}\n" for n in range(200)) + "```\n"
    text = "# T\n\nIntro.\n\n" + block + "\nAfter.\n"
    parts = read_all(text, 300)
    assert "".join(parts) == text and max(len(part) for part in parts) <= 300
    assert parts[0] == "# T\n\nIntro.\n\n" + block[: len(parts[0]) - 13]  # filled up to the limit, inside the block


def test_a_line_longer_than_a_part_is_cut_at_a_space_or_anywhere() -> None:
    text = "word " * 100 + "\n" + "x" * 500
    parts = read_all(text, 210)
    assert "".join(parts) == text and parts[0].endswith(" ")


@given(
    st.lists(
        st.sampled_from(["# H\n", "## Sub\n", "text line\n", "```\n", "code\n", "\n", "~~~~\n", "long " * 30 + "\n"]),
        max_size=80,
    ),
    st.integers(min_value=1, max_value=400),
)
def test_any_page_read_in_parts_joins_exactly(lines: list[str], max_chars: int) -> None:
    text = "".join(lines)
    parts = read_all(text, max_chars)
    assert "".join(parts) == text
    assert all(0 < len(part) <= max_chars for part in parts if text)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"offset": -1}, "offset must be a whole number from 0 to"),
        ({"max_chars": 10}, "maxChars must be a whole number of at least 200"),
        ({"view": "summary"}, "view must be one of: content, outline"),
        ({"view": "outline", "offset": 5}, "leave them out with view=outline"),
        ({"section": "  "}, "section must be"),
        ({"section": "a\x00b"}, "section must be"),
    ],
)
def test_a_read_that_makes_no_sense_is_refused(arguments: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        check_read(**arguments)  # type: ignore[arg-type]


def test_a_larger_max_chars_is_taken_as_the_ceiling() -> None:
    assert check_read(max_chars=10_000_000).max_chars == MAX_PART_CHARS
    assert check_read() == Read()


def test_an_offset_past_the_end_is_refused() -> None:
    with pytest.raises(InvalidRequestError, match="past the end"):
        apply(document(), Read(offset=len(PAGE) + 1))
    assert apply(document(), Read(offset=len(PAGE))).content == ""


def test_a_page_of_too_many_lines_is_not_looked_into() -> None:
    from shared.markdown import MAX_LINES

    hostile = "# Title\n" + "```\n#\n" * (MAX_LINES // 2 + 1)
    parsed = structure(hostile)
    assert parsed.headings == () and parsed.fences == ()
    part, following = cut(hostile, 0, 1_000)
    assert following == len(part) and part.endswith("\n")  # still cut at a line boundary


def test_an_early_line_break_before_a_long_line_does_not_leave_the_part_nearly_empty() -> None:
    text = "---\nsource: x\n---\n" + "word " * 20_000 + "\n"
    part, following = cut(text, 0, 1_000)
    assert 900 < len(part) <= 1_000 and part.endswith(" ") and following == len(part)


def test_inline_triple_backticks_open_no_fence() -> None:
    parsed = structure("# A\n\n```inline``` text\n\n## B\n")
    assert [heading.title for heading in parsed.headings] == ["A", "B"] and parsed.fences == ()


def test_a_page_without_headings_says_so_when_a_section_is_asked() -> None:
    with pytest.raises(UnknownSectionError, match="the page has no headings"):
        find_section([], "anything")


def test_a_heading_after_a_no_break_space_is_a_heading() -> None:
    assert [heading.title for heading in structure("#\u00a0Prune\n\ntext\n").headings] == ["Prune"]
