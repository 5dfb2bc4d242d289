"""Core errors as HTTP answers, in one place: every status the API returns for a failure is decided here.

    InvalidRequestError, request validation   400 bad_request
    ResolutionError                           404 not_found | unknown_site, 409 ambiguous,
                                              502 fetch_failed, 503 site_unavailable (with `resolution`)
    ServiceNotStarted                         503 starting
    an unknown route                          404 not_found
    anything else                             500 internal_error (logged with its type, never its text)

The MCP endpoint's mapping of the same errors to tool errors sits beside this one.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from shared.errors import DocsError, InvalidRequestError, ResolutionError
from shared.models import Reason

log = logging.getLogger(__name__)

STATUS_BY_REASON = {
    Reason.NOT_FOUND: 404,
    Reason.UNKNOWN_SITE: 404,
    Reason.AMBIGUOUS: 409,
    Reason.SITE_UNAVAILABLE: 503,
    Reason.FETCH_FAILED: 502,
}


class ServiceNotStarted(DocsError):
    """A request arrived before the ASGI lifespan composed the service (a host that skipped the lifespan)."""


def error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}, **extra}, status_code=status)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(InvalidRequestError)
    async def invalid(_: Request, exc: InvalidRequestError) -> JSONResponse:
        return error(400, "bad_request", str(exc))

    @app.exception_handler(RequestValidationError)
    async def validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0]
        name = ".".join(str(part) for part in first.get("loc", ())[1:]) or "request"
        return error(400, "bad_request", f"{name}: {first.get('msg', 'invalid value')}")

    @app.exception_handler(ResolutionError)
    async def unresolved(_: Request, exc: ResolutionError) -> JSONResponse:
        resolution = exc.resolution
        status = STATUS_BY_REASON.get(resolution.reason, 404)
        body = resolution.model_dump(mode="json", by_alias=True)
        return error(status, resolution.reason.value, resolution.detail, resolution=body)

    @app.exception_handler(ServiceNotStarted)
    async def not_started(_: Request, exc: ServiceNotStarted) -> JSONResponse:
        return error(503, "starting", str(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = "not_found" if exc.status_code == 404 else "http_error"
        return error(exc.status_code, code, str(exc.detail))

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled %s", type(exc).__name__, exc_info=exc)
        return error(500, "internal_error", "the service failed unexpectedly; the failure was logged")
