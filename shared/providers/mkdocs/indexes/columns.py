"""A site's entries as a prebuilt ranker stores them: one UTF-8 column per text field, each entry cut out when it is
asked for (pure: no I/O)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import overload

from shared.providers.mkdocs.indexes.index import IndexEntry

TEXT_FIELDS = ("location", "page", "anchor", "title", "page_title", "text", "trail")
"""`IndexEntry`'s text fields, in its order (a prebuilt ranker stores each as a column: `artifact.py`)."""


class EntryColumns(Sequence[IndexEntry]):
    """A site's entries as a prebuilt ranker stores them (`artifact.py`): each field of every entry in one UTF-8
    column, cut at each entry's bounds; an entry is cut out and decoded whenever it is asked for, and not kept.

    A cold instance loads every site before its first search, and that search asks for the entries it ranks and
    answers, not all of them: cutting every field of every entry took about a fifth of the loads (the 25 sites at
    eight times the sample corpus: 400 ms with it, 328 without). Not keeping what was cut holds a site's entries in
    their UTF-8 alone (forge: 3.4 MB), where entries made whole held six strings and a tuple each on top of their
    text; cutting one again costs about three microseconds (a forge search cuts about a dozen)."""

    __slots__ = ("_anchored", "_boosts", "_bounds", "_columns")

    def __init__(
        self,
        columns: Mapping[str, bytes | memoryview],
        bounds: Mapping[str, Sequence[int]],
        anchored: Sequence[bool] | Sequence[int],
        boosts: Sequence[float],
    ) -> None:
        """`columns`: each `IndexEntry` text field's UTF-8; `bounds`: its cut points, one per entry plus one, from 0
        to its length, never decreasing and never inside a character (the caller's to check: `artifact._column`);
        ValueError when the counts do not fit together. Held as given: `artifact.loads` hands over views of its
        payload (8 bytes a cut point, where a list of ints took 36: 10 MB at eight times the sample corpus)."""
        count = len(boosts)
        if len(anchored) != count or set(columns) != set(TEXT_FIELDS) or set(bounds) != set(TEXT_FIELDS):
            raise ValueError("the entry columns disagree")
        for name in TEXT_FIELDS:
            cuts = bounds[name]
            if len(cuts) != count + 1 or cuts[0] != 0 or cuts[-1] != len(columns[name]):
                raise ValueError(f"the {name} column does not fit its bounds")
        self._columns = [columns[name] for name in TEXT_FIELDS]
        self._bounds = [bounds[name] for name in TEXT_FIELDS]
        self._anchored = anchored
        self._boosts = boosts

    def __len__(self) -> int:
        return len(self._boosts)

    @overload
    def __getitem__(self, key: int) -> IndexEntry: ...

    @overload
    def __getitem__(self, key: slice) -> list[IndexEntry]: ...

    def __getitem__(self, key: int | slice) -> IndexEntry | list[IndexEntry]:
        if isinstance(key, slice):
            return [self._cut(number) for number in range(*key.indices(len(self)))]
        count = len(self._boosts)
        if not -count <= key < count:
            raise IndexError("entry number out of range")
        return self._cut(key % count)

    def __iter__(self) -> Iterator[IndexEntry]:
        return (self._cut(number) for number in range(len(self._boosts)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(other) == len(self) and all(mine == theirs for mine, theirs in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # compared by value, like the list it stands for

    def field(self, number: int, name: str) -> str:
        """One text field of one entry (`TEXT_FIELDS`), cut alone: what a load needs of each page (its path and title)
        without the five other fields."""
        at = TEXT_FIELDS.index(name)
        cuts = self._bounds[at]
        return _decoded(self._columns[at][cuts[number] : cuts[number + 1]])

    def boost(self, number: int) -> float:
        return self._boosts[number]

    def _cut(self, number: int) -> IndexEntry:
        location, page, anchor, title, page_title, text, trail = (
            _decoded(column[cuts[number] : cuts[number + 1]])
            for column, cuts in zip(self._columns, self._bounds, strict=True)
        )
        anchored = anchor if self._anchored[number] else None
        return IndexEntry(location, page, anchored, title, page_title, text, self._boosts[number], trail)


def boosts_of(entries: Sequence[IndexEntry], numbers: Iterable[int]) -> list[float]:
    """These entries' boosts, read from columns (`EntryColumns.boost`) rather than cut whole."""
    if isinstance(entries, EntryColumns):
        return [entries.boost(number) for number in numbers]
    return [entries[number].boost for number in numbers]


def _decoded(raw: bytes | memoryview) -> str:
    """An entry's field from its column: what was written (lone surrogates too); bytes that are not UTF-8, which only
    a column written by something other than `artifact.dumps` can hold, with U+FFFD, never an error (a prebuilt
    ranker's columns are trusted once its checksum matched, not decoded whole again)."""
    try:
        return str(raw, "utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return str(raw, "utf-8", "replace")
