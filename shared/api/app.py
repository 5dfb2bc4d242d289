"""The REST API over the documentation service, its OpenAPI document, and the one error-to-status mapping."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from shared import __version__
from shared.errors import InvalidRequestError, ResolutionError
from shared.models import Document, Reason, SearchResponse
from shared.service import DocumentationService, create_service
from shared.settings import DocumentationSettings, load_settings
from shared.validation import MAX_LIMIT, MAX_LOCATION_LENGTH, MAX_QUERY_LENGTH, MIN_LIMIT

log = logging.getLogger(__name__)

ServiceFactory = Callable[[DocumentationSettings], AbstractAsyncContextManager[DocumentationService]]

STATUS_BY_REASON = {
    Reason.NOT_FOUND: 404,
    Reason.UNKNOWN_SITE: 404,
    Reason.AMBIGUOUS: 409,
    Reason.SITE_UNAVAILABLE: 503,
    Reason.FETCH_FAILED: 502,
}


class ServiceHolder:
    """Creates the service on first use, so hosts that skip ASGI lifespan events still work."""

    def __init__(self, settings: DocumentationSettings, factory: ServiceFactory) -> None:
        self.settings = settings
        self._factory = factory
        self._context: AbstractAsyncContextManager[DocumentationService] | None = None
        self._service: DocumentationService | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> DocumentationService:
        if self._service is None:
            async with self._lock:
                if self._service is None:
                    context = self._factory(self.settings)
                    self._service = await context.__aenter__()
                    self._context = context
        return self._service

    async def close(self) -> None:
        if self._context is not None:
            context, self._context, self._service = self._context, None, None
            await context.__aexit__(None, None, None)


def _error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}, **extra}, status_code=status)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(InvalidRequestError)
    async def invalid(_: Request, exc: InvalidRequestError) -> JSONResponse:
        return _error(400, "bad_request", str(exc))

    @app.exception_handler(RequestValidationError)
    async def validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0]
        name = ".".join(str(part) for part in first.get("loc", ())[1:]) or "request"
        return _error(400, "bad_request", f"{name}: {first.get('msg', 'invalid value')}")

    @app.exception_handler(ResolutionError)
    async def unresolved(_: Request, exc: ResolutionError) -> JSONResponse:
        resolution = exc.resolution
        status = STATUS_BY_REASON.get(resolution.reason, 404)
        body = resolution.model_dump(mode="json", by_alias=True)
        return _error(status, resolution.reason.value, resolution.detail, resolution=body)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = "not_found" if exc.status_code == 404 else "http_error"
        return _error(exc.status_code, code, str(exc.detail))

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled %s", type(exc).__name__)
        return _error(500, "internal_error", "the service failed unexpectedly; the failure was logged")


def create_app(
    settings: DocumentationSettings | None = None, *, service_factory: ServiceFactory = create_service
) -> FastAPI:
    """The ASGI app. Settings are read here, at start-up, so invalid configuration fails before any request."""
    settings = settings or load_settings()
    holder = ServiceHolder(settings, service_factory)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await holder.close()

    app = FastAPI(
        title="Documentation retrieval",
        version=__version__,
        summary="Search documentation sites and get whole pages as Markdown.",
        openapi_url="/api/openapi.json",
        docs_url="/api/ui",
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.holder = holder
    _install_error_handlers(app)
    _install_access_log(app)
    _install_routes(app, holder)
    return app


def _install_access_log(app: FastAPI) -> None:
    """Method, path and status only: query strings carry raw queries and locations, which are never logged."""

    @app.middleware("http")
    async def access_log(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        started = time.perf_counter()
        response = await call_next(request)
        elapsed = (time.perf_counter() - started) * 1000
        log.info("%s %s %d %.1fms", request.method, request.url.path, response.status_code, elapsed)
        return response


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"description": "Bad input: `{error: {code: bad_request, message}}`"},
}
GET_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERROR_RESPONSES,
    404: {"description": "`not_found` or `unknown_site`, with `resolution`"},
    409: {"description": "`ambiguous`, with `resolution.candidates`"},
    502: {"description": "`fetch_failed`: the page resolved but no content could be fetched"},
    503: {"description": "`site_unavailable`: the site's index could not be loaded"},
}


def _single_valued(request: Request) -> None:
    """A repeated parameter is refused: taking one of the values would be a silent guess."""
    repeated = sorted(
        {key for key, _ in request.query_params.multi_items() if len(request.query_params.getlist(key)) > 1}
    )
    if repeated:
        raise InvalidRequestError(f"{', '.join(repeated)} must be given once")


def _install_routes(app: FastAPI, holder: ServiceHolder) -> None:
    @app.get(
        "/api/docs/search",
        response_model=SearchResponse,
        responses=ERROR_RESPONSES,
        tags=["docs"],
        dependencies=[Depends(_single_valued)],
    )
    async def search(
        q: Annotated[
            str | None, Query(description="Search text; `*` lists pages.", max_length=MAX_QUERY_LENGTH)
        ] = None,
        limit: Annotated[int, Query(ge=MIN_LIMIT, le=MAX_LIMIT, description="Results wanted (capped at 25).")] = 10,
        site: Annotated[str | None, Query(description="Search only this configured site.", max_length=200)] = None,
    ) -> SearchResponse:
        """Search every configured site; the first provider with results answers."""
        service = await holder.get()
        return await service.search(q or "", limit=limit, site=site or None)

    @app.get(
        "/api/docs/get",
        response_model=Document,
        responses=GET_ERRORS,
        tags=["docs"],
        dependencies=[Depends(_single_valued)],
    )
    async def get(
        location: Annotated[
            str | None,
            Query(
                description="A search result's location, a path, or a URL under the origin.",
                max_length=MAX_LOCATION_LENGTH,
            ),
        ] = None,
    ) -> Document:
        """Fetch one whole page as Markdown with front matter; `resolution` says how the location resolved."""
        service = await holder.get()
        return await service.get(location)

    @app.get("/api/health", tags=["ops"])
    async def health() -> dict[str, Any]:
        """Per-site load state and the cache store, without loading anything."""
        service = await holder.get()  # creates clients only; no site is loaded here
        health = service.health()
        return {
            "status": "ok",
            "version": __version__,
            "origin": holder.settings.origin,
            "defaultSite": holder.settings.default_site,
            "sites": health["providers"].get("mkdocs", {}),  # type: ignore[attr-defined]
            "cache": health["cache"],
        }
