"""Cut a query-centred preview from a result's text, following the spec's preview output contract.

The contract (docs "Preview output contract"): every run of whitespace collapses to one U+0020 before the
window is cut, the text is trimmed, the budget counts UTF-16 code units (so an astral character such as an
emoji costs two and is never split), and `...` marks each cut end outside the budget.

Window choice (docs "Result previews"): query terms shorter than three characters are skipped whenever a
longer one exists; each retained term contributes at most its first 20 occurrences; a candidate window starts
at an occurrence and spans the budget; the candidate holding the most distinct terms wins, the earliest on a
tie. The shown window then opens a little before that first occurrence, so the reader gets the lead-in of the
sentence, but never so far that a matched term falls out, and it is shifted back from the end of the text
rather than shown short.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate

from shared.validation import split_whitespace

MAX_OCCURRENCES = 20
"""Occurrences considered per retained term, so the search stays bounded on long pages."""

MIN_TERM_LENGTH = 3
"""Shorter terms (to, in, of) anchor snippets on navigation chrome such as "Skip to content"."""

LEAD_UNITS = 30
"""Context shown before the first matched term, when the budget has room for it."""

ELLIPSIS = "..."


def make_preview(text: str, query: str, max_length: int = 200) -> str:
    """A preview of at most `max_length` UTF-16 code units of normalized text, plus ellipses at cut ends."""
    if max_length < 1:
        raise ValueError("max_length must be at least 1")
    collapsed = " ".join(split_whitespace(text))
    units = _Units(collapsed)
    if units.total <= max_length:
        return collapsed
    start = _window_start(collapsed, units, _terms(query), max_length)
    end = units.index_at(units.offset(start) + max_length)
    window = collapsed[start:end].strip()
    prefix = ELLIPSIS if start > 0 else ""
    suffix = ELLIPSIS if end < len(collapsed) else ""
    return f"{prefix}{window}{suffix}"


class _Units:
    """UTF-16 offsets of a string's code points, so budgets match .NET string length."""

    def __init__(self, text: str) -> None:
        self.total = len(text.encode("utf-16-le")) // 2
        self._length = len(text)
        # Only text with astral characters needs a table; for the rest, offsets equal indices.
        self._prefix: list[int] | None = None
        if self.total != self._length:
            self._prefix = [0, *accumulate(2 if ord(char) > 0xFFFF else 1 for char in text)]

    def offset(self, index: int) -> int:
        """Code units before code point `index`."""
        return index if self._prefix is None else self._prefix[index]

    def index_at(self, offset: int) -> int:
        """The largest code point index whose prefix fits in `offset` units: a pair is never split."""
        if self._prefix is None:
            return min(offset, self._length)
        return bisect_right(self._prefix, offset) - 1


def _terms(query: str) -> list[str]:
    """Distinct lower-cased query terms, dropping short ones whenever a longer one is available."""
    terms = list(dict.fromkeys(term.lower() for term in split_whitespace(query)))
    long_terms = [term for term in terms if len(term) >= MIN_TERM_LENGTH]
    return long_terms or terms


def _occurrences(text: str, terms: list[str]) -> list[tuple[int, int, int]]:
    """(start, end, term number) of the first occurrences of each term, sorted by position."""
    folded = _fold(text)
    found: list[tuple[int, int, int]] = []
    for number, term in enumerate(terms):
        position = folded.find(term)
        for _ in range(MAX_OCCURRENCES):
            if position < 0:
                break
            found.append((position, position + len(term), number))
            position = folded.find(term, position + 1)
    return sorted(found)


def _fold(text: str) -> str:
    """Lower-case `text` without moving any character's index (a few letters lower-case to two)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(low if len(low := char.lower()) == 1 else char for char in text)


def _window_start(text: str, units: _Units, terms: list[str], budget: int) -> int:
    """Where the shown window starts: before the best candidate's first term, never leaving budget unused."""
    best = _best_candidate(_occurrences(text, terms), units, budget)
    if best is None:
        return 0
    first, last_end = best
    slack = budget - (units.offset(last_end) - units.offset(first))
    lead_start = units.index_at(max(0, units.offset(first) - min(LEAD_UNITS, slack)))
    start = _word_start(text, lead_start, first)
    latest = units.index_at(units.total - budget)
    while units.offset(latest) + budget < units.total:  # index_at rounds down; the window must reach the end
        latest += 1
    return min(start, latest)


def _best_candidate(hits: list[tuple[int, int, int]], units: _Units, budget: int) -> tuple[int, int] | None:
    """(first start, last end) of the earliest window holding the most distinct terms: a window starts at a hit and
    counts the first hit of each term that ends within the budget (the last end among those); none can beat one
    holding every term, so the search stops at the first that does."""
    best: tuple[int, int] | None = None
    best_count = 0
    everything = len({number for _, _, number in hits})
    starts = [units.offset(start) for start, _, _ in hits]
    ends = [units.offset(end) for _, end, _ in hits]
    for i, (start, _, _) in enumerate(hits):
        limit = starts[i] + budget
        seen: set[int] = set()
        last_end = start
        for j in range(i, len(hits)):
            if starts[j] >= limit:
                break
            number = hits[j][2]
            if ends[j] <= limit and number not in seen:
                seen.add(number)
                last_end = max(last_end, hits[j][1])
        if len(seen) > best_count:
            best, best_count = (start, last_end), len(seen)
            if best_count == everything:
                break
    return best


def _word_start(text: str, index: int, limit: int) -> int:
    """Move `index` forward to the start of a word, without passing `limit` (the first matched term)."""
    if index == 0 or text[index - 1] == " ":
        return index
    space = text.find(" ", index, limit)
    return space + 1 if space >= 0 else index
