"""Page text an agent reads with its tools at hand, without what can carry instructions unseen (pure).

Documentation is third-party text: instructions can ride in it where the person who reviews the page never sees
them. What an MCP answer leaves out (REST `get` keeps the page as published):

- invisible characters, anywhere: Unicode tag characters (U+E0000-U+E007F), bidirectional overrides, embeddings,
  isolates and marks, and zero-width characters (spaces, joiners, the word joiner, a byte-order mark inside text);
- outside fenced code blocks: HTML comments, and HTML elements that are not shown: `hidden`, `aria-hidden="true"`,
  or `display:none` / `visibility:hidden` in their `style` (with everything inside them).

A page converted from HTML never carries hidden elements (`fetching.convert` leaves them out for everyone); its
comments never survive conversion either. `clean` also says where text was removed, so the page's outline is moved
to the cleaned text's offsets (`moved`) and parts of the cleaned page join exactly to it.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from shared.models import Document

INVISIBLE = re.compile(
    "[\U000e0000-\U000e007f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u200b-\u200d\u2060\u2061-\u2064\ufeff]+"
)
"""Tag characters; LRE, RLE, PDF, LRO, RLO; LRI, RLI, FSI, PDI; LRM, RLM, ALM; ZWSP, ZWNJ, ZWJ; WJ and the
invisible operators; ZWNBSP (BOM)."""
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)
COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
HIDDEN_TAG = re.compile(
    r"<(?P<tag>[a-zA-Z][a-zA-Z0-9-]*)\b(?P<attrs>[^<>]*?"
    r"(?:\shidden(?=[\s=/>])|\saria-hidden\s*=\s*[\"']?true|\sstyle\s*=\s*[\"'][^\"']*"
    r"(?:display\s*:\s*none|visibility\s*:\s*hidden))[^<>]*)>",
    re.IGNORECASE,
)
VOID = frozenset({"area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"})


@dataclass(frozen=True, slots=True)
class Cleaned:
    text: str
    removed: int
    """Characters left out."""
    spans: tuple[tuple[int, int], ...]
    """The ranges of the original text left out, in order, never overlapping."""


def clean(markdown: str) -> Cleaned:
    """`markdown` without invisible characters, HTML comments and hidden HTML elements (code fences keep their
    comments and markup: they are code)."""
    spans: list[tuple[int, int]] = [match.span() for match in INVISIBLE.finditer(markdown)]
    for start, end in _prose(markdown):
        spans += [(start + a, start + b) for a, b in _hidden(markdown[start:end])]
    merged = _merged(spans)
    kept, at = [], 0
    for start, end in merged:
        kept.append(markdown[at:start])
        at = end
    kept.append(markdown[at:])
    return Cleaned("".join(kept), sum(end - start for start, end in merged), tuple(merged))


def moved(cleaned: Cleaned, offset: int) -> int:
    """Where `offset` of the original text is in the cleaned text (a removed character's: where its span was)."""
    ends = [end for _, end in cleaned.spans]
    before = bisect.bisect_right(ends, offset)
    shift = sum(end - start for start, end in cleaned.spans[:before])
    if before < len(cleaned.spans) and cleaned.spans[before][0] < offset:
        shift += offset - cleaned.spans[before][0]
    return offset - shift


def _prose(markdown: str) -> list[tuple[int, int]]:
    """The ranges outside fenced code blocks (a fence closes on a line of at least as many of its character)."""
    ranges, at, opened = [], 0, None
    for match in FENCE.finditer(markdown):
        marker = match.group(1)
        if opened is None:
            ranges.append((at, match.start()))
            opened = marker
        elif marker[0] == opened[0] and len(marker) >= len(opened):
            line_end = markdown.find("\n", match.end())
            at = len(markdown) if line_end < 0 else line_end + 1
            opened = None
    if opened is None:
        ranges.append((at, len(markdown)))
    return ranges


def _hidden(text: str) -> list[tuple[int, int]]:
    """The comments and hidden elements of `text` (an element through its matching close tag, nested ones of the
    same name counted; one never closed: to the end of its paragraph)."""
    found = [match.span() for match in COMMENT.finditer(text)]
    for match in HIDDEN_TAG.finditer(text):
        tag = match.group("tag").lower()
        if tag in VOID or match.group(0).endswith("/>"):
            found.append(match.span())
            continue
        found.append((match.start(), _close(text, tag, match.end())))
    return found


def _close(text: str, tag: str, start: int) -> int:
    depth = 1
    pattern = re.compile(rf"<(/?){re.escape(tag)}\b[^<>]*>", re.IGNORECASE)
    for match in pattern.finditer(text, start):
        depth += -1 if match.group(1) else 1
        if depth == 0:
            return match.end()
    paragraph = text.find("\n\n", start)
    return len(text) if paragraph < 0 else paragraph


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        elif end > start:
            merged.append((start, end))
    return merged


def cleaned(document: Document) -> Document:
    """`document` as an agent reads it: its content `clean`ed, its outline at the cleaned offsets, and how many
    characters were left out (`removedCharacters`, 0 when nothing was)."""
    result = clean(document.content)
    outline = document.outline
    if outline is not None and result.removed:
        outline = [
            entry.model_copy(
                update={
                    "offset": moved(result, entry.offset),
                    "chars": moved(result, entry.offset + entry.chars) - moved(result, entry.offset),
                }
            )
            for entry in outline
        ]
    updated = {"content": result.text, "outline": outline, "removed_characters": result.removed}
    kept = document.model_copy(update=updated)
    return kept.fresh_until(document.fresh_for)
