"""The structure of a page's Markdown: front matter, headings and fenced code blocks, found in one linear pass (pure).

One front matter grammar serves reads and the front matter `get` adds (`with_front_matter`).

Reads (`shared.reading`) cut pages at line boundaries outside code blocks and map the search index's sections to
headings; both need to know where these are without rendering the Markdown. Only what a cut or an outline needs is
recognised: ATX headings (`## Title`), setext headings (a line under `===` or `---`), and fences of three or more
backticks or tildes (closed by a run of the same character at least as long; an unclosed fence runs to the end).
Lines longer than `MAX_HEADING_LINE` are never headings, so no per-line work grows with a hostile line's length, and
a page of more than `MAX_LINES` lines is not looked into at all (it reads as one section, cut at line boundaries).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

MAX_LINES = 20_000
"""A page with more lines than this is read as having no headings and no fences: finding them is a Python loop per
line on the request's path, and a hostile page must not hold it (the sample corpus's longest page has 1,531 lines,
4 ms; 20,000 lines take about 30 ms)."""
MAX_HEADING_LINE = 1_000
"""A longer line is never taken as a heading (no documentation heading is this long)."""

MAX_TITLE = 200
"""Heading text past this many characters is left out of its title (and of the work to clean it)."""

_ATX = re.compile(r" {0,3}(#{1,6})(?:[^\S\r\n]|\r?\n?\Z)")
"""`#` to `######`, then any space (a no-break space too, as Python-Markdown reads it) or the line's end."""
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*\r?\n?\Z")
_ATTR_LIST = re.compile(r"\s*\{[^{}]*\}\s*\Z")
_LINK = re.compile(r"!?\[([^\[\]]*)\](?:\([^()]*\)|\[[^\[\]]*\])")
_TAG = re.compile(r"<[^<>]*>")
_NOT_PARAGRAPH = re.compile(r" {0,3}(?:[-*+>|#]|\d+[.)]|```|~~~|<)")


@dataclass(frozen=True, slots=True)
class Heading:
    start: int
    """Offset of the heading's first line."""
    level: int
    title: str
    """The heading's text as a reader sees it: no `#` marks, attribute list, link targets or tags."""


@dataclass(frozen=True, slots=True)
class Structure:
    body_start: int
    """Where the content after the front matter starts (0 without front matter)."""
    headings: tuple[Heading, ...]
    fences: tuple[tuple[int, int], ...]
    """Each fenced code block as [start, end): its opening line to the end of its closing line."""

    def fence_around(self, position: int) -> tuple[int, int] | None:
        """The fenced block `position` falls strictly inside (after its first character), if any."""
        low, high = 0, len(self.fences)
        while low < high:  # the last fence starting before `position`
            middle = (low + high) // 2
            if self.fences[middle][0] < position:
                low = middle + 1
            else:
                high = middle
        if low and self.fences[low - 1][1] > position:
            return self.fences[low - 1]
        return None


def _lines(text: str, start: int = 0) -> list[tuple[int, int]]:
    """Each line of `text` from `start` as [start, end), its newline included; only `\\n` ends a line."""
    spans = []
    position, size = start, len(text)
    while position < size:
        newline = text.find("\n", position)
        end = size if newline < 0 else newline + 1
        spans.append((position, end))
        position = end
    return spans


def front_matter_end(text: str) -> int:
    """Where the front matter block (`---` lines at the very start) ends, or 0 when there is none."""
    lines = _lines(text[: min(len(text), 64 * 1024)])
    if not lines or text[lines[0][0] : lines[0][1]].strip() != "---":
        return 0
    for start, end in lines[1:]:
        if text[start:end].strip() == "---":
            return end
    return 0


def with_front_matter(markdown: str, fields: dict[str, str]) -> str:
    """`fields` first in the page's front matter: merged into its own block when it has one (whose keys of the same
    names, and their continuation lines, give way, so each key appears once), else a new block before the page."""
    body = markdown.lstrip("\ufeff")
    end = front_matter_end(body)
    inside = body[:end].splitlines()[1:-1]
    if inside and not inside[-1]:  # the line break before the closing `---` belongs to it, not to a blank line
        inside.pop()
    theirs = _without_keys(inside, set(fields))
    header = "".join(f"{key}: {value}\n" for key, value in fields.items()) + "".join(f"{line}\n" for line in theirs)
    return f"---\n{header}---\n{body[end:]}" if end else f"---\n{header}---\n\n{body}"


def _without_keys(lines: list[str], keys: set[str]) -> list[str]:
    """Front matter lines without the top-level `keys` and the indented or list lines that continue them."""
    kept: list[str] = []
    dropping = False
    for line in lines:
        top_level = bool(line) and not line[0].isspace() and not line.startswith("- ")
        if top_level:
            dropping = line.split(":", 1)[0].strip() in keys
        if not dropping:
            kept.append(line)
    return kept


def _fence_mark(line: str) -> tuple[str, int] | None:
    stripped = line.lstrip(" \t")
    if not stripped.startswith(("```", "~~~")):
        return None
    char = stripped[0]
    run = len(stripped) - len(stripped.lstrip(char))
    if char == "`" and "`" in stripped[run:]:
        return None  # ```inline``` code: a backtick fence's info string has no backtick (CommonMark)
    return char, run


def _without_closing(rest: str) -> str:
    """An ATX heading's text without its optional closing `#` run (which must follow a space)."""
    text = rest.strip()
    bare = text.rstrip("#")
    if bare != text and (not bare or bare[-1] in " \t"):
        return bare.rstrip()
    return text


def heading_title(raw: str) -> str:
    """A heading's text without its attribute list (`{ #id }`), link targets, inline tags and entities."""
    text = _ATTR_LIST.sub("", raw[:MAX_TITLE])
    text = _LINK.sub(r"\1", text)
    text = html.unescape(_TAG.sub("", text))
    return " ".join(text.replace("`", "").split())


def title_key(title: str) -> str:
    """What two spellings of one heading share: letters and digits, case-folded, single-spaced."""
    folded = heading_title(title).casefold()
    return " ".join("".join(char if char.isalnum() else " " for char in folded).split())


def structure(text: str) -> Structure:
    """The front matter's end, the headings and the fenced blocks of `text`, in one pass over its lines."""
    body_start = front_matter_end(text)
    headings: list[Heading] = []
    fences: list[tuple[int, int]] = []
    if text.count("\n", body_start) > MAX_LINES:
        return Structure(body_start, (), ())
    fence: tuple[str, int, int] | None = None  # character, run length, start
    previous: tuple[int, str] | None = None  # the last line, when it could be a setext heading's text
    for start, end in _lines(text, body_start):
        line = text[start:end]
        mark = _fence_mark(line) if end - start <= MAX_HEADING_LINE else None
        if fence is not None:
            if mark is not None and mark[0] == fence[0] and mark[1] >= fence[1] and not line.strip(" \t\r\n`~"):
                fences.append((fence[2], end))
                fence = None
            continue
        if mark is not None:
            fence, previous = (mark[0], mark[1], start), None
            continue
        if end - start > MAX_HEADING_LINE:
            previous = None
            continue
        atx = _ATX.match(line)
        if atx is not None:
            headings.append(Heading(start, len(atx.group(1)), heading_title(_without_closing(line[atx.end() :]))))
            previous = None
            continue
        setext = _SETEXT.match(line)
        if setext is not None and previous is not None:
            level = 1 if setext.group(1).startswith("=") else 2
            headings.append(Heading(previous[0], level, heading_title(previous[1])))
            previous = None
            continue
        paragraph = line.strip() and not _NOT_PARAGRAPH.match(line)
        previous = (start, line) if paragraph else None
    if fence is not None:
        fences.append((fence[2], len(text)))
    return Structure(body_start, tuple(headings), tuple(fences))
