"""The ASGI app: its lifespan owns the composed service and the MCP session manager; both protocols sit on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from enum import Enum

from fastapi import FastAPI

from shared import __version__
from shared.api.admin import install_admin_routes
from shared.api.discovery import install_discovery_routes
from shared.api.errors import install_error_handlers
from shared.api.front import front_routes
from shared.api.gate.access import AccessLog
from shared.api.gate.bodies import BodyDeadline
from shared.api.gate.disconnect import CancelOnDisconnect
from shared.api.gate.inbound import InboundCheck
from shared.api.gate.limits import ConcurrencyLimit
from shared.api.gate.named import NamedRoute
from shared.api.gate.signin import metadata_routes
from shared.api.insights import FeedbackDesk, install_insights_routes
from shared.api.mcp.server import build_server
from shared.api.mcp.transport import MCP_PATH, McpEndpoint, transport_security
from shared.api.rest import install_routes
from shared.compose import checked, compose, process_embedding
from shared.embedding import EmbeddingModel
from shared.entra import EntraVerifier
from shared.providers.base import DocumentationProvider
from shared.settings import DocumentationSettings, load_settings
from shared.telemetry import redaction

TITLE = "Documentation retrieval"
SUMMARY = "Search documentation sites and get whole pages as Markdown."
OPENAPI_URL = "/api/openapi.json"


class _Default(Enum):
    FROM_SETTINGS = "from-settings"


def create_app(
    settings: DocumentationSettings | None = None,
    *,
    embedding: EmbeddingModel | _Default | None = _Default.FROM_SETTINGS,
    providers: tuple[DocumentationProvider, ...] = (),
    gated_by_host: bool = False,
    build_embedding: Callable[[DocumentationSettings], EmbeddingModel | None] = process_embedding,
) -> FastAPI:
    """The ASGI app. Settings are read here, at start-up, so invalid configuration fails before any request.

    `embedding` is the process's model, shared with the warm-up timer where the host has one; by default the app
    builds its own from the settings with `build_embedding` (tests pass a fake). `providers` are added to the
    configured ones (tests pass fakes here).
    `gated_by_host` says the host checks callers before the app sees them (the Functions key): with it, or with the
    app's own checks (`Inbound__Tokens`, Entra sign-in), nothing is cacheable by a shared cache.
    The service itself is composed when the lifespan starts and closed when it ends; both hosts run it
    (uvicorn at start-up, `AsgiFunctionApp` on the first request). So is the MCP server over it, whose session
    manager runs once per app instance.
    """
    settings = checked(settings or load_settings())
    redaction.install()
    endpoint = McpEndpoint(seconds=settings.request_timeout_seconds)
    restricted = bool(settings.site_audiences)
    gated = gated_by_host or bool(settings.inbound.tokens or settings.inbound.audience_tokens) or settings.auth.enabled
    verifier = EntraVerifier(settings.auth) if settings.auth.enabled else None
    desk = FeedbackDesk()
    own_hosts = (*((settings.website_hostname,) if settings.website_hostname else ()), *settings.mcp.allowed_hosts)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # A model the app builds is its own, for one lifespan, and closed with it (as the CLI closes its own); one the
        # host passes in (shared with its warm-up timer) stays the host's.
        owned = build_embedding(settings) if embedding is _Default.FROM_SETTINGS else None
        model = embedding if isinstance(embedding, EmbeddingModel) else owned
        try:
            async with compose(settings, embedding=model, providers=providers) as composition:
                server = build_server(
                    composition.service,
                    budget_chars=settings.mcp.answer_budget_chars,
                    seconds=settings.request_timeout_seconds,
                    gated=gated or restricted,
                    desk=desk,
                )
                server.streamable_http_app(
                    streamable_http_path=MCP_PATH,
                    stateless_http=True,
                    json_response=True,
                    transport_security=transport_security(own_hosts),
                )
                async with server.session_manager.run():
                    app.state.composition, endpoint.server = composition, server
                    try:
                        yield
                    finally:
                        app.state.composition, endpoint.server = None, None
                        if verifier is not None:
                            await verifier.aclose()
        finally:
            if owned is not None:
                owned.close()

    app = FastAPI(
        title=TITLE,
        version=__version__,
        summary=SUMMARY,
        openapi_url=OPENAPI_URL,
        docs_url=None,  # the API browser is `shared.api.front`'s, with its assets served here rather than by a CDN
        swagger_ui_oauth2_redirect_url=None,
        redoc_url=None,
        lifespan=lifespan,
        redirect_slashes=False,  # a trailing-slash redirect would be built from the request's Host header
    )
    app.state.composition = None
    install_error_handlers(app)
    app.add_middleware(CancelOnDisconnect)
    app.add_middleware(BodyDeadline, seconds=settings.request_timeout_seconds)
    app.add_middleware(InboundCheck, settings=settings, verifier=verifier)
    app.add_middleware(
        ConcurrencyLimit, limit=settings.inbound.max_concurrent_per_client, hops=settings.inbound.forwarded_hops
    )
    declared = {site.lower(): site for provider in providers for site in provider.sites}
    install_routes(
        app,
        [*settings.sites, *(site for key, site in declared.items() if not settings.site_named(key))],
        gated=gated,
        restricted=restricted,
    )
    install_admin_routes(app, settings, verifier)
    install_insights_routes(app, settings, desk, verifier)
    install_discovery_routes(app, settings, endpoint, gated_by_host=gated_by_host)
    app.router.routes.extend(metadata_routes(settings))
    app.router.routes.extend(front_routes(title=TITLE, summary=SUMMARY, openapi_url=OPENAPI_URL, gated=gated))
    # Both spellings answered here: a Starlette Mount would redirect `/api/mcp` to an http:// URL built from Host.
    for path in (MCP_PATH, MCP_PATH + "/"):
        # POST only: stateless JSON holds no SSE stream (GET) and no session to end (DELETE); the MCP specification
        # has a server that offers neither answer both with 405 (streamable HTTP transport, "Listening for
        # Messages from the Server" and "Session Management").
        app.router.routes.append(NamedRoute(path, endpoint, methods=["POST"], include_in_schema=False))
    # Added last, so it is outside every other middleware: their refusals are logged too.
    app.add_middleware(AccessLog, routes=app.router.routes)
    return app
