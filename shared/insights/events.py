"""The usage events kept for the documentation's owners, as one JSON line each: a search, a read, a feedback.

What an event holds is fixed here and nowhere else: the caller as a pseudonym (never a token or an address), the
question and the feedback as scrubbed text (`shared.scrubbing`), the scope asked for, what answered and the first
locations it gave. Nothing else of the request (no headers, no body, no page text) is ever in one.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from shared.scrubbing import scrub

MAX_LOCATIONS = 10
"""Locations a search event keeps, best first: enough to tell the rank of the page read after it."""
MAX_FEEDBACK_CHARS = 2000
MAX_QUESTION_CHARS = 500


class FeedbackKind(StrEnum):
    """What an agent says is wrong with a page."""

    OUTDATED = "outdated"
    WRONG = "wrong"
    MISSING = "missing"
    UNCLEAR = "unclear"


@dataclass(frozen=True, slots=True)
class SearchEvent:
    at: int
    """Milliseconds since the epoch (UTC)."""
    caller: str
    site: str | None
    """The site asked for; None: every site."""
    version: str | None
    kind: str
    language: str | None
    provider: str
    results: int
    top: float | None
    """The best result's score; None without results."""
    floored: bool
    question: str
    locations: list[str] = field(default_factory=list)
    best_site: str | None = None
    """The best result's site: where an unscoped search that answered is counted."""
    type: str = "search"


@dataclass(frozen=True, slots=True)
class ReadEvent:
    at: int
    caller: str
    site: str
    version: str | None
    location: str
    """The page as resolved (the location a search result gives for it)."""
    rule: str
    type: str = "read"


@dataclass(frozen=True, slots=True)
class FeedbackEvent:
    at: int
    caller: str
    site: str
    version: str | None
    location: str
    kind: FeedbackKind
    text: str
    type: str = "feedback"


Event = SearchEvent | ReadEvent | FeedbackEvent
_TYPES: dict[str, type[SearchEvent] | type[ReadEvent] | type[FeedbackEvent]] = {
    "search": SearchEvent,
    "read": ReadEvent,
    "feedback": FeedbackEvent,
}


def question_of(query: str) -> str:
    """The question as it is kept: scrubbed, whitespace collapsed, cut at `MAX_QUESTION_CHARS`."""
    return " ".join(scrub(query).split())[:MAX_QUESTION_CHARS]


def feedback_text(text: str) -> str:
    """Feedback as it is kept: scrubbed, cut at `MAX_FEEDBACK_CHARS`."""
    return scrub(text).strip()[:MAX_FEEDBACK_CHARS]


def page_of(location: str) -> str:
    """A location as pages are compared: without its `#anchor`, surrounding slashes and case."""
    return location.split("#", 1)[0].strip().strip("/").lower()


def line(event: Event) -> str:
    """The event as one JSON line (no newline inside)."""
    return json.dumps(asdict(event), separators=(",", ":"), ensure_ascii=False)


def parse(text: str) -> Event | None:
    """The event a line holds; None for a line that is not one (cut short by a failed append, from a newer
    version): a report reads what it understands and skips the rest."""
    try:
        raw: Any = json.loads(text)
        kind = _TYPES[raw["type"]]
        fields = {name: raw[name] for name in kind.__dataclass_fields__ if name in raw}
        if kind is FeedbackEvent:
            fields["kind"] = FeedbackKind(fields["kind"])
        event = kind(**fields)
    except (ValueError, KeyError, TypeError):
        return None
    return event if isinstance(event.at, int) and isinstance(event.caller, str) else None
