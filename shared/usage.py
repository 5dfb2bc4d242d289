"""Where the chain reports what it answered, for the documentation's owners: the usage sink (`shared.insights`
records; without insights, nothing does).

The service calls the sink once per search that answered and once per page read, after the answer is built and
before it is returned; a sink only queues (no I/O, no waiting) and never raises into the request.
"""

from __future__ import annotations

from typing import Protocol

from shared.insights.events import FeedbackKind
from shared.models import Document, SearchResponse
from shared.requests import Caller, ReadRequest, SearchRequest


class UsageSink(Protocol):
    keeps: bool
    """Whether anything is kept (feedback is refused when nothing would keep it)."""

    def searched(self, request: SearchRequest, response: SearchResponse, *, floored: bool) -> None:
        """A search answered `response` to the checked `request` (`floored`: results were found and the relevance
        floor removed every one)."""

    def read(self, request: ReadRequest, document: Document) -> None:
        """A read of `request` was answered with `document` (the page as resolved, or the part asked for)."""

    def feedback(self, caller: Caller, document: Document, kind: FeedbackKind, text: str) -> None:
        """`caller` says the page `document` is `kind` (wrong, outdated...), in their words `text`."""


class NoUsage:
    """Records nothing: the service's sink when usage insights are off."""

    keeps = False

    def searched(self, request: SearchRequest, response: SearchResponse, *, floored: bool) -> None:
        return None

    def read(self, request: ReadRequest, document: Document) -> None:
        return None

    def feedback(self, caller: Caller, document: Document, kind: FeedbackKind, text: str) -> None:
        return None


NO_USAGE = NoUsage()
