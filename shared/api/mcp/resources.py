"""Pages as MCP resources: `docs://{site}/{path}`, read within the answer budget, linked from search results.

`resources/read` answers what `get_doc` answers without `maxChars` (or with the URI's `?maxChars=`): the page, or
its first part from `?offset=`. The first item is the Markdown alone (`text/markdown`), so parts join exactly; its
`_meta` carries REST `get`'s fields (`totalChars`, `offset`, `nextOffset`, `contentHash`, `lastModified`) and the
next part's URI (`nextUri`). When the page goes on, a second, plain-text item says so in words, with the headings
after the cut. A URI that names no configured site or carries another query parameter is refused, never read as
something else.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.shared.exceptions import MCPError
from mcp.shared.uri_template import UriTemplate
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS, ResourceLink

from shared.api import caching
from shared.api.errors import answer, tool_error, where, within
from shared.api.mcp import budget
from shared.api.mcp.envelope import MODERN
from shared.errors import DocsError, InvalidRequestError
from shared.models import Document, SearchResult
from shared.reading import check_read
from shared.requests import ReadRequest, current_caller
from shared.service import DocumentationService
from shared.validation import whole_number

log = logging.getLogger(__name__)

RESOURCE_TEMPLATE = "docs://{site}/{+path}{?offset,maxChars}"
RESOURCE_NOT_FOUND = -32002
"""The 2025-11-25 revision's JSON-RPC code for a resource that does not exist; 2026-07-28 retired it for `-32602`
(Invalid params), which the SDK's own `ResourceNotFoundError` sends there."""
QUERY_NAMES = ("offset", "maxChars")
META_FIELDS = (
    "location",
    "site",
    "url",
    "totalChars",
    "offset",
    "nextOffset",
    "contentHash",
    "lastModified",
    "indexedAt",
)
TEMPLATE = UriTemplate.parse(RESOURCE_TEMPLATE)


def page_uri(site: str, location: str, *, offset: int | None = None, max_chars: int | None = None) -> str:
    """The resource URI of a page, from a result's site and location (already percent-encoded as indexed)."""
    head, _, rest = location.partition("/")
    path = rest if head.lower() == site.lower() else "" if location.lower() == site.lower() else location
    uri = f"docs://{site}/{quote(path, safe='/%')}"
    query = "&".join(f"{name}={value}" for name, value in (("offset", offset), ("maxChars", max_chars)) if value)
    return f"{uri}?{query}" if query else uri


def resource_link(hit: SearchResult) -> ResourceLink:
    return ResourceLink(
        type="resource_link",
        uri=page_uri(hit.site, hit.location),
        name=hit.location or hit.site,
        title=hit.page_title or hit.title,
        mime_type="text/markdown",
    )


@dataclass(frozen=True, slots=True)
class PageRead:
    """A page read as resource contents, and how long a client may keep them (`caching.fresh_seconds`)."""

    contents: list[ReadResourceContents]
    fresh_seconds: int


async def read_page(
    service: DocumentationService, uri: str, *, budget_chars: int, seconds: float, revision: str = ""
) -> PageRead:
    """The page at `uri` as resource contents; an MCPError carrying the REST error body when it cannot be read:
    `-32602` for a bad URI, the revision's code for a resource that cannot be read (`-32602` in 2026-07-28, `-32002`
    before: a page that does not exist, or of a site that cannot be read now, with the reason in the message and
    `data`), `-32603` only for the service's own failure."""
    try:
        return await _read(service, uri, budget_chars=budget_chars, seconds=seconds)
    except DocsError as exc:
        status, body = answer(exc)
        missing = INVALID_PARAMS if revision >= MODERN else RESOURCE_NOT_FOUND
        code = INVALID_PARAMS if status == 400 else INTERNAL_ERROR if status == 500 else missing
        raise MCPError(code, tool_error(exc), data=body) from None
    except Exception as exc:  # logged by type and frame: the SDK would log the URI, which names the location
        log.error("resource read failed unexpectedly: %s at %s", type(exc).__name__, where(exc))
        raise MCPError(INTERNAL_ERROR, tool_error(exc), data=answer(exc)[1]) from None


async def _read(service: DocumentationService, uri: str, *, budget_chars: int, seconds: float) -> PageRead:
    matched = TEMPLATE.match(uri)
    if matched is None or not matched.get("site"):
        raise InvalidRequestError("a page's URI is docs://{site}/{path}, with ?offset= and ?maxChars= optional")
    given = [name for name, _ in parse_qsl(urlsplit(uri).query, keep_blank_values=True)]
    unknown = sorted(set(given) - set(QUERY_NAMES))
    if unknown:
        raise InvalidRequestError(f"a page's URI takes no {', '.join(unknown)}; it takes: {', '.join(QUERY_NAMES)}")
    repeated = sorted({name for name in given if given.count(name) > 1})
    if repeated:
        raise InvalidRequestError(f"a page's URI names {', '.join(repeated)} more than once; give each at most once")
    site = str(matched["site"])
    if site.lower() not in {known.lower() for known in service.sites}:
        raise InvalidRequestError(f"site must be one of: {', '.join(service.sites)}")
    read = check_read(offset=_number(matched, "offset"), max_chars=_number(matched, "maxChars"))
    asked = ReadRequest(f"{site}/{matched.get('path') or ''}", read, caller=current_caller(), cleaned=True)
    selection = await within(service.select(asked), seconds)
    result = budget.read_answer(selection, read, budget_chars)
    part = Document.model_validate(result.structured_content)
    structured = result.structured_content or {}
    meta: dict[str, Any] = {key: structured[key] for key in META_FIELDS if key in structured}

    def next_uri(document: Document, offset: int, max_chars: int | None) -> str:
        return page_uri(document.site, document.location, offset=offset, max_chars=max_chars)

    if part.next_offset is not None:
        meta["nextUri"] = next_uri(part, part.next_offset, read.max_chars)
    contents = [ReadResourceContents(content=part.content, mime_type="text/markdown", meta=meta)]
    head, tail = budget.continuation(
        selection,
        part,
        budget_chars,
        max_chars=read.max_chars,
        next_call=lambda document, offset, chars: f"resources/read {next_uri(document, offset, chars)}",
    )
    note = (head + tail).strip()
    if note:
        contents.append(ReadResourceContents(content=note, mime_type="text/plain", meta={"continuation": True}))
    return PageRead(contents, caching.fresh_seconds(selection.document))


def _number(matched: dict[str, Any], name: str) -> int | None:
    value = matched.get(name)
    if value in (None, ""):
        return None
    return whole_number(name, str(value))
