"""The MCP protocol over the composed service: `search_docs` and `get_doc` at `/api/mcp` (streamable HTTP).

Stateless, with JSON responses rather than SSE streams: the Functions HTTP trigger buffers responses, and any
instance must be able to answer any request. The MCP server and its session manager are built per app lifespan
(the SDK's session manager runs once per instance), over the service the same lifespan composed. Both tools
return what the REST API returns, as structured content with an output schema, plus a compact text rendering for
agents that read text; failures are tool errors with the REST API's reason codes (`shared.api.errors`).

No `from __future__ import annotations` here: the SDK reads the tools' annotations at run time, and the site list
in `search_docs`' schema is built from the service's sites in `build_server`'s scope.
"""

import logging
from collections.abc import Awaitable, Sequence
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, WithJsonSchema
from starlette.types import Receive, Scope, Send

from shared import __version__
from shared.api.errors import tool_error, where, within
from shared.errors import DocsError
from shared.models import Document, SearchResponse
from shared.service import DocumentationService
from shared.validation import MAX_LIMIT, MAX_LOCATION_LENGTH, MAX_QUERY_LENGTH, MIN_LIMIT

log = logging.getLogger(__name__)

MCP_PATH = "/api/mcp"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")

INSTRUCTIONS = """\
Documentation search and retrieval for the organisation's documentation sites.
Use search_docs to find the pages that answer a question, then get_doc with a result's `location` to read the
whole page as Markdown. Search first when you do not already have a location: get_doc does not search."""

SEARCH_DESCRIPTION = """\
Search the organisation's documentation sites and get the best-matching pages, best first: each result has the
page `title`, a `location`, the `breadcrumb` of its best-matching section, a short `previewText` and the page
`url`. Use it for questions about how things are built, configured, operated or decided, when you need the
documentation's own words. A result's `location` goes straight to get_doc to read the whole page; the preview is
only a snippet. An empty result means the documentation does not cover the question, or nothing scored above the
relevance floor: rephrase with the words the docs would use, or drop `site`. `site` narrows the search to one
documentation site. The query `*` lists pages instead of ranking them."""

GET_DESCRIPTION = """\
Get one whole documentation page as Markdown, with front matter saying where it came from (source URL, site,
when it was retrieved). Pass a `location` from a search_docs result, a site-qualified path such as
`iac-azure-modules/reference/naming`, or a page URL under the documentation origin. Very long pages are cut at a
documented maximum and the text says so. On failure the error names a reason code: `not_found` (search first),
`ambiguous` (choose one of the candidates it lists), `unknown_site`, `site_unavailable`, `fetch_failed`,
`timeout` or `bad_request`."""

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def transport_security(allowed_hosts: Sequence[str]) -> TransportSecuritySettings:
    """DNS-rebinding protection that admits exactly the app's own host names and loopback (any port)."""
    hosts: list[str] = []
    origins: list[str] = []
    for host in (*LOOPBACK_HOSTS, *allowed_hosts):
        hosts += [host, f"{host}:*"]
        origins += [f"https://{host}", f"https://{host}:*", f"http://{host}", f"http://{host}:*"]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def build_server(service: DocumentationService, *, max_content_chars: int, seconds: float) -> MCPServer[Any]:
    """The MCP server with both tools over `service`; `site` lists the service's sites in the input schema."""
    server: MCPServer[Any] = MCPServer(
        name="documentation", title="Documentation retrieval", version=__version__, instructions=INSTRUCTIONS
    )
    # The schema tells agents the ranges and the sites; the service itself checks them (case-insensitively for
    # sites), so a wrong value comes back as a `bad_request` tool error naming what is accepted.
    limit_schema = {"type": "integer", "minimum": MIN_LIMIT, "maximum": MAX_LIMIT, "default": 10}
    site_schema = {"anyOf": [{"type": "string", "enum": list(service.sites)}, {"type": "null"}], "default": None}

    @server.tool(
        name="search_docs", title="Search documentation", description=SEARCH_DESCRIPTION, annotations=READ_ONLY
    )
    async def search_docs(
        query: Annotated[str, Field(description="What you want to know, in words.", max_length=MAX_QUERY_LENGTH)],
        limit: Annotated[
            int,
            Field(description="How many results to return (at most 25 are)."),
            WithJsonSchema(limit_schema),
        ] = 10,
        site: Annotated[
            str | None, Field(description="Search only this documentation site."), WithJsonSchema(site_schema)
        ] = None,
    ) -> Annotated[CallToolResult, SearchResponse]:
        async def answer() -> CallToolResult:
            response = await within(service.search(query, limit=limit, site=site), seconds)
            return CallToolResult(
                content=[TextContent(type="text", text=render_search(response))],
                structured_content=response.model_dump(mode="json", by_alias=True),
            )

        return await _guarded(answer())

    @server.tool(name="get_doc", title="Get a documentation page", description=GET_DESCRIPTION, annotations=READ_ONLY)
    async def get_doc(
        location: Annotated[
            str,
            Field(
                description="A search_docs result's location, a site-qualified path, or a page URL.",
                max_length=MAX_LOCATION_LENGTH,
            ),
        ],
    ) -> Annotated[CallToolResult, Document]:
        async def answer() -> CallToolResult:
            document = bounded(await within(service.get(location), seconds), max_content_chars)
            return CallToolResult(
                content=[TextContent(type="text", text=document.content)],
                structured_content=document.model_dump(mode="json", by_alias=True),
            )

        return await _guarded(answer())

    return server


async def _guarded(answer: Awaitable[CallToolResult]) -> CallToolResult:
    """A tool's answer, or the tool error its failure is: core errors say their reason code; anything else is an
    internal error logged by type and frame only (the SDK would log its text, which can quote the arguments)."""
    try:
        return await answer
    except DocsError as exc:
        return failure(exc)
    except Exception as exc:
        log.error("tool failed unexpectedly: %s at %s", type(exc).__name__, where(exc))
        return failure(exc)


def failure(exc: BaseException) -> CallToolResult:
    """A tool error an agent can read: the reason code first, then what it means and what to do next."""
    return CallToolResult(content=[TextContent(type="text", text=tool_error(exc))], is_error=True)


def render_search(response: SearchResponse) -> str:
    """What an agent reads: one block per hit (title, location, breadcrumb, preview)."""
    if not response.results:
        return (
            "No results: the documentation does not cover this, or nothing scored above the relevance floor. "
            "Try the words the documentation would use, or search without `site`."
        )
    lines = [f"{len(response.results)} result(s), best first (answered by {response.provider}):"]
    for rank, hit in enumerate(response.results, 1):
        lines.append(f"\n{rank}. {hit.page_title or hit.title}\n   location: {hit.location}")
        if len(hit.breadcrumb) > 1:
            lines.append(f"   section: {' > '.join(hit.breadcrumb)}")
        if hit.preview_text:
            lines.append(f"   {hit.preview_text}")
    lines.append("\nPass a location to get_doc to read the whole page.")
    return "\n".join(lines)


def bounded(document: Document, limit: int) -> Document:
    """The document with its Markdown cut at `limit` characters, saying so at the cut."""
    if len(document.content) <= limit:
        return document
    cut = document.content[:limit].rsplit("\n", 1)[0] if "\n" in document.content[:limit] else document.content[:limit]
    note = (
        f"\n\n[The page is longer than this tool returns: {len(cut):,} of {len(document.content):,} characters shown. "
        f"Read the rest at {document.url}]\n"
    )
    return document.model_copy(update={"content": cut + note})


class McpEndpoint:
    """`/api/mcp` (and `/api/mcp/`, never redirected) handed to the session manager the lifespan started."""

    def __init__(self) -> None:
        self.server: MCPServer[Any] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.server is None:
            from starlette.responses import JSONResponse

            body = {"error": {"code": "starting", "message": "the MCP endpoint is not started"}}
            await JSONResponse(body, status_code=503)(scope, receive, send)
            return
        await self.server.session_manager.handle_request(scope, receive, send)
