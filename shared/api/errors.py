"""Core errors as protocol answers, in one place: HTTP statuses for REST, tool errors for MCP, same reason codes.

error                                     REST                              MCP tool error text starts
InvalidRequestError, request validation   400 bad_request                   bad_request:
UnknownSectionError (an InvalidRequest)   400 bad_request + sections        bad_request: ... Sections: ...
ResolutionError                           404 not_found | unknown_site,     its reason, then what it means
                                          409 ambiguous, 502 fetch_failed,  and what to do next
                                          503 site_unavailable (+ resolution)
RequestTimeoutError                       504 timeout                       timeout:
ServiceNotStarted                         503 starting                      starting:
ServiceUnavailableError                   503 unavailable + providers       unavailable: ... (each provider's state)
Unauthorized, Forbidden (+ challenge)     401 unauthorized, 403 forbidden   its code, then its message (a refusal
Throttled (+ Retry-After)                 429 too_many_requests             comes before any tool runs, at the
CredentialsUnavailable, KeysUnavailable   503 unavailable                   gate: `shared.api.gate.inbound`)
an unknown route                          404 not_found                     (the SDK's unknown-tool error)
anything else                             500 internal_error (logged with its type, never its text)

`respond` turns any of them into the response, with the `WWW-Authenticate` challenge or `Retry-After` a refusal
carries: the exception handlers and the middlewares that refuse before a route runs answer through it alike. A tool
error carries the REST body as structured content too (`answer`); the body's shape, its encoder and the remote
provider's decoder are one module (`shared.error_body`).
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from shared.deadline import budget
from shared.error_body import candidates_line, encode
from shared.errors import (
    AccessRefused,
    CredentialsUnavailable,
    DocsError,
    InvalidRequestError,
    RequestTimeoutError,
    ResolutionError,
    ServiceUnavailableError,
    Throttled,
    Unauthorized,
)
from shared.models import Reason, Resolution
from shared.reading import UnknownSectionError
from shared.service import by_nearness
from shared.validation import VERSION_REFUSED, bound_refusal

log = logging.getLogger(__name__)

T = TypeVar("T")

STATUS_BY_REASON = {
    Reason.NOT_FOUND: 404,
    Reason.UNKNOWN_SITE: 404,
    Reason.AMBIGUOUS: 409,
    Reason.SITE_UNAVAILABLE: 503,
    Reason.FETCH_FAILED: 502,
}


class ServiceNotStarted(DocsError):
    """A request arrived before the ASGI lifespan composed the service (a host that skipped the lifespan)."""


async def within(work: Awaitable[T], seconds: float) -> T:
    """`work` under the request's one deadline, for both protocols; RequestTimeoutError when it passes.

    Its outbound calls share the same budget (`shared.deadline`), less a grace in which a provider that gave up
    on a slow origin still answers as the spec says for that failure.
    """
    try:
        with budget(seconds):
            async with asyncio.timeout(seconds):
                return await work
    except TimeoutError:
        raise RequestTimeoutError(seconds) from None


NEXT_STEP = {
    Reason.NOT_FOUND: "No page is at this location. Search with search_docs first and pass a result's location.",
    Reason.UNKNOWN_SITE: "The location names a site that is not configured. Search with search_docs to find the "
    "page's location.",
    Reason.AMBIGUOUS: "The location matches several pages. Call get_doc again with one of the candidates.",
    Reason.SITE_UNAVAILABLE: "The site's index cannot be loaded right now. Try again later; other sites still answer.",
    Reason.FETCH_FAILED: "The page exists but its content could not be fetched. Try again later.",
}


MAX_SECTIONS_LISTED = 60


@dataclass(frozen=True, slots=True)
class Wire:
    """How one kind of error reaches a caller: its HTTP status and reason code, what its body carries beside them,
    and what an MCP tool error adds to its text (what to do next)."""

    status: int
    code: str
    next_step: str = ""
    body: Callable[[Any], dict[str, Any]] = lambda exc: {}
    message: Callable[[Any], str] = str
    text: Callable[[Any], str] | None = None
    """An MCP tool error's whole text, when the code, message and next step are not it."""
    headers: Callable[[Any], dict[str, str] | None] = lambda exc: None
    """What a REST answer carries beside its body (a refusal's challenge, a throttled caller's `Retry-After`)."""


def _challenge(exc: AccessRefused) -> dict[str, str] | None:
    return {"WWW-Authenticate": exc.challenge} if exc.challenge else None


def _section_message(exc: UnknownSectionError) -> str:
    listed = len(exc.sections[:MAX_SECTIONS_LISTED])
    left = len(exc.sections) - listed
    return f"{exc} (the first {listed} of {len(exc.sections)}: view=outline lists them all)" if left else str(exc)


def _section_text(exc: UnknownSectionError) -> str:
    listed = "; ".join(
        f"{'#' * entry.level} {entry.title}" + (f" (anchor {entry.anchor})" if entry.anchor else "")
        for entry in exc.sections[:MAX_SECTIONS_LISTED]
    )
    more = len(exc.sections) - MAX_SECTIONS_LISTED
    return f"bad_request: {exc}. Sections: {listed}" + (f"; and {more} more" if more > 0 else "") + "."


def _unavailable_text(exc: ServiceUnavailableError) -> str:
    states = "; ".join(f"{name}: {_states(details)}" for name, details in sorted(exc.failures.items()))
    return f"unavailable: {exc} ({states}). Nothing could be searched; try again later."


ERRORS: dict[type[BaseException], Wire] = {
    UnknownSectionError: Wire(
        400,
        "bad_request",
        body=lambda exc: {"sections": exc.sections[:MAX_SECTIONS_LISTED]},
        message=_section_message,
        text=_section_text,
    ),
    InvalidRequestError: Wire(400, "bad_request", "Correct the argument and call again."),
    ServiceNotStarted: Wire(503, "starting", "Try again in a moment."),
    ServiceUnavailableError: Wire(
        503, "unavailable", body=lambda exc: {"providers": exc.failures}, text=_unavailable_text
    ),
    RequestTimeoutError: Wire(504, "timeout", "Try again; a narrower search (`site`) answers faster."),
    Unauthorized: Wire(401, "unauthorized", headers=_challenge),
    Throttled: Wire(429, "too_many_requests", headers=lambda exc: {"Retry-After": str(exc.seconds)}),
    CredentialsUnavailable: Wire(503, "unavailable", headers=_challenge),  # KeysUnavailable too
    AccessRefused: Wire(403, "forbidden", headers=_challenge),
}
"""Every error a caller can meet, once, by class: the first of an error's classes (its MRO) listed here says how it
reaches REST and MCP alike. A failed resolution (`ResolutionError`) is the spec's reason, by `STATUS_BY_REASON` and
`NEXT_STEP`; anything not listed is an `internal_error` (500)."""
INTERNAL = Wire(500, "internal_error", message=lambda exc: "the service failed unexpectedly; the failure was logged")


def wire(exc: BaseException) -> Wire:
    """How `exc` reaches a caller (`ERRORS`)."""
    if isinstance(exc, ResolutionError):
        reason = exc.resolution.reason
        return Wire(
            STATUS_BY_REASON.get(reason, 404),
            reason.value,
            body=lambda error: {"resolution": error.resolution},
            message=lambda error: error.resolution.detail,
            text=lambda error: _resolution_text(error.resolution),
        )
    return next((ERRORS[kind] for kind in type(exc).__mro__ if kind in ERRORS), INTERNAL)


def tool_error(exc: BaseException) -> str:
    """The text of an MCP tool error: the reason code first, then what it means and what to do next."""
    found = wire(exc)
    if found.text is not None:
        return found.text(exc)
    if found is INTERNAL:
        return "internal_error: the service failed unexpectedly; the failure was logged."
    step = f" {found.next_step}" if found.next_step else ""
    return f"{found.code}: {found.message(exc)}.{step}"


def _readable(request: Request, name: str, problem: Mapping[str, Any]) -> str:
    """A validation problem in the service's words: a pattern in a message says nothing to a person."""
    kind = problem.get("type", "")
    if kind in ("missing", "string_too_short") or (kind == "string_pattern_mismatch" and name == "q"):
        if kind == "string_pattern_mismatch" and any(not char.isspace() for char in str(problem.get("input", ""))):
            return f"{name} must not contain control characters"
        return f"{name} is required and must not be blank"
    if kind == "string_pattern_mismatch" and name == "site":
        composition = getattr(request.app.state, "composition", None)
        given = str(problem.get("input", ""))
        sites = ", ".join(by_nearness(given, composition.service.sites)) if composition is not None else "a site"
        return f"site must be one of: {sites}"
    if kind == "string_pattern_mismatch" and name == "version":
        return VERSION_REFUSED
    said = bound_refusal(name, kind, problem.get("ctx", {}).get("max_length"))
    return said if said is not None else f"{name}: {problem.get('msg', 'invalid value')}"


def _states(details: dict[str, str]) -> str:
    return ", ".join(f"{key} {value}" for key, value in sorted(details.items()))


def _resolution_text(resolution: Resolution) -> str:
    lines = [f"{resolution.reason.value}: {resolution.detail}", NEXT_STEP.get(resolution.reason, "")]
    if resolution.candidates:
        lines.append(candidates_line(resolution.candidates))
    if resolution.suggestions:
        lines.append("Did you mean: " + ", ".join(resolution.suggestions))
    return "\n".join(line for line in lines if line)


def error(
    status: int, code: str, message: str, *, headers: Mapping[str, str] | None = None, **extra: Any
) -> JSONResponse:
    return JSONResponse({**encode(code, message), **extra}, status_code=status, headers=headers)


def answer(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """The HTTP status and the body (`ErrorBody`) a core error is, for REST answers and MCP tool errors alike."""
    found = wire(exc)
    return found.status, encode(found.code, found.message(exc), **found.body(exc))


def headers_of(exc: BaseException) -> dict[str, str] | None:
    """What an error's answer carries beside its body (`Wire.headers`)."""
    return wire(exc).headers(exc)


def respond(exc: BaseException) -> JSONResponse:
    """The answer to `exc`: its status, body (`answer`) and headers (`headers_of`); an unexpected error is logged
    (`internal_error`). What the exception handlers return, and what a middleware sends when it refuses."""
    status, body = answer(exc)
    if status == 500:
        return internal_error(exc)
    return JSONResponse(body, status_code=status, headers=headers_of(exc))


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(DocsError)
    async def core(_: Request, exc: DocsError) -> JSONResponse:
        return respond(exc)

    @app.exception_handler(RequestValidationError)
    async def validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0]
        name = ".".join(str(part) for part in first.get("loc", ())[1:]) or "request"
        return error(400, "bad_request", _readable(request, name, first))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error(exc.status_code, code, str(exc.detail), headers=exc.headers)  # a 405 keeps its Allow header

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        return internal_error(exc)


def internal_error(exc: BaseException) -> JSONResponse:
    """A 500 for a failure nobody anticipated, logged with its type and where it happened, never its text (an
    exception's message can quote the query or location that caused it)."""
    log.error("unhandled %s at %s", type(exc).__name__, where(exc))
    return error(500, "internal_error", "the service failed unexpectedly; the failure was logged")


def where(exc: BaseException) -> str:
    """`file:line in function` of the innermost frame of `exc`'s traceback."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "unknown"
    last = frames[-1]
    return f"{last.filename}:{last.lineno} in {last.name}"
