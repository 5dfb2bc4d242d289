"""The provider contract: what the chain needs from every documentation provider, and nothing more.

A provider answers in its own way (a search index service, another deployment, the MkDocs sites themselves) and
reports failure by raising from `shared.errors`:

- `search` returns a list, empty when it has nothing; `get` returns a Document or raises `ResolutionError` with
  the spec's reason when the location does not lead to a page it can serve.
- Anything it cannot do at all (unconfigured, unreachable, cooling down, a `site` outside its scope) is a
  `ProviderError` (`ProviderDeclinedError` when it chose not to try); the chain logs it and falls through.
- `sites` names the sites it serves; the chain checks a caller's `site` against the union of every provider's
  `sites` once, and passes it only to providers that declare it, in their own spelling.
- `health` is a `ProviderHealth` (its status, and whatever fields the provider adds) and must not do I/O; it
  becomes JSON only at the API. `aclose` releases what the provider opened.

Health's vocabulary is here too: `Status`, and `roll_up`, the one rule that turns parts' statuses into a whole's
(a provider's sites into its status, the providers into the service's); `LastCalls` is what the providers that call
a service (AI Search, another deployment) remember of their latest calls.

Providers never import each other or the chain; the composition root (`shared.compose`) builds them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer
from pydantic.alias_generators import to_camel

from shared.errors import ServiceCallError
from shared.models import Document, Found, VersionSet
from shared.requests import ReadRequest, SearchRequest


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a provider can do beyond searching pages; the chain asks it only for what it can do."""

    fetch: bool = False
    """It serves pages (`get`); a search-only provider is never asked to."""
    versions: bool = False
    """It searches and reads a `version` of a versioned site, and lists versions (`versions`)."""
    code: bool = False
    """It searches code blocks (`kind=code`, with a `language`)."""
    ceilings: bool = False
    """It answers as if a request's `hidden` sites were not configured, its misses included (their suggestions and
    candidates); without it, the chain drops what names such a site, as far as a location's first folder tells."""


class DocumentationProvider(Protocol):
    """One link of the chain: what it can do (`capabilities`), over which sites, answering request values."""

    name: str
    """Attribution: what `provider` in answers and the `docs.*.provider` tags say."""
    order: int
    """Position in the chain, ascending; ties keep registration order."""
    sites: tuple[str, ...]

    @property
    def capabilities(self) -> Capabilities: ...

    async def search(self, request: SearchRequest) -> Found:
        """Up to `request.limit` results, best first, and how each site stood; `request.site`, when given, is one of
        `sites` in this provider's spelling; `version`, `kind` and `language` only as `capabilities` say."""
        ...

    async def get(self, request: ReadRequest) -> Document:
        """The whole page at a validated location; raises ResolutionError on a miss. When `request.outline`, the
        document carries the page's headings (`Document.outline`, anchors from the site's search index); a provider
        that cannot tell them raises a miss, so the chain asks the next one. Only with `capabilities.fetch`."""
        ...

    async def versions(self, site: str) -> VersionSet | None:
        """A site's versions (None: not versioned). Only with `capabilities.versions`."""
        ...

    def health(self) -> ProviderHealth:
        """What this provider wants operators to see, without doing I/O."""
        ...

    async def aclose(self) -> None:
        """Release clients and stop background work."""
        ...


class Status(StrEnum):
    """How a provider, or the whole service, stands in health."""

    OK = "ok"
    DEGRADED = "degraded"
    UNAVAILABLE = "unavailable"


def roll_up(statuses: Iterable[Status]) -> Status:
    """The status of a whole from its parts': `unavailable` when one part is and none is `ok` (nothing left that
    answers), `degraded` when any part is not `ok`, else `ok` (no parts at all too)."""
    seen = set(statuses)
    if Status.UNAVAILABLE in seen and Status.OK not in seen:
        return Status.UNAVAILABLE
    return Status.DEGRADED if seen - {Status.OK} else Status.OK


class Report(BaseModel):
    """A part of a health or warm-up report: camelCase in JSON, as the answers are (`shared.models`)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


Instant = Annotated[datetime, PlainSerializer(lambda at: at.isoformat())]
"""A time in a report, written as Python writes it (`+00:00`, not pydantic's `Z`)."""


def absent() -> Any:
    """A report field left out of the JSON while it is None (rather than written as null)."""
    return Field(None, exclude_if=lambda value: value is None)


class ProviderHealth(Report):
    """What a provider reports in health: its status; each provider adds its own fields after it."""

    status: Status = Status.OK

    def without(self, hidden: frozenset[str]) -> ProviderHealth:
        """The report as a caller who may not read the `hidden` sites (lower case) sees it: a provider that names
        sites leaves those out."""
        return self


class LastError(Report):
    """The latest failed call to the service a provider stands on: how it failed, never a message."""

    kind: str
    status: int | None
    """The HTTP status, when there was one."""
    at: Instant


class LastCalls:
    """The outcome of a provider's latest calls to the service it stands on, for health: it is failing while its
    latest failure is newer than its latest success."""

    def __init__(self) -> None:
        self.succeeded_at: datetime | None = None
        self.error: LastError | None = None

    def succeeded(self) -> datetime:
        self.succeeded_at = datetime.now(UTC)
        return self.succeeded_at

    def failed(self, error: ServiceCallError) -> datetime:
        self.error = LastError(kind=error.kind, status=error.status, at=datetime.now(UTC))
        return self.error.at

    @property
    def failing(self) -> bool:
        return self.error is not None and (self.succeeded_at is None or self.error.at > self.succeeded_at)
