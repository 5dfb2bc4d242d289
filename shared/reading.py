"""Reads that fit a reader's context: a page's outline, one section, or a part cut at a line boundary (pure).

One read model for REST, MCP and the CLI (`docs/api/get.md`):

- `section` names a heading by the anchor the search index gives it, or by its text (case- and
  whitespace-insensitive); the answer is that section with its subsections, after the page's front matter. Anchors
  come from the index's own section entries, matched to the Markdown's headings in order by their text
  (`outline`), never by re-slugifying the Markdown.
- `offset`/`maxChars` cut a part of the page (or of the section) at a line boundary, never inside a fenced code
  block unless the block alone is longer than the part; `nextOffset` continues it, and the parts join to exactly
  the whole text.
- `view=outline` answers the headings with their sizes instead of the body.
- `contentHash` is the whole page's, without its `retrieved` line, so parts read from two instances (or a minute
  apart) can be checked for coming from one version.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from shared.errors import InvalidRequestError
from shared.markdown import Structure, front_matter_end, structure, title_key
from shared.models import Document, OutlineEntry, View

MAX_PART_CHARS = 100_000
"""The most characters one read returns when `maxChars` asks for more (a larger `maxChars` is taken as this): the
sample corpus's longest page (99,329) fits in one read; a program reads anything longer with `nextOffset`."""
MIN_PART_CHARS = 200
MAX_OFFSET = 100_000_000
MAX_SECTION_LENGTH = 512
SECTION_REFUSED = f"section must be a section anchor or heading text of 1 to {MAX_SECTION_LENGTH} characters"
OFFSET_REFUSED = f"offset must be a whole number from 0 to {MAX_OFFSET:,}"
MAX_CHARS_REFUSED = (
    f"maxChars must be a whole number of at least {MIN_PART_CHARS} (at most {MAX_PART_CHARS:,} characters are returned)"
)
ALIGN_WINDOW = 64
"""How far ahead of the last matched heading an index section is looked for (sections the Markdown lacks are
skipped, and a hostile page cannot make alignment quadratic)."""


@dataclass(frozen=True, slots=True)
class Read:
    """What a caller asked of a page; the defaults read it whole."""

    section: str | None = None
    offset: int = 0
    max_chars: int | None = None
    view: View = View.CONTENT

    @property
    def needs_outline(self) -> bool:
        return self.section is not None or self.view is View.OUTLINE


WHOLE = Read()
"""The whole page, as a read with no parameters asks."""


def check_read(
    *, section: str | None = None, offset: int | None = None, max_chars: int | None = None, view: str | None = None
) -> Read:
    """The read a caller asked for, or InvalidRequestError saying what is wrong with it."""
    if section is not None:
        section = section.strip()
        if not section or len(section) > MAX_SECTION_LENGTH or any(ord(char) < 32 for char in section):
            raise InvalidRequestError(SECTION_REFUSED)
    try:
        chosen = View(view or View.CONTENT)
    except ValueError:
        raise InvalidRequestError("view must be one of: content, outline") from None
    if offset is not None and not 0 <= offset <= MAX_OFFSET:
        raise InvalidRequestError(OFFSET_REFUSED)
    if max_chars is not None and max_chars < MIN_PART_CHARS:
        raise InvalidRequestError(MAX_CHARS_REFUSED)
    if chosen is View.OUTLINE and (offset or max_chars is not None):
        raise InvalidRequestError("offset and maxChars read content: leave them out with view=outline")
    limited = None if max_chars is None else min(max_chars, MAX_PART_CHARS)
    return Read(section=section, offset=offset or 0, max_chars=limited, view=chosen)


def content_hash(markdown: str) -> str:
    """SHA-256 of the page's Markdown without the front matter's `retrieved` line (it changes per retrieval)."""
    end = front_matter_end(markdown)
    head = "".join(line for line in markdown[:end].splitlines(keepends=True) if not line.startswith("retrieved:"))
    return hashlib.sha256((head + markdown[end:]).encode("utf-8")).hexdigest()


def outline(
    markdown: str, sections: Sequence[tuple[str, str]], *, parsed: Structure | None = None
) -> list[OutlineEntry]:
    """The page's headings with their sizes, each given the anchor of the index section with the same text.

    `sections` are the index's section entries of this page, in index order, as (anchor, title). They are matched
    to headings in order, each to the next heading with the same text (`title_key`); a section with no such
    heading close ahead is skipped, and a heading no section matched has no anchor.
    """
    parsed = parsed or structure(markdown)
    headings = parsed.headings
    anchors: list[str | None] = [None] * len(headings)
    titles = [heading.title for heading in headings]
    keys = [title_key(heading.title) for heading in headings]
    cursor = 0
    for anchor, title in sections:
        wanted = title_key(title)
        for index in range(cursor, min(len(headings), cursor + ALIGN_WINDOW)):
            if keys[index] == wanted and wanted:
                anchors[index], titles[index], cursor = anchor, title, index + 1
                break
    ends = _section_ends(parsed, len(markdown))
    return [
        OutlineEntry(title=titles[i], anchor=anchors[i], level=h.level, chars=ends[i] - h.start, offset=h.start)
        for i, h in enumerate(headings)
    ]


def _section_ends(parsed: Structure, size: int) -> list[int]:
    """Where each heading's section ends: at the next heading of the same or a higher level (a stack, one pass)."""
    ends = [size] * len(parsed.headings)
    open_sections: list[int] = []
    for index, heading in enumerate(parsed.headings):
        while open_sections and parsed.headings[open_sections[-1]].level >= heading.level:
            ends[open_sections.pop()] = heading.start
        open_sections.append(index)
    return ends


def find_section(entries: Sequence[OutlineEntry], wanted: str) -> OutlineEntry:
    """The heading `wanted` names: an anchor (a leading `#` allowed), else a heading's text, case- and
    whitespace-insensitive, else its letters and digits. UnknownSectionError when none or several match."""
    name = wanted.strip().removeprefix("#")
    spaced, key = " ".join(name.split()).casefold(), title_key(name)
    for matches in (
        [e for e in entries if e.anchor == name],
        [e for e in entries if " ".join(e.title.split()).casefold() == spaced],
        [e for e in entries if e.anchor and e.anchor.lower() == name.lower()],
        [e for e in entries if key and title_key(e.title) == key],
    ):
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise UnknownSectionError(
                f"several sections are titled {matches[0].title!r}: name one by its anchor or read from its offset",
                matches,
            )
    if not entries:
        raise UnknownSectionError("the page has no headings: read it whole, or in parts with offset and maxChars", [])
    raise UnknownSectionError("the page has no such section; name one of its sections", entries)


class UnknownSectionError(InvalidRequestError):
    """`section` names no heading of the page (or several): a 400 listing the sections to choose from."""

    def __init__(self, message: str, sections: Sequence[OutlineEntry]) -> None:
        super().__init__(message)
        self.sections = list(sections)


def section_text(markdown: str, entry: OutlineEntry) -> str:
    """The page's front matter, a blank line, then the section with its subsections."""
    end = front_matter_end(markdown)
    body = markdown[entry.offset : entry.offset + entry.chars]
    return f"{markdown[:end]}\n{body}" if end else body


def cut(text: str, offset: int, max_chars: int, *, parsed: Structure | None = None) -> tuple[str, int | None]:
    """The part of `text` from `offset`, at most `max_chars` long, and where the next part starts (None at the end).

    The part ends at a line boundary, moved back to the start of a fenced code block it would split unless that
    block alone is longer than `max_chars`. When the last line boundary would leave the part less than half full (a
    line longer than the rest of the part follows), it ends at that line's last space that fits, else anywhere.
    """
    if offset > len(text):
        raise InvalidRequestError(f"offset {offset} is past the end of the text ({len(text)} characters)")
    limit = offset + max_chars
    if limit >= len(text):
        return text[offset:], None
    end = text.rfind("\n", offset, limit) + 1
    if end <= offset or end - offset < max_chars // 2:  # no line break, or an early one before a long line
        space = text.rfind(" ", max(end, offset), limit) + 1
        end = space if space > max(end, offset) else end if end > offset else limit
        return text[offset:end], end
    fence = (parsed or structure(text)).fence_around(end)
    if fence is not None and fence[0] > offset and fence[1] - fence[0] <= max_chars:
        end = fence[0]
    return text[offset:end], end


@dataclass(frozen=True, slots=True)
class Selection:
    """A page narrowed to what a read names (the page or one section), ready to be cut into parts."""

    document: Document
    text: str
    parsed: Structure
    outline: list[OutlineEntry]
    """The headings of `text` (page offsets): the whole outline, or the section's."""
    fields: dict[str, object]

    def part(self, offset: int, max_chars: int | None) -> Document:
        """The document carrying the part of `text` from `offset` (to the end when `max_chars` is None)."""
        if max_chars is None:
            if offset > len(self.text):
                raise InvalidRequestError(f"offset {offset} is past the end of the text ({len(self.text)} characters)")
            part, following = self.text[offset:], None
        else:
            part, following = cut(self.text, offset, max_chars, parsed=self.parsed)
        update = {**self.fields, "content": part, "offset": offset, "next_offset": following}
        return self.document.model_copy(update=update)

    def outline_only(self) -> Document:
        return self.document.model_copy(update={**self.fields, "content": "", "outline": self.outline, "offset": 0})

    def page_offset(self, position: int) -> int:
        """A position in `text` as an offset in the whole page (they differ for a section, after its front matter)."""
        if self.fields.get("section") is None:
            return position
        head = front_matter_end(self.document.content)
        start = self.outline[0].offset if self.outline else 0
        return start + max(0, position - (head + 1 if head else 0))


def select(document: Document, read: Read) -> Selection:
    """The page or the section `read` names, with the page's contentHash and the text's totalChars. Without
    `document.outline` (a provider that was not asked for it) the headings come from the Markdown, without anchors."""
    page = document.content
    entries = document.outline if document.outline is not None else outline(page, [])  # headings, without anchors
    fields: dict[str, object] = {"content_hash": content_hash(page), "outline": None, "section": None}
    text = page
    if read.section is not None:
        entry = find_section(entries, read.section)
        text = section_text(page, entry)
        fields["section"] = entry.anchor or entry.title
        entries = [e for e in entries if entry.offset <= e.offset < entry.offset + entry.chars]
    fields["total_chars"] = len(text)
    return Selection(document, text, structure(text), entries, fields)


def apply(document: Document, read: Read) -> Document:
    """The document as `read` asks: whole, a section, a part, or the outline."""
    return shaped(select(document, read), read)


def shaped(selection: Selection, read: Read) -> Document:
    """A selection (`select`) as `read` asks: whole, a part, or the outline."""
    if read.view is View.OUTLINE:
        return selection.outline_only()
    return selection.part(read.offset, read.max_chars)
