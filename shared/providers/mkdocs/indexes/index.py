"""Parse a site's `search_index.json` into entries and canonical pages (pure, no I/O)."""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple
from urllib.parse import unquote

from shared.errors import IndexFormatError
from shared.paths import SURROGATE, escapes
from shared.providers.mkdocs.codeblocks.code import CodeBlock, blocks_of
from shared.validation import MAX_LOCATION_LENGTH

_TAG = re.compile(r"<[^<>]*>")
"""A tag: a `<` and the characters to its `>`, never across another `<`, so each character is looked at once from
the `<` before it (`<[^>]*>` looks at the rest of the entry from every `<` of a run that never closes)."""
_BLOCK_TAG = re.compile(r"</?(?:p|div|li|ul|ol|pre|h[1-6]|tr|td|th|table|br|blockquote|dt|dd)\b[^<>]*>", re.I)


class IndexEntry(NamedTuple):
    """One entry of the index: a page (`anchor` is None) or one of its sections.

    A named tuple rather than a frozen dataclass: as immutable, and made in a third of the time, which a cold
    instance pays for every entry of every site it loads (`artifact.loads`)."""

    location: str
    page: str
    anchor: str | None
    title: str
    page_title: str
    text: str
    boost: float
    trail: str = ""
    """The page's navigation trail, its sections' titles joined by `TRAIL_SEPARATOR`, the page's own title last, when
    the index gives one (a Zensical index's `path`); empty for MkDocs indexes, which give none."""

    @property
    def trail_titles(self) -> tuple[str, ...]:
        """The navigation sections above the page (its trail less the page itself)."""
        parts = self.trail.split(TRAIL_SEPARATOR) if self.trail else []
        return tuple(part for part in parts[:-1] if part)


TRAIL_SEPARATOR = "\x1f"
"""Between the titles of a navigation trail (the unit separator: no title holds it)."""


class IndexFormat(StrEnum):
    """Which generator's search index a site publishes."""

    MKDOCS = "mkdocs"
    """MkDocs' search plugin: `search/search_index.json`, `{"config", "docs": [{"location", "title", "text"}]}`."""
    ZENSICAL = "zensical"
    """Zensical: `search.json` at the site root, `{"config", "items": [{"location", "level", "title", "text", "path",
    "tags"}]}`, `path` the page's navigation trail."""


@dataclass(frozen=True, slots=True)
class Page:
    """A canonical page: the first entry seen for a page path wins."""

    path: str
    title: str

    @property
    def key(self) -> str:
        return page_key(self.path)

    @property
    def leaf(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def lookup(self) -> str:
        """The key as requests spell it: MkDocs percent-encodes locations (`caf%C3%A9/`), requests arrive decoded."""
        return unquote(self.key)


class PagedEntries(NamedTuple):
    """A page as a prebuilt ranker gives it (`SiteIndex.build`'s `paged`): its path and title, its entries' numbers
    in index order and its estimated Markdown length."""

    page: str
    page_title: str
    numbers: list[int]
    chars: int


class Lookups(NamedTuple):
    """A site's canonical pages by decoded, lower-cased key and by leaf, and its top directories: what resolution
    compares a location with."""

    by_key: dict[str, list[Page]]
    by_leaf: dict[str, list[Page]]
    top_dirs: frozenset[str]


@dataclass(slots=True)
class SiteIndex:
    """A loaded site: its entries in index order and lookups over its canonical pages (by decoded, lower-cased key
    and leaf, made by the first resolution that asks: a search needs none of them)."""

    site: str
    entries: Sequence[IndexEntry]
    """A list when parsed here; `EntryColumns` when loaded from a prebuilt ranker."""
    pages: list[Page]
    page_chars: dict[str, int] = field(default_factory=dict)
    """Each page's estimated Markdown length (`estimated_chars`)."""
    members: dict[str, list[int]] | None = None
    """Each page's entry numbers in index order, when known (`page_groups`): a page's entries without a pass over
    all of them."""
    format: IndexFormat = IndexFormat.MKDOCS
    code: Sequence[CodeBlock] = ()
    """The code blocks of its entries, in index order (`code.py`): what code search ranks."""
    _lookups: Lookups | None = field(default=None, compare=False, repr=False)

    @property
    def by_key(self) -> dict[str, list[Page]]:
        return self.lookups().by_key

    @property
    def by_leaf(self) -> dict[str, list[Page]]:
        return self.lookups().by_leaf

    @property
    def top_dirs(self) -> frozenset[str]:
        return self.lookups().top_dirs

    def lookups(self) -> Lookups:
        """The pages' lookups, made once (a cold instance at eight times the sample corpus spent about 40 ms of its
        first search making them for 25 sites when every load made them)."""
        made = self._lookups
        if made is None:
            by_key: dict[str, list[Page]] = {}
            by_leaf: dict[str, list[Page]] = {}
            for page in self.pages:
                lookup = page.lookup
                by_key.setdefault(lookup.lower(), []).append(page)
                if lookup:
                    by_leaf.setdefault(lookup.rsplit("/", 1)[-1].lower(), []).append(page)
            made = self._lookups = Lookups(by_key, by_leaf, frozenset(key.split("/", 1)[0] for key in by_key if key))
        return made

    def entries_of(self, page: str) -> list[IndexEntry]:
        """The page's entries in index order."""
        if self.members is None:
            self.members = _members(self.entries)
        return [self.entries[number] for number in self.members.get(page, [])]

    def sections(self, page: str) -> list[tuple[str, str]]:
        """The page's section entries in index order, as (anchor, title): what its headings' anchors are."""
        return [(entry.anchor, entry.title) for entry in self.entries_of(page) if entry.anchor is not None]

    @classmethod
    def build(
        cls,
        site: str,
        entries: Sequence[IndexEntry],
        *,
        paged: Sequence[PagedEntries] | None = None,
        format: IndexFormat = IndexFormat.MKDOCS,
        code: Sequence[CodeBlock] = (),
    ) -> SiteIndex:
        """The index over `entries`. `paged` (pages in index order), when a prebuilt ranker gives it
        (`artifact.loads`), spares the passes over every entry."""
        members = None
        if paged is None:
            first: dict[str, Page] = {}
            for entry in entries:
                if entry.page not in first:
                    first[entry.page] = Page(entry.page, entry.page_title)
            pages = list(first.values())
            chars = estimated_chars(entries)
        else:
            pages = [Page(page.page, page.page_title) for page in paged]
            members = {page.page: page.numbers for page in paged}
            chars = {page.page: page.chars for page in paged}
        return cls(site, entries, pages, page_chars=chars, members=members, format=format, code=code)


def page_groups(entries: Sequence[IndexEntry]) -> list[tuple[int, list[int]]]:
    """Pages in index order, each as (the entry that represents it, all its entries' numbers in index order).

    The representative is the page's first page entry (no anchor), or its first entry when it has none. The
    ranker's pages and the embedded page outlines (`vectors.py`) are both this grouping, so their rows line up.
    """
    return [
        (next((n for n in sections if entries[n].anchor is None), sections[0]), sections)
        for sections in _members(entries).values()
    ]


def _members(entries: Sequence[IndexEntry]) -> dict[str, list[int]]:
    """Each page's entry numbers in index order, pages in index order."""
    grouped: dict[str, list[int]] = {}
    for number, entry in enumerate(entries):
        grouped.setdefault(entry.page, []).append(number)
    return grouped


CHARS_PER_INDEXED_CHAR = 1.1
FRONT_MATTER_CHARS = 100


def estimated_chars(entries: Sequence[IndexEntry]) -> dict[str, int]:
    """Each page's Markdown length as a read returns it, estimated from its entries' text and titles.

    Markdown carries markup the index strips (link targets, fences, table pipes): on the sample corpus's 722 pages
    the Markdown is a median 1.07 times the indexed text; the front matter adds about 100 characters.
    """
    totals: dict[str, int] = {}
    for entry in entries:
        totals[entry.page] = totals.get(entry.page, 0) + len(entry.title) + len(entry.text) + 4
    return {page: round(total * CHARS_PER_INDEXED_CHAR) + FRONT_MATTER_CHARS for page, total in totals.items()}


def page_key(path: str) -> str:
    """A page path as resolution compares it: surrounding slashes trimmed."""
    return path.strip("/")


def html_to_text(fragment: str) -> str:
    """Plain text of an index entry's HTML, with block boundaries kept as spaces, in time linear in the entry; a
    lone surrogate (valid JSON, unencodable) becomes U+FFFD, so the entry loads and every answer can be encoded."""
    if "<" in fragment or "&" in fragment:
        fragment = html.unescape(_TAG.sub("", _BLOCK_TAG.sub(" ", fragment)))
    return SURROGATE.sub("\ufffd", fragment)


MAX_BOOST = 1_000.0
"""Boosts above this are taken as this: Material's are small numbers, and a score must stay finite."""


def clamp_boost(value: object) -> float:
    """The per-page `boost`; NaN, infinite, negative or unparsable values clamp to 0, absent means 1."""
    if value is None:
        return 1.0
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return min(number, MAX_BOOST) if number >= 0 and math.isfinite(number) else 0.0


ENTRY_KEY = b'"location"'
"""Every entry of either layout has one; a string that holds the text escapes its quotes, so it never counts."""


def check_size(payload: bytes, *, max_entries: int, max_bytes: int) -> None:
    """IndexFormatError when the index is larger than `max_bytes` or has more than `max_entries` entries, decided from
    its bytes alone (before it is parsed, which costs about 2 KB per entry at its peak)."""
    if len(payload) > max_bytes:
        raise IndexFormatError(f"the index is larger than {max_bytes / 2**20:g} MB (MaxIndexMegabytes)")
    entries = payload.count(ENTRY_KEY)
    if entries > max_entries:
        raise IndexFormatError(f"the index has {entries:,} entries, more than {max_entries:,} (MaxIndexEntries)")


def parse_index(site: str, payload: bytes | str) -> SiteIndex:
    """Parse the published JSON; raises IndexFormatError when it is malformed, hostile or has no entries."""
    try:
        return _parse(site, payload)
    except IndexFormatError:
        raise
    except (ValueError, TypeError, RecursionError, OverflowError) as exc:  # deeply nested, huge numbers, ...
        raise IndexFormatError(f"unusable index ({type(exc).__name__})") from None


def _parse(site: str, payload: bytes | str) -> SiteIndex:
    try:
        document = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as exc:
        raise IndexFormatError(f"not JSON: {exc}") from None
    docs = document.get("docs") if isinstance(document, dict) else None
    items = document.get("items") if isinstance(document, dict) else None
    code: list[CodeBlock] = []
    if isinstance(docs, list):
        entries, format = list(_entries(docs, code)), IndexFormat.MKDOCS
    elif isinstance(items, list):  # Zensical's: the same locations, titles and text, with each page's trail
        entries, format = list(_entries(items, code)), IndexFormat.ZENSICAL
    else:
        raise IndexFormatError("no 'docs' list (MkDocs) or 'items' list (Zensical)")
    if not entries:
        raise IndexFormatError("the index has no entries")
    return SiteIndex.build(site, entries, format=format, code=code)


def unsafe_location(location: str) -> bool:
    """True for an entry location that could leave its site once some server normalises it (`shared.paths`): dot
    segments however they are spelled (`..`, `..;`, `%2e%2e`, overlong `%C0%AE`, fullwidth and leader dots),
    backslashes, schemes and `//`."""
    return escapes(location)


def _plain(value: object) -> str:
    """A title or text as the index should have given it: a string; a number as written; anything else nothing."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return str(value)
    return ""


def _entries(docs: Iterable[object], code: list[CodeBlock]) -> Iterable[IndexEntry]:
    """The index's usable entries, in order; each one's code blocks are added to `code` as it is made."""
    page_titles: dict[str, str] = {}
    for raw in docs:
        if not isinstance(raw, dict) or not isinstance(raw.get("location"), str):
            continue
        location: str = raw["location"].strip()
        if len(location) > MAX_LOCATION_LENGTH or unsafe_location(location):  # `get` would refuse it
            continue
        page, sep, anchor = location.partition("#")
        title = html_to_text(_plain(raw.get("title"))).strip()
        if not sep:
            page_titles.setdefault(page, title)
        text = _plain(raw.get("text"))
        entry = IndexEntry(
            location=location,
            page=page,
            anchor=anchor if sep else None,
            title=title,
            page_title=page_titles.get(page, title),
            text=html_to_text(text),
            boost=clamp_boost(raw.get("boost")),
            trail=_trail(raw.get("path")),
        )
        code += blocks_of(
            SURROGATE.sub("\ufffd", text),
            location=location,
            page=page,
            anchor=entry.anchor,
            title=title,
            page_title=entry.page_title,
            trail=entry.trail,
        )
        yield entry


def _trail(path: object) -> str:
    """A Zensical item's `path` (the page's navigation trail) as `IndexEntry.trail`; empty for anything else."""
    if not isinstance(path, list):
        return ""
    titles = [html_to_text(_plain(part)).replace(TRAIL_SEPARATOR, " ").strip() for part in path[:MAX_TRAIL]]
    return TRAIL_SEPARATOR.join(title for title in titles if title)


MAX_TRAIL = 16
"""Titles of a navigation trail kept: deeper trails are cut (a hostile index cannot make breadcrumbs unbounded)."""
