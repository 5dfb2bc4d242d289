"""The data the core hands across layers: search results, documents and resolutions, with the spec's vocabularies."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator
from pydantic.alias_generators import to_camel

from shared.site_key import SiteKey

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
    REDIRECT = "redirect"
    """An extension of the spec's vocabulary: the path missed, and the origin's redirect stub there points at this
    page (a moved page's old path, a troubleshooting ID)."""
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
    suggestions: list[str] = Field(
        default_factory=list,
        description="For `not_found` and `unknown_site`: up to 5 locations of pages near the one asked for (shared "
        "path and title words, a misspelt leaf), nearest first, each one `get` serves. Offered, never followed.",
    )

    @property
    def resolved(self) -> bool:
        return self.reason is Reason.RESOLVED


class _Versioned(_Wire):
    """An answer about a page of a site that may be versioned: `version` and `defaultVersion` are there only for a
    versioned site's pages; an unversioned site's answers carry neither (not even as null)."""

    version: str | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="For a versioned site (mike's `versions.json`): the version the page is of, never an alias. "
        "Absent for unversioned sites.",
    )
    default_version: bool | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Whether that version is the site's default. Absent for unversioned sites.",
    )


class SearchKind(StrEnum):
    """What a search returns: pages (the default) or code blocks, one result each."""

    PAGE = "page"
    CODE = "code"


class CodeSample(_Wire):
    """A code result's block: its language and text."""

    language: str = Field(
        description="Canonical lower-case name (`bash` for sh/shell/console/zsh, `yaml` for yml, `terraform` for "
        "hcl/tf, `powershell` for pwsh/ps1, `python` for py, else the fence's own name); `text` when unknown."
    )
    text: str = Field(description="The block's code, whole up to 4,000 characters; a longer one is cut at a line.")
    total_chars: int | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Only for a cut block: how many characters the whole block has (`get` the page for all of it).",
    )


class SearchResult(_Versioned):
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
    page_chars: int | None = Field(
        default=None,
        description="About how many characters of Markdown the whole page is: an estimate from the search index "
        "(within about a fifth either way), to choose between the whole page and the matched section (`anchor`). "
        "Null when the provider cannot tell.",
    )
    indexed_at: datetime | None = Field(
        default=None,
        description="When the origin last vouched for the index version this result came from (fetched, or "
        "confirmed unchanged); null when the provider cannot tell (Azure AI Search).",
    )
    code: CodeSample | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="For a code search (`kind=code`): the block. Absent from page results.",
    )
    language_guessed: bool | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="For a code result: true when neither the page's Markdown fence nor its HTML named the "
        "language and `code.language` is a guess from the text. Absent from page results.",
    )
    language_pending: bool | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="For a code result whose language is guessed: true while the site's Markdown fences are still "
        "being read (just after the site loaded), so the same search in a moment may name the author's language. "
        "Absent otherwise.",
    )


class SiteAnswer(StrEnum):
    """How a site stood in one search: searched, still loading (its results left out), failed, not published."""

    SEARCHED = "searched"
    LOADING = "loading"
    FAILED = "failed"
    UNPUBLISHED = "unpublished"


class SiteSearched(_Wire):
    """How one site stood in a search, and how fresh the index searched was."""

    state: SiteAnswer
    indexed_at: datetime | None = Field(
        default=None,
        description="When the origin last vouched for the site's index that was searched (or, for a site not "
        "searched, the one this instance holds); null when there is none or the provider cannot tell.",
    )

    @model_validator(mode="before")
    @classmethod
    def _bare_state(cls, value: Any) -> Any:
        """A deployment from before freshness answered the state alone. Compatibility until 2027-06-30."""
        return {"state": value} if isinstance(value, str) else value


@dataclass(frozen=True, slots=True)
class Found:
    """A provider's answer to a search: its results, best first, and, when it searched several sites, how each
    stood (the answer's `sites`; None when it cannot tell)."""

    results: list[SearchResult]
    sites: dict[str, SiteSearched] | None = None
    floored: bool = False
    """Results were found and the relevance floor removed every one (usage insights tell it from "no match")."""


class SearchResponse(_Wire):
    query: str
    provider: str
    results: list[SearchResult]
    sites: dict[str, SiteSearched] | None = Field(
        default=None,
        description="Each site the search was meant to cover: its `state` (`searched`; `loading`: its index was "
        "not ready within `Search__SiteWaitSeconds`, so its results are missing from this answer, ask again "
        "shortly; `failed`; `unpublished`) and `indexedAt`, when its index was fetched. Null when no provider "
        "searched.",
    )


class View(StrEnum):
    """What a read returns: the page's Markdown (or a part of it), or only its outline."""

    CONTENT = "content"
    OUTLINE = "outline"


class OutlineEntry(_Wire):
    """One heading of a page."""

    title: str
    anchor: str | None = Field(
        description="The section's anchor as the search index gives it (pass it as `section`); null for a heading "
        "the index has no section for (the page's own title, for one)."
    )
    level: int = Field(description="1 for `#`, 2 for `##`, ...")
    chars: int = Field(description="The section's own length in characters, its subsections included.")
    offset: int = Field(description="Where the heading starts in the whole page's Markdown: pass it as `offset`.")


class Document(_Versioned):
    """A page as Markdown, with where it came from: the whole page, or the part a read asked for."""

    requested_location: str
    location: str
    site: str
    url: str
    provider: str
    content: str = Field(
        description="Markdown: the whole page with `source`, `site` and `retrieved` front matter, the section asked "
        "for (with the page's front matter), or the part from `offset`; empty with `view=outline`."
    )
    resolution: Resolution
    backend: str | None = Field(
        default=None,
        description="For a page brokered by another deployment (`provider: smithy_remote`), the provider that served "
        "it there; otherwise null.",
    )
    section: str | None = Field(
        default=None, description="The anchor (or, without one, the title) of the section read; null for the page."
    )
    total_chars: int | None = Field(
        default=None,
        description="Characters in the whole page's Markdown (front matter included), or in the section read "
        "(`section`): what `offset` and `nextOffset` count in.",
    )
    offset: int = Field(default=0, description="Where `content` starts, in characters.")
    next_offset: int | None = Field(
        default=None,
        description="Pass it as `offset` to read the next part; null when `content` reaches the end. Parts read one "
        "after another join to exactly the whole text.",
    )
    content_hash: str | None = Field(
        default=None,
        description="SHA-256 of the whole page's Markdown without `retrieved`: two parts with different hashes come "
        "from different versions of the page.",
    )
    last_modified: str | None = Field(
        default=None, description="When the origin says the page last changed (its Last-Modified), when it says."
    )
    indexed_at: datetime | None = Field(
        default=None,
        description="When the origin last vouched for the site index the location was resolved with; null when "
        "the provider cannot tell. `retrieved` (front matter) is when the page itself was fetched.",
    )
    outline: list[OutlineEntry] | None = Field(
        default=None, description="The page's (or the section's) headings, with `view=outline`; otherwise null."
    )
    removed_characters: int | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="MCP only: characters left out of the page as published because they can carry instructions "
        "unseen (invisible characters, HTML comments, hidden elements); offsets count in the cleaned page.",
    )
    _fresh_for: float = PrivateAttr(default=0.0)

    @property
    def fresh_for(self) -> float:
        """Seconds this copy stays as fresh as a new read would be (what a client may cache it for): the provider's
        own freshness for the page; 0 when it cannot tell. Not part of the wire form; parts keep their page's."""
        return self._fresh_for

    def fresh_until(self, seconds: float) -> Document:
        """This document, saying it stays fresh for `seconds`."""
        self._fresh_for = max(0.0, seconds)
        return self


@dataclass(frozen=True, slots=True)
class Version:
    """One version a versioned site lists in its `versions.json`."""

    name: str
    title: str
    aliases: tuple[str, ...]
    hidden: bool


@dataclass(frozen=True, slots=True)
class VersionSet:
    """A versioned site's versions, in `versions.json` order, and its default."""

    site: str
    versions: tuple[Version, ...]
    default: str

    def concrete(self, name: str) -> str | None:
        """The version `name` is, or the one it is an alias of; None when it is neither."""
        for version in self.versions:
            if name == version.name or name in version.aliases:
                return version.name
        return None

    def key(self, version: str) -> str:
        """The key the version is loaded, cached and ranked under, as a site of its own (`SiteKey`)."""
        return SiteKey.of(self.site, version)

    @property
    def names(self) -> list[str]:
        return [version.name for version in self.versions]

    def visible(self) -> list[Version]:
        return [version for version in self.versions if not version.hidden]


class ListedVersion(_Wire):
    version: str
    title: str
    aliases: list[str]
    default: bool
    hidden: bool = Field(description="`properties.hidden` in versions.json: not searched unless asked for.")


class VersionListing(_Wire):
    """`GET /api/docs/versions`: a site's versions, newest first as `versions.json` lists them."""

    site: str
    versioned: bool
    default: str | None = Field(default=None, description="The version a search or location without one means.")
    versions: list[ListedVersion] = Field(default_factory=list)

    @classmethod
    def of(cls, site: str, found: VersionSet | None) -> VersionListing:
        if found is None:
            return cls(site=site, versioned=False)
        listed = [
            ListedVersion(
                version=version.name,
                title=version.title,
                aliases=list(version.aliases),
                default=version.name == found.default,
                hidden=version.hidden,
            )
            for version in found.versions
        ]
        return cls(site=found.site, versioned=True, default=found.default, versions=listed)


class FeedbackAccepted(_Versioned):
    """Feedback kept for the documentation's owners, on the page its location resolved to."""

    accepted: bool = True
    site: str
    location: str
    kind: str
