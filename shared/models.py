"""The data the core hands across layers: search results, documents and resolutions, with the spec's vocabularies."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

NO_PROVIDER = "none"
"""Attribution sentinel when no provider produced a result."""

MAX_RESULTS = 25
"""The chain caps every search at this many results, whatever the caller asked for."""


class Reason(StrEnum):
    """MkDocsResolutionReasons: the outcome of resolving and fetching a location."""

    RESOLVED = "resolved"
    NOT_FOUND = "not_found"
    UNKNOWN_SITE = "unknown_site"
    AMBIGUOUS = "ambiguous"
    SITE_UNAVAILABLE = "site_unavailable"
    FETCH_FAILED = "fetch_failed"


class Rule(StrEnum):
    """MkDocsResolutionRules: which rule within a site produced the outcome."""

    EXACT = "exact"
    VARIANT = "variant"
    CANONICAL_LEAF = "canonical-leaf"
    NONE = "none"


class _Wire(BaseModel):
    """camelCase on the wire, snake_case in Python."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class Resolution(_Wire):
    """How a requested location was (or was not) resolved to a page."""

    requested_location: str
    reason: Reason
    rule: Rule = Rule.NONE
    site: str | None = None
    location: str | None = Field(default=None, description="Resolved page path within the site, as indexed.")
    candidates: list[str] = Field(default_factory=list, description="Ambiguity candidates in site/location form.")
    detail: str = ""

    @property
    def resolved(self) -> bool:
        return self.reason is Reason.RESOLVED


class SearchResult(_Wire):
    """One search hit; `location` can be passed straight back to get."""

    location: str
    title: str
    url: str
    site: str
    preview_text: str
    score: float
    provider: str
    page_title: str | None = Field(default=None, description="Title of the page that owns the section.")
    breadcrumb: list[str] = Field(default_factory=list, description="Page title then section title.")
    anchor: str | None = Field(
        default=None, description="The best-matching section's anchor within the page; link to it as url#anchor."
    )
    backend: str | None = Field(
        default=None,
        description="For a result brokered by another deployment (`provider: smithy_remote`), the provider that "
        "answered there (`ai_search`, `mkdocs`); otherwise null.",
    )


class SearchResponse(_Wire):
    query: str
    provider: str
    results: list[SearchResult]


class Document(_Wire):
    """A whole page as Markdown, with where it came from."""

    requested_location: str
    location: str
    site: str
    url: str
    provider: str
    content: str
    resolution: Resolution
    backend: str | None = Field(
        default=None,
        description="For a page brokered by another deployment (`provider: smithy_remote`), the provider that served "
        "it there; otherwise null.",
    )
