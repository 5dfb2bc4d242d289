"""The publish hook: `POST /api/admin/refresh` refreshes sites' cached indexes now, and where to read a long run.

    POST /api/admin/refresh              {"sites": ["forge"]} (absent or empty, `{}` or `[]`: every site)
        200  {"run", "status": "done", "sites": {site: {"outcome": "changed" | "unchanged" | "failed", "fetchedAt"...}}}
        202  the refresh outlasted `Refresh__WaitSeconds` (or `Prefer: respond-async` asked not to wait): the same
             body with `status: running`, and `Location: /api/admin/refresh/runs/{run}`
    GET  /api/admin/refresh/runs/{run}   the run's report (from any instance sharing the storage, once done)

Its own credential, apart from reads: `Authorization: Bearer <one of Refresh__Tokens>` (constant time; neither
`Inbound__Tokens` nor read scopes count here), or with Entra sign-in an app-only token carrying one of
`Refresh__AppRoles` (a pipeline's managed identity); else `401` (`403` for a valid token without the role, `503`
when the tenant's keys are out of reach); nothing configured, every call is `401`; only unresolved Key Vault
references set, `503`. Each caller (the token it presents) may start `BURST` calls at once and one more every
`REFILL_SECONDS`, past that `429` with `Retry-After`; refused calls are limited the same way per client address
(`shared.api.gate.clients.client_of`) before any token is looked at, so guessing tokens meets `429` after `BURST` wrong
ones, whatever `X-Forwarded-For` they send, a valid token included (`AdminGate.caller`). Refreshes coalesce per site
(`shared.providers.mkdocs.lifecycle.refresh`): calling again while one runs queues exactly one more.
Neither the token nor the body is logged.

The body is read only after the credential is accepted, never past `MAX_BODY_BYTES` (a larger `Content-Length` is
refused before a byte is read, a body without one as soon as it grows past it). Whatever the body, it is answered
`400` with what is wrong (size, not JSON, nested too deeply, not UTF-8, its shape), never `500`, quoting no name it
was sent unless the name is plain. No `from __future__ import annotations`: FastAPI reads the routes' annotations
at run time, and the caller's dependency is built per app inside `install_admin_routes`.
"""

import asyncio
import json
import logging
import math
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Path, Request
from fastapi.responses import JSONResponse
from pydantic import SecretStr

from shared.api.errors import error
from shared.api.gate.bodies import nested_too_deeply, read_body
from shared.api.gate.clients import client_of
from shared.api.gate.inbound import BEARER, BearerTokens
from shared.api.rest import composition, known
from shared.compose import Composition
from shared.deadline import budget
from shared.entra import EntraVerifier, Grant, Verdict
from shared.errors import (
    CredentialsUnavailable,
    Forbidden,
    InvalidRequestError,
    KeysUnavailable,
    Throttled,
    Unauthorized,
)
from shared.service import by_nearness
from shared.settings import PREFIX, DocumentationSettings

log = logging.getLogger(__name__)

REFRESH_PATH = "/api/admin/refresh"
RUNS_PATH = REFRESH_PATH + "/runs/{run}"
MAX_BODY_BYTES = 16_384
BURST = 10
REFILL_SECONDS = 6.0
MAX_CALLERS = 10_000
"""Callers (tokens, or addresses of refused calls) whose rate is remembered at once: about 1 MB."""
RUN_ID = r"^[0-9a-f]{32}$"
CHALLENGE = "Bearer"


BODY_SHAPE = '{"sites": ["<site>", ...]}'
PLAIN_NAME = re.compile(r"[\w.-]{1,64}")


class RateLimit:
    """A token bucket per caller: `burst` at once, one more every `refill` seconds; at most `size` callers kept.

    A caller whose bucket has refilled is the same as one never seen, so it is the first forgotten when the table is
    full; past that the longest idle goes (a flood of new addresses costs memory for `size` of them, never more)."""

    def __init__(
        self,
        burst: int = BURST,
        refill: float = REFILL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        *,
        size: int = MAX_CALLERS,
    ):
        self._burst, self._refill, self._clock, self._size = burst, refill, clock, size
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, caller: str) -> float:
        """0 when the caller may go on (one taken), else the seconds until it may."""
        wait = self.waiting(caller)
        if wait == 0:
            level, at = self._buckets[caller]
            self._buckets[caller] = (level - 1, at)
        return wait

    def waiting(self, caller: str) -> float:
        """0 when the caller may go on (nothing taken), else the seconds until it may."""
        now = self._clock()
        level, at = self._buckets.pop(caller, (float(self._burst), now))
        level = min(float(self._burst), level + (now - at) / self._refill)
        if len(self._buckets) >= self._size:
            self._forget(now)
        self._buckets[caller] = (level, now)  # last: the table is ordered from the longest idle
        return 0.0 if level >= 1 else (1 - level) * self._refill

    def _forget(self, now: float) -> None:
        full = [
            caller for caller, (level, at) in self._buckets.items() if level + (now - at) / self._refill >= self._burst
        ]
        for caller in full:
            del self._buckets[caller]
        while len(self._buckets) >= self._size:
            self._buckets.popitem(last=False)


@dataclass(frozen=True, slots=True)
class Credential:
    """An admin credential's settings: its tokens, its Entra app roles, and the names its refusals say."""

    section: str
    """The settings section, as refusals name it (`Refresh`: `Refresh__Tokens`, `Refresh__AppRoles`)."""
    tokens: tuple[SecretStr, ...]
    roles: tuple[str, ...]
    what: str
    """What the credential opens, in a refusal: "the refresh hook", "the insights report"."""


class AdminGate:
    """Who may call an admin route: one of its credential's tokens (or, with Entra sign-in, an app role), within
    its rate (`admit`)."""

    def __init__(
        self,
        settings: DocumentationSettings,
        credential: Credential,
        verifier: EntraVerifier | None = None,
        limit: RateLimit | None = None,
    ) -> None:
        self._settings = settings
        self._credential = credential
        self._tokens = BearerTokens(credential.tokens)
        roles = frozenset(credential.roles)
        self._verifier = verifier if roles else None
        self._grant = Grant(frozenset(), roles)
        self._limit = limit or RateLimit()
        self._refused = RateLimit()
        """Refused calls per client address: past their burst, no token is even looked at."""

    @classmethod
    def refresh(cls, settings: DocumentationSettings, verifier: EntraVerifier | None = None) -> "AdminGate":
        """The publish hook's: `Refresh__Tokens` and `Refresh__AppRoles`."""
        given = settings.refresh
        return cls(settings, Credential("Refresh", given.tokens, given.app_roles, "the refresh hook"), verifier)

    async def caller(self, request: Request) -> str:
        """Who calls (a token's position, or an Entra caller's object id); raises the refusal (`AccessRefused`),
        Throttled when this address was refused too often. The address is what the caller cannot write (the peer, or
        the platform's `X-Forwarded-For` entry), and while it is throttled even a valid token from it is refused: a
        `200` there would tell a guesser it had found one (a pipeline behind the guesser's address waits it out)."""
        address = client_of(request.scope, hops=self._settings.inbound.forwarded_hops)
        wait = self._refused.waiting(address)
        if wait > 0:
            raise Throttled(wait, "too many refused calls from this address; try again later")
        try:
            return await self._checked(request)
        except Unauthorized:
            self._refused.take(address)
            raise

    async def _checked(self, request: Request) -> str:
        authorization = request.headers.get("authorization", "")
        section, what = self._credential.section, self._credential.what
        matched = self._tokens.match(authorization)
        if matched is not None:
            return f"token {matched}"
        if self._verifier is not None and authorization[: len(BEARER)].lower() == BEARER:
            return await self._entra(authorization[len(BEARER) :].strip())
        if self._tokens.shut:
            message = f"{PREFIX}{section}__Tokens is an unresolved Key Vault reference: no caller is accepted"
            raise CredentialsUnavailable(message)
        if not self._tokens.configured and self._verifier is None:
            message = f"{what} is off: set {PREFIX}{section}__Tokens (or {section}__AppRoles with Entra sign-in)"
            raise Unauthorized(message, challenge=CHALLENGE)
        log.info("refused an admin call without an accepted token")
        raise Unauthorized(f"send Authorization: Bearer <one of {section}__Tokens>", challenge=CHALLENGE)

    async def _entra(self, token: str) -> str:
        assert self._verifier is not None
        try:
            with budget(self._settings.request_timeout_seconds):
                checked = await self._verifier.check(token, self._grant)
        except KeysUnavailable:
            raise CredentialsUnavailable(
                "tokens cannot be checked right now: the tenant's signing keys are out of reach"
            ) from None
        if checked.verdict is Verdict.NOT_GRANTED:
            section = self._credential.section
            raise Forbidden(
                f"the token carries none of the app roles that open {self._credential.what} ({section}__AppRoles)",
                challenge='Bearer error="insufficient_scope"',
            )
        if checked.verdict is not Verdict.ACCEPTED:
            log.info("refused an admin call with an invalid token")
            raise Unauthorized("the access token is not valid for this app: sign in again", challenge=CHALLENGE)
        return f"entra {checked.caller}"

    def admit(self, caller: str) -> float:
        """0 when the caller may go on now (one call taken from its rate), else the seconds until it may."""
        return self._limit.take(caller)


def install_admin_routes(app: FastAPI, settings: DocumentationSettings, verifier: EntraVerifier | None = None) -> None:
    gate = AdminGate.refresh(settings, verifier)

    async def checked(request: Request) -> str:
        return await gate.caller(request)

    Caller = Annotated[str, Depends(checked)]
    Composed = Annotated[Composition, Depends(composition)]

    @app.post(
        REFRESH_PATH,
        tags=["admin"],
        responses={
            202: {"description": "Still refreshing: read the outcome at `Location`."},
            400: {
                "description": '`bad_request`: the body is not `{"sites": [...]}` naming configured sites, or is '
                f"larger than {MAX_BODY_BYTES:,} bytes."
            },
            401: {"description": "`unauthorized`: no accepted `Refresh__Tokens` bearer token."},
            429: {
                "description": "`too_many_requests`: this caller called too often, or this address sent too many "
                "refused calls; `Retry-After` says when again."
            },
        },
    )
    async def refresh(request: Request, caller: Caller, composed: Composed) -> JSONResponse:
        """Refresh the named sites' cached indexes from the origin now (every site without `sites`), as the warm-up
        timer does, and answer each site's outcome and its index's `fetchedAt`. Needs `Authorization: Bearer <one
        of Refresh__Tokens>`; `Prefer: respond-async` answers `202` at once."""
        sites = _sites(composed.settings, _parsed(await read_body(request, MAX_BODY_BYTES)))
        wait = gate.admit(caller)
        if wait > 0:
            retry = max(1, math.ceil(wait))
            raise Throttled(retry, f"this caller asked for refreshes too often; the next is accepted in {retry} s")
        run = composed.refresher.request(sites)
        if "respond-async" not in request.headers.get("prefer", "").lower():
            futures = list(run.outcomes.values())
            await asyncio.wait(futures, timeout=composed.settings.refresh.wait_seconds)
        report = run.report().model_dump(mode="json", by_alias=True)
        if run.done:
            return JSONResponse(report)
        composed.refresher.keep(run)
        location = RUNS_PATH.format(run=run.id)
        return JSONResponse(report | {"location": location}, status_code=202, headers={"Location": location})

    @app.get(
        RUNS_PATH,
        tags=["admin"],
        dependencies=[Depends(known())],
        responses={404: {"description": "`not_found`: no such run."}},
    )
    async def run(
        _: Caller, composed: Composed, run: Annotated[str, Path(pattern=RUN_ID, description="The run's id.")]
    ) -> JSONResponse:
        """A refresh run's report: `status` `running` until every site has its outcome, then `done`."""
        report = await composed.refresher.outcome(run)
        if report is None:
            return error(404, "not_found", "no refresh run with this id (or its outcome was not recorded)")
        body = report.model_dump(mode="json", by_alias=True)
        # A recorded run answers as the store holds it: its keys sorted.
        return JSONResponse(json.loads(json.dumps(body, sort_keys=True)) if report.recorded else body)


def _parsed(raw: bytes) -> dict[str, Any]:
    """The body as `{"sites": ...}` (empty for no body, `{}` or `[]`); InvalidRequestError saying what is wrong."""
    if not raw.strip():
        return {}
    if nested_too_deeply(raw):
        raise InvalidRequestError(f"the body is nested too deeply: {BODY_SHAPE}")
    try:
        body = json.loads(raw)
    except RecursionError:
        raise InvalidRequestError(f"the body is nested too deeply: {BODY_SHAPE}") from None
    except UnicodeDecodeError:
        raise InvalidRequestError(f"the body must be UTF-8 JSON: {BODY_SHAPE}") from None
    except ValueError:
        raise InvalidRequestError(f"the body must be JSON: {BODY_SHAPE}") from None
    if body == []:
        return {}
    if not isinstance(body, dict):
        raise InvalidRequestError(f"the body must be a JSON object: {BODY_SHAPE}")
    if not all(_text(name) for name in body):
        raise InvalidRequestError(
            f"the body's field names must be text (a lone \\ud800-\\udfff escape is not): {BODY_SHAPE}"
        )
    unknown = sorted(set(body) - {"sites"})
    if unknown:
        named = ", ".join(f"`{name}`" if PLAIN_NAME.fullmatch(name) else "one" for name in unknown)
        raise InvalidRequestError(f"no field {named} here; this takes: sites")
    return body


def _text(value: str) -> bool:
    """True when `value` can be written back as UTF-8 (no lone surrogate from a `\\udXXX` escape)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _sites(settings: DocumentationSettings, body: dict[str, Any]) -> list[str]:
    """The configured sites named (case-insensitively), every site when none is."""
    given = body.get("sites")
    if given is None or given == []:
        return list(settings.sites)
    if not isinstance(given, list) or not all(isinstance(name, str) for name in given):
        raise InvalidRequestError("sites must be a list of site names")
    if not all(_text(name) for name in given):
        raise InvalidRequestError("sites must be text (a lone \\ud800-\\udfff escape is not)")
    named: list[str] = []
    for name in given:
        site = settings.site_named(name.strip())
        if site is None:
            shown = name if PLAIN_NAME.fullmatch(name) else "a name"
            raise InvalidRequestError(
                f"{shown} is not a site this deployment caches; sites: {', '.join(by_nearness(name, settings.sites))}"
            )
        named.append(site)
    return list(dict.fromkeys(named))
