"""MCP answers that fit an agent's context: a page read or a search within `Mcp__AnswerBudgetChars`, with the way on
in its text.

Agents' hosts cap what a tool may answer (one warns at about 10,000 tokens and refuses past 25,000; another cuts
tool output at about 10 KB), and an MCP answer carries the Markdown twice: in its text and in its structured
content. So a read that names no `maxChars` answers as much of the page as fits the budget, measured on the whole
answer as it travels (both copies, JSON-escaped). Whatever is left out, the text says so: how much is left, the
exact next call (`offset=`), and the headings after the cut so the agent can jump to a section instead. The
structured content is the part alone (REST `get`'s fields), so parts join exactly. An explicit `maxChars` is
honoured up to `MAX_PART_CHARS` whatever the budget: a program that asks for more gets it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcp.types import CallToolResult, TextContent

from shared.models import Document, OutlineEntry
from shared.reading import MIN_PART_CHARS, Read, Selection

OUTLINE_SHARE = 6
"""The outline of the rest takes at most a sixth of the budget (the upper levels when all of them would not fit);
every heading is one `view=outline` call away."""
FIT_ATTEMPTS = 8
CLOSE_ENOUGH = 0.95
"""An answer this full is not grown further (each try converts nothing, but renders and measures the answer)."""
HEADROOM = 0.98
"""A part is scaled to a little under the budget: the continuation lines grow a few characters with the numbers."""


def size(result: CallToolResult) -> int:
    """The answer's size as it travels: its JSON with both copies escaped (ASCII-escaped, the longest spelling)."""
    return len(json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True)))


def tool_answer(document: Document, text: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=document.model_dump(mode="json", by_alias=True),
    )


NextCall = Callable[[Document, int, "int | None"], str]
"""How the next part is asked for: a `get_doc` call, or a resource URI to read."""


def next_get_doc(document: Document, offset: int, max_chars: int | None) -> str:
    return _call(document, offset=offset, maxChars=max_chars)


def read_answer(selection: Selection, read: Read, budget: int) -> CallToolResult:
    """The tool answer for a content read: the part asked for, or as much as `budget` holds, saying what is left."""
    if read.max_chars is not None:
        return _answer_for(selection, read.offset, read.max_chars, budget, explicit=True)
    whole = _answer_for(selection, read.offset, None, budget)
    if size(whole) <= budget:
        return whole
    return fit(lambda chars: _answer_for(selection, read.offset, chars, budget), budget)


def _answer_for(
    selection: Selection, offset: int, chars: int | None, budget: int, *, explicit: bool = False
) -> CallToolResult:
    """The part's document, and its text: where the part sits and the next call first (a host that cuts long tool
    output keeps the beginning), the part, then the next call again and the headings after the cut."""
    part = selection.part(offset, chars)
    head, tail = continuation(selection, part, budget, max_chars=chars if explicit else None)
    return tool_answer(part, head + part.content + tail)


def fit(build: Callable[[int], CallToolResult], budget: int) -> CallToolResult:
    """The answer whose part is the longest (to within a few percent) that keeps the answer within `budget`: the
    part's length is scaled by how far the answer is from the budget, shrinking past it and growing short of it."""
    chars = max(MIN_PART_CHARS, budget // 2)
    answer, best, best_chars = build(chars), None, 0
    for _ in range(FIT_ATTEMPTS):
        measured = size(answer)
        if measured <= budget and chars > best_chars:
            best, best_chars = answer, chars
            if measured >= budget * CLOSE_ENOUGH:
                break
        scaled = max(MIN_PART_CHARS, int(chars * budget / measured * HEADROOM))
        if scaled == chars or (best is not None and scaled <= best_chars):
            break
        chars, answer = scaled, build(scaled)
    return best if best is not None else answer


def fit_count(
    build: Callable[[int], CallToolResult], count: int, budget: int, *, keep_at_least: int = 0
) -> CallToolResult:
    """The answer with as many of its `count` items as keep it within `budget` (the first ones: items are best
    first), but never fewer than `keep_at_least`; `build(n)` makes the answer with the first `n`."""
    whole = build(count)
    if size(whole) <= budget:
        return whole
    low, high = min(keep_at_least, count), count - 1
    while low < high:
        middle = (low + high + 1) // 2
        if size(build(middle)) <= budget:
            low = middle
        else:
            high = middle - 1
    return build(low)


def continuation(
    selection: Selection,
    part: Document,
    budget: int,
    *,
    max_chars: int | None = None,
    next_call: NextCall = next_get_doc,
) -> tuple[str, str]:
    """What the text puts before and after a part: nothing for the whole text; else where the part sits, what is
    left and the exact next call (with the `maxChars` the caller chose), and after the part the next call again
    with the headings after the cut."""
    total = len(selection.text)
    end = part.offset + len(part.content)
    if part.offset == 0 and part.next_offset is None:
        return "", ""
    what = "section" if part.section is not None else "page"
    if part.next_offset is None:
        return f"[The end of the {what}: characters {part.offset:,} to {end:,} of {total:,}.]\n\n", ""
    call = next_call(part, part.next_offset, max_chars)
    head = (
        f"[Part of a longer {what}: characters {part.offset:,} to {end:,} of {total:,}, {total - end:,} left. "
        f"Next part: {call}]\n\n"
    )
    lines = [f"\n\n[The {what} continues: {total - end:,} characters left. Next part: {call}]"]
    rest = [entry for entry in selection.outline if entry.offset >= selection.page_offset(part.next_offset)]
    if rest:
        lines.append(f"[Or jump to a section after this part with {_call(part, section='<anchor or title>')}:]")
        lines.extend(_listed(rest, budget // OUTLINE_SHARE, part))
    return head, "\n".join(lines) + "\n"


def outline_answer(selection: Selection, budget: int) -> CallToolResult:
    """The outline as structured content and as an indented list; deeper levels give way when it is over budget."""
    document = selection.outline_only()
    entries = document.outline or []
    for depth in range(6, 1, -1):
        answer = _outline_of(document, [entry for entry in entries if entry.level <= depth], len(entries))
        if size(answer) <= budget:
            return answer
    top = [entry for entry in entries if entry.level <= 1]  # every one, else the most that fit, the rest said left out
    return fit_count(lambda kept: _outline_of(document, top[:kept], len(entries)), len(top), budget)


def _outline_of(document: Document, kept: list[OutlineEntry], total: int) -> CallToolResult:
    shown = document.model_copy(update={"outline": kept})
    return tool_answer(shown, render_outline(shown, kept, dropped=total - len(kept)))


def render_outline(document: Document, entries: list[OutlineEntry], *, dropped: int) -> str:
    what = f"section {document.section!r} of the page" if document.section else "the page"
    lines = [f"Outline of {what} {document.location!r}: {document.total_chars:,} characters, {len(entries)} headings."]
    lines += [_line(entry) for entry in entries]
    if dropped:
        lines.append(
            f"[{dropped:,} headings left out to fit: see a section's with "
            f"{_call(document, section='<anchor>', view='outline')}]"
        )
    lines.append(
        f"Read a section with {_call(document, section='<anchor or title>')}, or the page from a heading on with "
        f"{_call(document, section=None, offset='<page offset>')}."
    )
    return "\n".join(lines)


def _listed(entries: list[OutlineEntry], room: int, document: Document) -> list[str]:
    """The headings as an indented list within `room` characters: every level when they fit, else the upper
    levels only, else the first ones; what is left out is one outline call away."""
    for depth in (6, 3, 2, 1):
        chosen = [entry for entry in entries if entry.level <= depth]
        lines = [_line(entry) for entry in chosen]
        if sum(len(line) + 1 for line in lines) <= room:
            if len(chosen) < len(entries):
                left = len(entries) - len(chosen)
                lines.append(f"  ({left:,} deeper headings: {_call(document, view='outline')} lists every one.)")
            return lines
    lines, used = [], 0
    for number, line in enumerate(lines_ := [_line(entry) for entry in chosen]):
        if used + len(line) > room:
            lines.append(f"  ... and {len(lines_) - number:,} more: {_call(document, view='outline')} lists them.")
            break
        lines.append(line)
        used += len(line) + 1
    return lines


def _line(entry: OutlineEntry) -> str:
    anchor = f"anchor {entry.anchor}, " if entry.anchor else ""
    return f"{'  ' * (entry.level - 1)}- {entry.title} ({anchor}{entry.chars:,} chars, page offset {entry.offset:,})"


def _call(document: Document, **arguments: Any) -> str:
    """A get_doc call as an agent writes it, for this document's location (and section, when one was read and
    `section` is not given as None)."""
    given: dict[str, Any] = {"location": document.location}
    if document.section is not None and "section" not in arguments:
        given["section"] = document.section
    given.update({name: value for name, value in arguments.items() if value is not None})
    rendered = ", ".join(
        f"{name}={value}" if isinstance(value, int) or str(value).startswith("<") else f"{name}={json.dumps(value)}"
        for name, value in given.items()
    )
    return f"get_doc({rendered})"
