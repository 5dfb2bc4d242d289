"""What a site's warm-up or publish refresh reports, and a refresh run's report over its sites.

    RunReport        run, status (running | done), startedAt
    └── sites        site -> SiteOutcome   outcome: changed | unchanged | failed | running
                                           reason (failed), status (the origin's HTTP status), detail, entries,
                                           fetchedAt, then a Step for each later step: ranker, pages, semantic

A `Step` is written as one string, its state first (`checked: 0 missing`, `failed: ...`, `computed`), as the reports
always were. The models become JSON at the edges: the API, the command line, and the run record in the store.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, Field, PlainSerializer, model_serializer, model_validator

from shared.providers.base import Report, absent


def _second(at: datetime) -> datetime:
    return at.astimezone(UTC).replace(microsecond=0)


Second = Annotated[datetime, AfterValidator(_second), PlainSerializer(lambda at: at.isoformat())]
"""A time to the second, in UTC."""


class Outcome(StrEnum):
    """How a site's index fared."""

    CHANGED = "changed"
    UNCHANGED = "unchanged"
    FAILED = "failed"
    RUNNING = "running"
    """A refresh still under way (a run's report only)."""


class StepState(StrEnum):
    """How one later step of a site's warm-up ended."""

    BUILT = "built"
    CURRENT = "current"
    COMPUTED = "computed"
    CHECKED = "checked"
    PARTIAL = "partial"
    SKIPPED = "skipped"
    FAILED = "failed"


class Step(Report):
    """One later step's end (the prebuilt ranker, the page check, the embeddings) and what it says about it."""

    state: StepState
    detail: str = ""

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            state, _, detail = value.partition(": ")
            return {"state": state, "detail": detail}
        return value

    @model_serializer
    def _text(self) -> str:
        return str(self)

    def __str__(self) -> str:
        return f"{self.state}: {self.detail}" if self.detail else str(self.state)

    @property
    def failed(self) -> bool:
        return self.state is StepState.FAILED


class SiteOutcome(Report):
    """One site's warm-up or refresh; never an exception, a failure is an outcome like any other."""

    outcome: Outcome
    reason: str | None = absent()
    """Why it failed."""
    status: Annotated[int, PlainSerializer(str)] | None = absent()
    """The origin's HTTP status, when it answered the failed request with one (a string on the wire)."""
    detail: str | None = absent()
    entries: Annotated[int, PlainSerializer(str)] | None = absent()
    """Entries in the index fetched (a string on the wire)."""
    fetched_at: Second | None = absent()
    """When the origin last vouched for the copy the store now holds."""
    ranker: Step | None = absent()
    pages: Step | None = absent()
    semantic: Step | None = absent()
    code: Step | None = absent()
    """The languages of its code blocks, from the Markdown's fences (`languages.py`)."""

    @property
    def failed(self) -> bool:
        return self.outcome is Outcome.FAILED


class RunState(StrEnum):
    RUNNING = "running"
    DONE = "done"


class RunReport(Report):
    """A refresh run: each site's outcome, `running` for a site still refreshing."""

    run: str
    status: RunState
    started_at: Second
    sites: dict[str, SiteOutcome]
    recorded: bool = Field(False, exclude=True)
    """Read back from the store, where another instance (or this one) recorded it once done."""
