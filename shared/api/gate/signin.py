"""Entra sign-in as an OAuth 2.0 protected resource: the metadata clients discover it by, and the challenges.

With `Auth__TenantId` and `Auth__Audience` set, this app publishes RFC 9728 Protected Resource Metadata at
`/.well-known/oauth-protected-resource` and at the path-suffixed form for the MCP endpoint
(`/.well-known/oauth-protected-resource/api/mcp`), both open:

    {"resource": "<the MCP endpoint's public URL>",
     "authorization_servers": ["{Authority}/{TenantId}/v2.0"],
     "scopes_supported": ["{Audience}/docs.read"], "bearer_methods_supported": ["header"], "resource_name": ...}

`resource` is `Auth__Resource`, else `https://{WEBSITE_HOSTNAME}/api/mcp`, else the address the server is bound to;
never the request's `Host` header, which the caller chooses. A request without a valid token is answered `401`
with `WWW-Authenticate: Bearer resource_metadata="<metadata URL>", scope="..."`, which is how MCP clients (VS Code,
agent CLIs, the SDKs) find the authorization server and sign the user in; a valid token without the scope or
role is `403` with `error="insufficient_scope"`. The document is the MCP SDK's own `ProtectedResourceMetadata`.
"""

from __future__ import annotations

from typing import Any

from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Scope

from shared.api.errors import error
from shared.api.gate.named import NamedRoute
from shared.api.mcp.transport import MCP_PATH
from shared.settings import DocumentationSettings

WELL_KNOWN = "/.well-known/oauth-protected-resource"
RESOURCE_NAME = "Documentation retrieval"


def resource_url(settings: DocumentationSettings, scope: Scope) -> str:
    """The MCP endpoint's public URL: configured, else the platform's host name, else the bound address."""
    if settings.auth.resource:
        return settings.auth.resource
    if settings.website_hostname:
        return f"https://{settings.website_hostname}{MCP_PATH}"
    host, port = scope.get("server") or ("127.0.0.1", 80)
    scheme = "https" if scope.get("scheme") == "https" else "http"
    shown = f"[{host}]" if ":" in str(host) else str(host)
    return f"{scheme}://{shown}:{port}{MCP_PATH}"


def metadata_url(resource: str) -> str:
    """RFC 9728 section 3.1: the well-known path inserted between the host and the resource's path."""
    scheme, rest = resource.split("://", 1)
    host, _, path = rest.partition("/")
    path = "/" + path.rstrip("/") if path.strip("/") else ""
    return f"{scheme}://{host}{WELL_KNOWN}{path}"


def metadata(settings: DocumentationSettings, scope: Scope) -> dict[str, Any]:
    document = ProtectedResourceMetadata(
        resource=AnyHttpUrl(resource_url(settings, scope)),
        authorization_servers=[AnyHttpUrl(settings.auth.issuer)],
        scopes_supported=settings.auth.scopes_supported() or None,
        resource_name=RESOURCE_NAME,
    )
    return document.model_dump(mode="json", exclude_none=True)


def challenge(settings: DocumentationSettings, scope: Scope, *, error: str | None = None) -> str:
    """The `WWW-Authenticate` value that sends a client to the metadata (and says what was wrong, when it was)."""
    parts = [f'resource_metadata="{metadata_url(resource_url(settings, scope))}"']
    wanted = " ".join(settings.auth.scopes_supported())
    if wanted:
        parts.append(f'scope="{wanted}"')
    if error:
        parts.insert(0, f'error="{error}"')
    return "Bearer " + ", ".join(parts)


def metadata_routes(settings: DocumentationSettings) -> list[NamedRoute]:
    """The two metadata documents, open to everyone; absent (404) while sign-in is off."""

    async def document(request: Request) -> JSONResponse:
        if not settings.auth.enabled:
            return error(404, "not_found", "Entra sign-in is not configured (Auth__TenantId)")
        return JSONResponse(metadata(settings, request.scope), headers={"Cache-Control": "public, max-age=3600"})

    return [
        NamedRoute(path, document, methods=["GET"], include_in_schema=False)
        for path in (WELL_KNOWN, WELL_KNOWN + MCP_PATH)
    ]
