"""How agents and their hosts find this service before they connect: the MCP server card and llms.txt.

    GET /.well-known/mcp/server-card.json     the server card (the Server Card extension's path, SEP-2127): who the
                                             server is, its endpoint, the revisions it speaks, its tools and how
                                             to sign in; open, like health (no Functions key, no token)
    GET /api/docs/llms.txt?site=&version=    the llms.txt of one site, or of every site the caller may read: its
                                             pages as links with their titles and first sentences

The card is built from settings, never from the request's Host header (the endpoint URL is the sign-in metadata's
`resource_url`). llms.txt follows the caller's access as every other answer does (`SiteAudiences`). No
`from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
"""

import re
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse

from shared import __version__
from shared.api.errors import within
from shared.api.gate.named import NamedRoute
from shared.api.gate.signin import resource_url
from shared.api.mcp.transport import McpEndpoint
from shared.api.rest import composition, known
from shared.compose import Composition
from shared.models import SearchResult
from shared.requests import current_caller
from shared.settings import DocumentationSettings

SERVER_CARD_PATH = "/.well-known/mcp/server-card.json"
LLMS_PATH = "/api/docs/llms.txt"
CARD_SCHEMA = "https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json"
REVISIONS = ["2025-11-25", "2026-07-28"]
_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)")


def server_card(
    settings: DocumentationSettings, scope: Any, tools: list[str], *, gated_by_host: bool
) -> dict[str, Any]:
    """The server card: the endpoint, the revisions, the tools, and the credential a client sends."""
    url = resource_url(settings, scope)
    host = url.split("://", 1)[1].split("/", 1)[0].split(":", 1)[0]
    remote: dict[str, Any] = {"type": "streamable-http", "url": url, "supportedProtocolVersions": REVISIONS}
    if settings.inbound.tokens or settings.inbound.audience_tokens:
        remote["headers"] = [_header("Authorization", "Bearer token accepted by this deployment (Inbound__Tokens).")]
    elif gated_by_host and not settings.auth.enabled:
        remote["headers"] = [_header("x-functions-key", "The Functions key of this app (its default host key).")]
    sign_in = "entra-id" if settings.auth.enabled else ("bearer" if "headers" in remote else "none")
    return {
        "$schema": CARD_SCHEMA,
        "name": f"{'.'.join(reversed(host.split('.')))}/documentation",
        "version": __version__,
        "title": "Documentation retrieval",
        "description": "Search the organisation's documentation sites and read whole pages as Markdown.",
        "remotes": [remote],
        "_meta": {
            "io.github.documentation-retrieval/tools": tools,
            "io.github.documentation-retrieval/signIn": sign_in,
            "io.github.documentation-retrieval/skill": "skill://docs-retrieval/SKILL.md",
        },
    }


def _header(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "description": description, "isRequired": True, "isSecret": True}


def llms_txt(pages: dict[str, list[SearchResult]], *, title: str) -> str:
    """The llms.txt format: a title, a one-line summary, then each site's pages as links with their first sentence."""
    count = sum(len(listed) for listed in pages.values())
    lines = [f"# {title}", "", f"> {count} pages of documentation in {len(pages)} site(s), as Markdown through get."]
    for site, listed in pages.items():
        lines += ["", f"## {site}", ""]
        for page in listed:
            sentence = _first_sentence(page.preview_text)
            lines.append(f"- [{page.page_title or page.title}]({page.url})" + (f": {sentence}" if sentence else ""))
    return "\n".join(lines) + "\n"


def _first_sentence(text: str) -> str:
    flat = " ".join(text.replace("...", " ").split())
    found = _SENTENCE.match(flat)
    return (found.group(1) if found else flat)[:200]


def install_discovery_routes(
    app: FastAPI, settings: DocumentationSettings, endpoint: McpEndpoint, *, gated_by_host: bool
) -> None:
    async def card(request: Request) -> JSONResponse:
        server = endpoint.server
        tools = [tool.name for tool in await server.list_tools()] if server is not None else []
        body = server_card(settings, request.scope, tools, gated_by_host=gated_by_host)
        return JSONResponse(body, headers={"Cache-Control": "public, max-age=3600"})

    app.router.routes.append(NamedRoute(SERVER_CARD_PATH, card, methods=["GET"], include_in_schema=False))
    Composed = Annotated[Composition, Depends(composition)]

    @app.get(
        LLMS_PATH, tags=["docs"], dependencies=[Depends(known("site", "version"))], response_class=PlainTextResponse
    )
    async def llms(
        composed: Composed,
        site: Annotated[
            str | None, Query(max_length=64, description="One site; every site you may read without.")
        ] = None,
        version: Annotated[str | None, Query(max_length=64, description="A version of a versioned site.")] = None,
    ) -> Response:
        """The llms.txt of one site (or of every site you may read): each page as a link with its title and first
        sentence, so an agent or a crawler sees what the documentation holds."""
        caller, service = current_caller(), composed.service
        named = service.check_site(site, service.hidden(caller))
        sites = [named] if named is not None else list(service.sites_for(caller))

        async def listed() -> dict[str, list[SearchResult]]:
            pages: dict[str, list[SearchResult]] = {}
            for one in sites:
                found = await service.listing(one, version if named else None, caller)
                if found:
                    pages[one] = found
            return pages

        pages = await within(listed(), composed.settings.request_timeout_seconds)  # one deadline for every site
        title = named or "Documentation"
        vary = {"Vary": "Authorization"} if composed.settings.site_audiences else {}
        return PlainTextResponse(llms_txt(pages, title=title), media_type="text/plain; charset=utf-8", headers=vary)
