"""Code blocks as entries of their own: cut out of a site's index, named by language (pure, no I/O).

Coding agents ask documentation for an example to copy. The published index already carries every block (a
`<pre><code>` in an entry's text, which `index.html_to_text` flattens into prose for page search); here each one
becomes a `CodeBlock` with where it sits (page, section anchor, breadcrumb) and the prose just before it (what it is
for), so code search returns the block itself, not a page to read through.

Its language, canonical (`validation.canonical_language`: `bash` for `sh`, `shell`, `console`, `zsh`; `yaml`
for `yml`; ...):

1. the raw Markdown's fence (`fences`), matched to the block by its normalised text (`code_key`), else by its place
   when the page's fences and blocks line up one to one: what the author wrote (`languages.py` fetches them);
2. else the HTML's class (`language-yaml`), where a theme writes one into the index;
3. else a guess from the text (`guess`), which the answer marks as a guess (`languageGuessed`).

A block of less than `MIN_CHARS` characters or a lone word (an identifier, a one-word prompt) is not an entry.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple, overload

from shared.code_samples import guess
from shared.validation import canonical_language as canonical

if TYPE_CHECKING:
    from shared.providers.mkdocs.scoring.postings import FieldView

MIN_CHARS = 8
"""Blocks shorter than this (stripped) are not entries of their own."""

PROSE_WORDS = 48
"""Words of the prose just before a block kept as what the block is for."""

MAX_BLOCK_CHARS = 100_000
"""A block longer than this is cut here when indexed (a hostile index cannot make one entry unbounded)."""


class CodeBlock(NamedTuple):
    """One code block of a page: where it sits, what is said just before it, its text and its language."""

    location: str
    """The entry's location: the page, with `#anchor` when the block sits in a section."""
    page: str
    anchor: str | None
    title: str
    """The section's title (the page's when the block is in its introduction)."""
    page_title: str
    trail: str
    """The page's navigation trail (`IndexEntry.trail`)."""
    prose: str
    """The last `PROSE_WORDS` words before the block in its section (empty when the block opens it)."""
    code: str
    language: str
    """Canonical, from the HTML's class; empty when the index names none (then `languages.py` names it)."""


def code_key(code: str) -> str:
    """What matches a block in the HTML to its fence in the Markdown: a hash of its words, whitespace aside (a fence
    keeps its indentation and trailing spaces; the HTML may not)."""
    return hashlib.blake2b(" ".join(code.split()).encode(), digest_size=8).hexdigest()


_PRE_OPEN = re.compile(r"<pre\b[^<>]*>", re.I)
_PRE_CLOSE = re.compile(r"</pre\s*>", re.I)
_CODE_OPEN = re.compile(r"<code\b([^<>]*)>", re.I)
_CLASS_LANGUAGE = re.compile(r"""class\s*=\s*["'][^"']*\blanguage-([A-Za-z0-9+#._-]{1,32})""", re.I)
_TAG = re.compile(r"<[^<>]*>")
_BLOCK_TAG = re.compile(r"</?(?:p|div|li|ul|ol|h[1-6]|tr|td|th|table|br|blockquote|dt|dd)\b[^<>]*>", re.I)


def blocks_of(
    raw: str, *, location: str, page: str, anchor: str | None, title: str, page_title: str, trail: str
) -> list[CodeBlock]:
    """The code blocks of one index entry's raw HTML text, in order; linear in the text (each `<pre>` is paired with
    the first `</pre>` after it, found in one pass)."""
    if "<pre" not in raw and "<PRE" not in raw:
        return []
    found: list[CodeBlock] = []
    done = 0
    for opening in _PRE_OPEN.finditer(raw):
        if opening.start() < done:
            continue  # a <pre> inside the previous block
        closing = _PRE_CLOSE.search(raw, opening.end())
        if closing is None:
            break
        inner = raw[opening.end() : closing.start()]
        code = _plain_code(inner)
        if _kept(code):
            language = _class_language(opening.group(0)) or _class_language(_first_code_tag(inner))
            before = _flat(raw[done : opening.start()])
            prose = " ".join(before.split()[-PROSE_WORDS:])
            found.append(CodeBlock(location, page, anchor, title, page_title, trail, prose, code, language))
        done = closing.end()
    return found


def _first_code_tag(inner: str) -> str:
    match = _CODE_OPEN.search(inner)
    return match.group(0) if match else ""


def _class_language(tag: str) -> str:
    match = _CLASS_LANGUAGE.search(tag)
    return canonical(match.group(1)) if match else ""


def _plain_code(inner: str) -> str:
    """A block's text: tags dropped (highlighting spans, the `<code>` itself), entities decoded, lines kept."""
    text = html.unescape(_TAG.sub("", inner))
    text = text.replace("\r\n", "\n").strip("\n")
    return text[:MAX_BLOCK_CHARS].rstrip()


def _flat(fragment: str) -> str:
    return html.unescape(_TAG.sub("", _BLOCK_TAG.sub(" ", fragment)))


def _kept(code: str) -> bool:
    """Whether a block is an entry of its own: not tiny, not a lone word."""
    stripped = code.strip()
    return len(stripped) >= MIN_CHARS and len(stripped.split()) >= 2


# --- The raw Markdown's fences -------------------------------------------------------------------------------

_FENCE = re.compile(r"^(?P<indent>[ \t>]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")
_INFO_NAME = re.compile(r"^\{?\s*\.?([A-Za-z0-9+#._-]{1,32})")


class Fence(NamedTuple):
    """A fenced block of a page's Markdown: its `code_key` and its canonical language (empty when unnamed)."""

    key: str
    language: str


def fences(markdown: str) -> list[Fence]:
    """The fenced code blocks of a Markdown page, in order, at any indentation (admonitions and content tabs indent
    theirs); linear in the page."""
    found: list[Fence] = []
    lines = markdown.replace("\r\n", "\n").split("\n")
    number = 0
    while number < len(lines):
        opening = _FENCE.match(lines[number])
        number += 1
        if opening is None:
            continue
        indent, fence = len(opening.group("indent")), opening.group("fence")
        info = _INFO_NAME.match(opening.group("info").strip())
        body: list[str] = []
        while number < len(lines):
            line = lines[number]
            number += 1
            stripped = line.strip()
            if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
                break
            body.append(line[indent:] if line[:indent].strip(" \t>") == "" else line)
        found.append(Fence(code_key("\n".join(body)), canonical(info.group(1)) if info else ""))
    return found


def fenced_languages(blocks: Sequence[CodeBlock], page_fences: Sequence[Fence]) -> list[str]:
    """Each of one page's blocks' language from its fences: the fence with the same text, else, when the page has as
    many fences as blocks, the fence in the same place; empty where neither names one."""
    by_key = {fence.key: fence.language for fence in page_fences if fence.language}
    aligned = len(page_fences) == len(blocks)
    return [
        canonical(by_key.get(code_key(block.code)) or (page_fences[number].language if aligned else ""))
        for number, block in enumerate(blocks)
    ]


def named(blocks: Sequence[CodeBlock], fenced: Sequence[str]) -> Iterator[tuple[str, bool]]:
    """Each block's language and whether it is a guess: its fence's, else its HTML class's, else `guess`."""
    for block, fence in zip(blocks, fenced, strict=True):
        known = fence or block.language
        yield (known, False) if known else (guess(block.code), True)


class CodeColumns(Sequence[CodeBlock]):
    """A prebuilt site's code blocks: their count at once (stored vectors line up by it), the blocks themselves once
    the site's first code search has read them (`fill`: from the prebuilt ranker's code part, with the BM25F view
    stored beside them, or from the index). Until then asking for a block is a programming error (`CodeNotRead`):
    whatever reads blocks of a prebuilt site reads its code part first (`SiteRegistry.code_side`)."""

    __slots__ = ("_blocks", "_count", "view")

    def __init__(self, count: int) -> None:
        self._count = count
        self._blocks: Sequence[CodeBlock] | None = None
        self.view: FieldView | None = None
        """The blocks' stored BM25F view (built with the default code parameters), if any."""

    @property
    def read(self) -> bool:
        return self._blocks is not None

    def fill(self, blocks: Sequence[CodeBlock], view: FieldView | None = None) -> None:
        """The blocks, read; ValueError when they are not as many as the count (the count stays what it was)."""
        if len(blocks) != self._count:
            raise ValueError(f"{len(blocks)} code blocks where {self._count} were counted")
        self._blocks, self.view = blocks, view

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, key: int) -> CodeBlock: ...

    @overload
    def __getitem__(self, key: slice) -> Sequence[CodeBlock]: ...

    def __getitem__(self, key: int | slice) -> CodeBlock | Sequence[CodeBlock]:
        if self._blocks is None:
            raise CodeNotRead("the site's code blocks were not read")
        return self._blocks[key]


class CodeNotRead(RuntimeError):
    """A prebuilt site's code blocks were asked for before its code part was read."""
