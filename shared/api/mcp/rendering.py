"""What an agent reads of a search or of a site's versions: the text beside the structured content of the MCP
tools' answers (`shared.api.mcp.server`); a page read's text is `shared.api.mcp.budget`'s.

A search answer is one block per hit (title, location, breadcrumb, size, preview, a code result's fenced block),
then how fresh the answering sites' indexes are and how to read on; no hit says which sites were searched and what
to try next; results left out to fit the answer budget are counted, with the call that shows them whole.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime

from mcp.types import CallToolResult, TextContent
from pydantic import Field

from shared.api.mcp import resources
from shared.code_samples import GUESSED, PENDING
from shared.models import CodeSample, SearchResponse, SiteAnswer, SiteSearched, VersionListing
from shared.validation import ROOT_LOCATION


class SearchAnswer(SearchResponse):
    """`search_docs`' structured content: the search, and how many results were left out to fit the answer."""

    left_out: int = Field(
        default=0,
        description="Results that matched but were left out to keep the answer within its size budget: ask with a "
        "smaller `limit`, or narrow with `site`, to see them whole.",
    )


def search_answer(response: SearchResponse, kept: int, site: str | None) -> CallToolResult:
    """The first `kept` results as the tool's answer: the text, a resource link per result, and the structured
    content saying how many were left out."""
    shown = SearchAnswer(**response.model_dump(), left_out=len(response.results) - kept)
    shown = shown.model_copy(update={"results": response.results[:kept]})
    links = [resources.resource_link(hit) for hit in shown.results]
    return CallToolResult(
        content=[TextContent(type="text", text=render_search(shown, site)), *links],
        structured_content=shown.model_dump(mode="json", by_alias=True),
    )


def render_versions(listing: VersionListing) -> str:
    """A site's versions as an agent reads them."""
    if not listing.versioned:
        return f"{listing.site} is not versioned: every page has one version; search and read it without `version`."
    lines = [f"{listing.site} versions, newest first (the default is {listing.default}):"]
    for version in listing.versions:
        aliases = f" (also {', '.join(version.aliases)})" if version.aliases else ""
        marks = " [default]" if version.default else " [hidden]" if version.hidden else ""
        lines.append(f"- {version.version}{aliases}{marks}")
    lines.append(
        "Pass `version` to search_docs or get_doc, or a location with the version's folder "
        f"({listing.site}/<version>/<path>)."
    )
    return "\n".join(lines)


def render_code(code: CodeSample, *, guessed: bool, pending: bool = False) -> str:
    """A code result's block, fenced with its language (a fence longer than any backtick run inside it)."""
    longest = max((len(run) for run in re.findall(r"`+", code.text)), default=0)
    fence = "`" * max(3, longest + 1)
    note = f" ({GUESSED}; {PENDING})" if guessed and pending else f" ({GUESSED})" if guessed else ""
    cut = (
        f"\n   [cut: the block is {code.total_chars:,} characters; read its section with get_doc]"
        if code.total_chars
        else ""
    )
    return f"   code, {code.language}{note}:\n{fence}{code.language}\n{code.text}\n{fence}{cut}"


def render_search(response: SearchResponse, site: str | None = None) -> str:
    """What an agent reads: one block per hit (title, location, breadcrumb, size, preview); for no hit, which sites
    were searched and what to try next; what was left out to fit the answer, and how to see it."""
    states = response.sites or {}
    unsearched = _unsearched(states)
    if not response.results:
        searched = [name for name, site in states.items() if site.state == SiteAnswer.SEARCHED]
        if states and not searched:
            # Nothing was read: saying the documentation lacks the answer would be a guess.
            return f"No results: no site could be searched. Not searched: {unsearched}. Ask again in a moment."
        scope = f" in {', '.join(searched)}" if searched else ""
        lines = [
            f"No results{scope}: the documentation searched does not cover this, or nothing scored above the "
            "relevance floor."
        ]
        if unsearched:
            lines.append(f"Not searched: {unsearched}.")
        lines.append(
            f"Search again without `site` (only {site} was searched), or with the words the documentation would use."
            if site
            else "Try the words the documentation would use."
        )
        return " ".join(lines)
    lines = [f"{len(response.results)} result(s), best first (answered by {response.provider}):"]
    for rank, hit in enumerate(response.results, 1):
        size = f" (page about {hit.page_chars:,} characters)" if hit.page_chars else ""
        lines.append(f"\n{rank}. {hit.page_title or hit.title}{size}\n   location: {hit.location or ROOT_LOCATION}")
        if len(hit.breadcrumb) > 1:
            anchor = f" (section={hit.anchor})" if hit.anchor else ""
            lines.append(f"   section: {' > '.join(hit.breadcrumb)}{anchor}")
        if hit.preview_text:
            lines.append(f"   {hit.preview_text}")
        if hit.code is not None:
            lines.append(render_code(hit.code, guessed=bool(hit.language_guessed), pending=bool(hit.language_pending)))
    left_out = response.left_out if isinstance(response, SearchAnswer) else 0
    if left_out:
        shown = len(response.results)
        narrow = "" if site else ", or narrow the search with `site`"
        lines.append(
            f"\n[{left_out} more result(s) matched but were left out to keep this answer within its size budget: "
            f"ask with limit={shown} for these {shown} whole{narrow}.]"
        )
    if unsearched:
        lines.append(f"\nNot searched, so not in these results: {unsearched}.")
    if fresh := freshness(response):
        lines.append(f"\n{fresh}")
    lines.append(
        "\nPass a location to get_doc to read the page; add section=<the result's anchor> to read only the matched "
        "section of a long page."
    )
    return "\n".join(lines)


def freshness(response: SearchResponse, now: datetime | None = None) -> str:
    """How old each answering site's index is, in words ("forge index fetched 12 minutes ago"), for the sites the
    results came from; empty when the provider cannot tell."""
    answering = dict.fromkeys(hit.site for hit in response.results)
    said = []
    for site in answering:
        state = (response.sites or {}).get(site)
        when = state.indexed_at if state is not None else None
        if when is not None:
            said.append(f"{site} index fetched {ago(when, now)}")
    return ("Freshness: " + "; ".join(said) + ".") if said else ""


def ago(when: datetime, now: datetime | None = None) -> str:
    """`just now`, `12 minutes ago`, `3 hours ago`, `2 days ago`."""
    seconds = max(0.0, ((now or datetime.now(UTC)) - when).total_seconds())
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''} ago"
    return "just now"


WHY_NOT_SEARCHED = {
    SiteAnswer.LOADING: "still loading its index; ask again in a few seconds",
    SiteAnswer.FAILED: "its index cannot be loaded right now",
    SiteAnswer.UNPUBLISHED: "it publishes no search index",
}


def _unsearched(states: Mapping[str, SiteSearched]) -> str:
    """The sites a search did not read, each with why ("" when it read them all)."""
    return "; ".join(
        f"{name} ({WHY_NOT_SEARCHED.get(site.state, site.state.value)})"
        for name, site in states.items()
        if site.state != SiteAnswer.SEARCHED
    )
