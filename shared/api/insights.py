"""Usage insights over HTTP: the report for the documentation's owners and agents' feedback on pages.

    GET  /api/admin/insights?days=7&site=&version=   the report (`shared.insights.report`), with the insights credential
    POST /api/docs/feedback   {"location", "kind": "outdated"|"wrong"|"missing"|"unclear", "text"}   202

The report takes its own credential (`Insights__Tokens`, or an Entra app role in `Insights__AppRoles`), never the
readers' (`Inbound__Tokens`) nor the publish hook's (`Refresh__Tokens`), which a docs pipeline holds: without it
`401`, with a token that does not carry it `401` (a reader's token is not one of its tokens) or `403` (a valid Entra
token without the role). Feedback is a reader's, like search: it is rate-limited per caller (`FeedbackDesk`, shared
with the MCP tool `submit_feedback`), its location must name a page `get` serves, and its text is scrubbed before it
is kept. With insights off, the report answers `404` and feedback `400` saying so. Neither logs a question, a
location or a text.

No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
"""

import asyncio
import json
import math
import time
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse

from shared.api.admin import AdminGate, Credential, RateLimit
from shared.api.errors import error, within
from shared.api.gate.bodies import nested_too_deeply, read_body
from shared.api.rest import composition, known
from shared.compose import Composition
from shared.entra import EntraVerifier
from shared.errors import InvalidRequestError, ServiceUnavailableError, Throttled
from shared.insights.events import MAX_FEEDBACK_CHARS, Event, FeedbackKind
from shared.insights.report import Scope, build
from shared.models import Document, FeedbackAccepted
from shared.requests import ReadRequest, current_caller
from shared.service import DocumentationService
from shared.settings import DocumentationSettings
from shared.validation import MAX_LOCATION_LENGTH

INSIGHTS_PATH = "/api/admin/insights"
FEEDBACK_PATH = "/api/docs/feedback"
FEEDBACK_BURST = 5
FEEDBACK_REFILL_SECONDS = 60.0
MAX_FEEDBACK_BODY = 16_384
FEEDBACK_SHAPE = '{"location": "<a page>", "kind": "outdated" | "wrong" | "missing" | "unclear", "text": "<why>"}'


class FeedbackDesk:
    """Takes agents' feedback for REST and MCP alike: checks it, holds each caller to `FEEDBACK_BURST` at once and
    one more every `FEEDBACK_REFILL_SECONDS`, resolves its page and hands it to the service's usage sink."""

    def __init__(self, limit: RateLimit | None = None) -> None:
        self._limit = limit or RateLimit(FEEDBACK_BURST, FEEDBACK_REFILL_SECONDS)

    async def submit(
        self, service: DocumentationService, location: Any, kind: Any, text: Any, *, seconds: float
    ) -> Document:
        """The page the feedback was kept on; raises InvalidRequestError, Throttled, ResolutionError."""
        if not service.usage.keeps:
            raise InvalidRequestError(
                "feedback is off in this deployment: its owners have not turned on usage insights (Insights__Enabled)"
            )
        given = _feedback_kind(kind)
        if not isinstance(location, str) or not location.strip():
            raise InvalidRequestError("location is required: the page the feedback is about", argument="location")
        if len(location) > MAX_LOCATION_LENGTH:
            raise InvalidRequestError(f"location is longer than {MAX_LOCATION_LENGTH} characters", argument="location")
        if not isinstance(text, str) or not text.strip():
            raise InvalidRequestError("text is required: what misled you on this page", argument="text")
        if len(text) > MAX_FEEDBACK_CHARS:
            raise InvalidRequestError(f"text is longer than {MAX_FEEDBACK_CHARS:,} characters", argument="text")
        caller = current_caller()
        wait = self._limit.take(caller.identity or "")
        if wait > 0:
            retry = max(1, math.ceil(wait))
            raise Throttled(retry, f"too much feedback from this caller; the next is accepted in {retry} s")
        document = await within(service.get(ReadRequest(location, caller=caller)), seconds)
        service.usage.feedback(caller, document, given, text)
        return document


def _feedback_kind(kind: Any) -> FeedbackKind:
    try:
        return FeedbackKind(kind)
    except ValueError:
        kinds = ", ".join(member.value for member in FeedbackKind)
        raise InvalidRequestError(f"kind must be one of: {kinds}", argument="kind") from None


def accepted(document: Document, kind: str) -> FeedbackAccepted:
    """What a kept feedback answers: the page it was kept on."""
    return FeedbackAccepted(
        site=document.site,
        version=document.version,
        default_version=document.default_version,
        location=document.location,
        kind=kind,
    )


def install_insights_routes(
    app: FastAPI, settings: DocumentationSettings, desk: FeedbackDesk, verifier: EntraVerifier | None = None
) -> None:
    given = settings.insights
    credential = Credential("Insights", given.tokens, given.app_roles, "the insights report")
    gate = AdminGate(settings, credential, verifier)

    async def checked(request: Request) -> str:
        return await gate.caller(request)

    Reader = Annotated[str, Depends(checked)]
    Composed = Annotated[Composition, Depends(composition)]

    @app.get(
        INSIGHTS_PATH,
        tags=["admin"],
        dependencies=[Depends(known("days", "site", "version"))],
        responses={
            401: {"description": "`unauthorized`: no accepted `Insights__Tokens` bearer token."},
            403: {"description": "`forbidden`: an Entra token without an `Insights__AppRoles` role."},
            404: {"description": "`not_found`: usage insights are off (`Insights__Enabled`)."},
            503: {"description": "`unavailable`: the usage store cannot be read right now."},
        },
    )
    async def insights(
        _: Reader,
        composed: Composed,
        days: Annotated[int, Query(ge=1, le=365, description="The last this many days.")] = 7,
        site: Annotated[str | None, Query(max_length=64, description="Only this site (and unscoped questions)")] = None,
        version: Annotated[str | None, Query(max_length=64, description="Only this version.")] = None,
    ) -> JSONResponse:
        """What agents asked and read, and what they could not find, for the documentation's owners: totals per site
        and version, unanswered questions, pages read after a search (with the questions and ranks that led
        there), searches never followed by a read, pages no search returned, code languages asked for, feedback.
        A question is shown only when `Insights__MinCallers` distinct callers asked it."""
        recorder = composed.insights
        if recorder is None:
            return error(404, "not_found", "usage insights are off in this deployment (Insights__Enabled)")
        named = composed.service.check_site(site)
        now = time.time()
        scope = Scope(int(now * 1000), days, named, version, composed.settings.insights.min_callers)
        sites = [named] if named is not None else list(composed.service.sites)

        async def gathered() -> tuple[list[Event], bool, list[list[str] | None]]:
            try:
                events, complete = await recorder.store.events(_at(scope.since), _at(scope.until))
            except Exception as exc:  # the SDK's errors, a connection refused: the store is not answering
                raise ServiceUnavailableError({"insights": {"error": type(exc).__name__}}) from None
            listed = await asyncio.gather(*(composed.service.pages(one) for one in sites))
            return events, complete, listed

        # One deadline for the whole report: the store's events and every site's pages.
        events, complete, listed = await within(gathered(), composed.settings.request_timeout_seconds)
        pages = {one: found for one, found in zip(sites, listed, strict=True) if found is not None}
        report = build(events, scope, pages, complete=complete)
        return JSONResponse(report.model_dump(mode="json", by_alias=True))

    @app.post(
        FEEDBACK_PATH,
        tags=["docs"],
        status_code=202,
        responses={
            400: {"description": "`bad_request`: the body is not " + FEEDBACK_SHAPE + ", or feedback is off."},
            404: {"description": "`not_found` (and the other misses of get): the location names no page."},
            429: {"description": "`too_many_requests`: this caller sent feedback too often; `Retry-After` says when."},
        },
    )
    async def feedback(request: Request, composed: Composed) -> JSONResponse:
        """Tell the documentation's owners that a page misled you: `kind` is `outdated`, `wrong`, `missing` or
        `unclear`, `text` (up to 2,000 characters) says how. Kept scrubbed, shown on the page in their report."""
        body = _body(await read_body(request, MAX_FEEDBACK_BODY))
        seconds = composed.settings.request_timeout_seconds
        document = await desk.submit(
            composed.service, body.get("location"), body.get("kind"), body.get("text"), seconds=seconds
        )
        answer = accepted(document, str(body.get("kind")))
        return JSONResponse(answer.model_dump(mode="json", by_alias=True), status_code=202)


def _body(raw: bytes) -> dict[str, Any]:
    if nested_too_deeply(raw):
        raise InvalidRequestError(f"the body is nested too deeply: {FEEDBACK_SHAPE}")
    try:
        body = json.loads(raw) if raw.strip() else None
    except (ValueError, RecursionError):
        raise InvalidRequestError(f"the body must be UTF-8 JSON: {FEEDBACK_SHAPE}") from None
    if not isinstance(body, dict):
        raise InvalidRequestError(f"the body must be a JSON object: {FEEDBACK_SHAPE}")
    unknown = sorted(str(name) for name in set(body) - {"location", "kind", "text"})
    if unknown:
        raise InvalidRequestError(f"this takes only location, kind and text: {FEEDBACK_SHAPE}")
    return body


def _at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)
