"""One linear pass over HTML the origin served, before any parser sees it: tags found, stray `<` escaped (pure).

Python's `html.parser` (under BeautifulSoup) and a tag regex such as `<[^>]*>` are quadratic on markup that never
closes: 80 KB of `<a` took 23 s, and 400,000 `<` in one index entry 45 s, each holding a core and, for a regex,
the GIL for the whole call. This scanner walks the page once, jumping with `str.find` whose every search starts
after the last one's result (so the characters searched add up to a few times the page), and leaves only markup
that closes where a parser will look for its end:

- a `<` that does not open a tag, comment or declaration closed by a `>` before the next `<` (or whose quotes do
  not pair) is escaped as `&lt;`: a parser then reads it as the text it is;
- a comment runs to its `-->`, a `<script>` or `<style>` to its end tag; one that never closes is escaped too, and
  so is every marked section (`<![CDATA[`), which MkDocs pages do not use and the parser searches quadratically;
- a page with more `<` than `MAX_TAGS` (ten times the densest page of the sample corpus) or nesting deeper than
  `MAX_DEPTH` is refused with a reason, before any work per tag.

`steps` counts the loop's turns and the searches it made, so tests can show the work grows with the input, not its
square, without timing anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.errors import Unconvertible

MAX_TAGS = 100_000
"""More `<` than this is refused (the densest page of the sample corpus has 9,741)."""
MAX_DEPTH = 256
"""Element nesting beyond this is refused (the converter recurses per level; real pages stay under 40)."""
VOID = frozenset(
    ("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr")
)
"""Elements with no end tag."""
RAW_TEXT = frozenset(("script", "style"))
"""Elements whose content is not markup: a parser looks for their end tag only."""


@dataclass(slots=True)
class _Finder:
    """`str.find` of one token whose searches only move forward: a result is reused until the cursor passes it,
    and a miss is final, so the characters searched add up to about the page's length per token."""

    page: str
    token: str
    found: int = -2
    steps: list[int] = field(default_factory=lambda: [0])

    def at_or_after(self, start: int) -> int:
        if self.found == -1 or self.found >= start:
            return self.found
        self.steps[0] += 1
        self.found = self.page.find(self.token, start)
        return self.found


@dataclass(frozen=True, slots=True)
class Scanned:
    html: str
    """The page with its stray `<` escaped: safe to hand to a parser."""
    tags: int
    escaped: int
    depth: int
    steps: int
    """Loop turns and searches made: the scan's own measure of its work."""


def scan(page: str) -> Scanned:
    """The page made safe to parse; Unconvertible when it is too dense or nests too deep."""
    if page.count("<") > MAX_TAGS:
        raise Unconvertible(f"the page has more than {MAX_TAGS:,} '<'")
    steps = [0]
    lt, gt, comment_end = (_Finder(page, token, steps=steps) for token in ("<", ">", "-->"))
    raw_end = {name: _Finder(page, f"</{name}", steps=steps) for name in RAW_TEXT}
    html_out: list[str] = []
    emitted = cursor = tags = escaped = depth = deepest = 0

    def escape(at: int) -> None:
        nonlocal emitted, escaped
        html_out.append(page[emitted:at])
        html_out.append("&lt;")
        emitted, escaped = at + 1, escaped + 1

    while (start := lt.at_or_after(cursor)) >= 0:
        steps[0] += 1
        if page.startswith("<!--", start):
            end = comment_end.at_or_after(start + 4)
            if end < 0:
                escape(start)
                cursor = start + 1
            else:
                cursor = end + 3
            continue
        close, following = gt.at_or_after(start + 1), lt.at_or_after(start + 1)
        inner = page[start + 1 : close] if close >= 0 and not 0 <= following < close else None
        name, kind = _tag(inner) if inner is not None else ("", "")
        if not kind:
            escape(start)
            cursor = start + 1
            continue
        tags += 1
        cursor = close + 1
        if kind == "open" and name in RAW_TEXT:
            end = raw_end[name].at_or_after(cursor)
            if end < 0:
                escape(start)
                cursor = start + 1
                continue
            cursor = end
        elif kind == "open" and name not in VOID:
            depth += 1
            deepest = max(deepest, depth)
            if depth > MAX_DEPTH:
                raise Unconvertible(f"the page nests elements more than {MAX_DEPTH} deep")
        elif kind == "close" and name not in VOID:
            depth = max(0, depth - 1)
    html_out.append(page[emitted:])
    return Scanned("".join(html_out), tags, escaped, deepest, steps[0])


def _tag(inner: str) -> tuple[str, str]:
    """The tag's name and kind (`open`, `close`, `self`, `other` for a declaration), or ("", "") when `inner` (what
    lies between `<` and `>`) is no tag a parser would close at that `>`."""
    if not inner or inner.startswith("!["):
        return "", ""  # a marked section (`<![CDATA[`): the parser searches for its `]]>` from every one
    if inner[0] in "!?":
        return "", "other"
    closing = inner[0] == "/"
    body = inner[1:] if closing else inner
    if not body[:1].isascii() or not body[:1].isalpha():
        return "", ""
    unquoted = body.split('"')[::2]
    if body.count('"') % 2 or sum(part.count("'") for part in unquoted) % 2:
        return "", ""  # an unpaired quote would make a parser look for its pair past this `>`
    name = body.split(None, 1)[0].rstrip("/").lower() if body.strip() else ""
    if not name.replace("-", "").replace(":", "").isalnum():
        return "", ""
    if closing:
        return name, "close"
    return name, "self" if body.rstrip().endswith("/") else "open"
