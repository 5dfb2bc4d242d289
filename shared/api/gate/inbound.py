"""Who may read through this app: accepted bearer tokens, Entra ID sign-in, and requests forwarded to it.

An ASGI middleware over the whole app:

- With Entra sign-in (`Auth__TenantId` and `Auth__Audience`), every `/api/*` route except `/api/health` (and the
  publish hook) requires a v2.0 access token for this app carrying a required scope or an accepted role
  (`shared.entra`); an `Inbound__Tokens` token is still accepted beside it. No token or a bad one is `401` with the
  challenge that points clients at the protected resource metadata (`shared.api.gate.signin`), a valid token without the
  grant `403 insufficient_scope`, and signing keys out of reach `503`: never a request let through.

- With `Inbound__Tokens` set, every `/api/*` route except `/api/health` requires `Authorization: Bearer <token>`
  matching one of them, compared in constant time (`hmac.compare_digest`, against every accepted token, so the
  time taken says nothing about which one came close); anything else is `401` with the usual JSON error body and
  `WWW-Authenticate: Bearer`. Without the setting nothing is checked: in Azure the Functions key (or App Service
  Authentication) is the gate. A token that is an unresolved Key Vault reference (its `@Microsoft.KeyVault(...)`
  text) is never accepted; when every token is one, every guarded route answers `503` naming the setting.
- `/api/admin/*` (the publish hook, the insights report) is not read access: each route has its own tokens
  (`shared.api.admin.AdminGate`), so `Inbound__Tokens` neither guards nor opens them.
- A request carrying the remote provider's forwarding marker (`x-docs-forwarded`) is answered with this app's
  remote provider declining (`shared.forwarding`), so a request from A to B never comes back to A.

Who calls rides the request as its `Caller` (`shared.requests.calling`): the token's SHA-256, the Entra object id,
or else the client's address (`shared.api.gate.clients.client_of`); usage insights keep only a keyed hash of it.
Neither the token, the method nor the path is ever logged here (`shared.api.gate.access` logs each refusal).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Sequence

from pydantic import SecretStr
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from shared.api.errors import respond
from shared.api.gate.clients import client_of
from shared.api.gate.signin import challenge
from shared.deadline import budget
from shared.entra import Checked, EntraVerifier, Verdict
from shared.errors import AccessRefused, CredentialsUnavailable, Forbidden, KeysUnavailable, Unauthorized
from shared.forwarding import FORWARDED_HEADER, forwarded_request
from shared.requests import Caller, calling
from shared.settings import PREFIX, DocumentationSettings, unresolved

log = logging.getLogger(__name__)

GUARDED_PREFIX = "/api/"
OPEN_PATHS = frozenset({"/api/health"})
ADMIN_PREFIX = "/api/admin/"
BEARER = "bearer "


class BearerTokens:
    """Accepted bearer tokens, compared in constant time against every one; Key Vault references that did not
    resolve are never accepted (`shut`: tokens were configured but none is usable)."""

    def __init__(self, tokens: Sequence[SecretStr]) -> None:
        self._tokens: tuple[bytes, ...] = tuple(
            token.get_secret_value().encode("utf-8") for token in tokens if not unresolved(token)
        )
        self.configured = bool(tokens)
        self.shut = bool(tokens) and not self._tokens

    def __bool__(self) -> bool:
        return bool(self._tokens)

    def match(self, authorization: str) -> int | None:
        """Which accepted token the `Authorization` header carries (its position), or None."""
        if authorization[: len(BEARER)].lower() != BEARER:
            return None
        offered = authorization[len(BEARER) :].strip().encode("utf-8")
        matched = None
        for number, token in enumerate(self._tokens):
            if hmac.compare_digest(offered, token) and offered:
                matched = number  # no early exit: the time taken says nothing about which token came close
        return matched


AUDIENCE_ROLE = "docs.audience."
"""The Entra app roles that give a caller an audience: `Docs.Audience.<audience>` (matched case-insensitively)."""


def audiences_of(checked: Checked) -> frozenset[str]:
    """The audiences an accepted Entra token's `Docs.Audience.<audience>` roles name, lower case."""
    granted = checked.token.scopes if checked.token is not None else []  # its `scp` scopes and `roles`
    named = (role for role in granted if role.lower().startswith(AUDIENCE_ROLE))
    return frozenset(role[len(AUDIENCE_ROLE) :].lower() for role in named if len(role) > len(AUDIENCE_ROLE))


class InboundCheck:
    """Requires an accepted bearer token (when any is configured) and marks forwarded requests."""

    def __init__(self, app: ASGIApp, *, settings: DocumentationSettings, verifier: EntraVerifier | None = None) -> None:
        self._app = app
        self._settings = settings
        granted: dict[str, set[str]] = {}  # each distinct token and the audiences it holds (a plain one: none)
        for token in settings.inbound.tokens:
            granted.setdefault(token.get_secret_value(), set())
        for audience, tokens in settings.inbound.audience_tokens.items():
            for token in tokens:
                granted.setdefault(token.get_secret_value(), set()).add(audience)
        self._tokens = BearerTokens([SecretStr(token) for token in granted])
        self._held = {token: frozenset(held) for token, held in granted.items()}
        self._default = frozenset(settings.audiences.default)
        self._verifier = verifier
        # Only unresolved Key Vault references configured (and no sign-in beside them): the gate stays shut (503)
        # rather than open or keyed to the reference's literal text.
        self._shut = self._tokens.shut and verifier is None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            identity, audiences = await self._admitted(scope, headers.get("authorization", ""))
        except AccessRefused as refused:
            await respond(refused)(scope, receive, send)
            return
        identity = identity or f"address:{client_of(scope, hops=self._settings.inbound.forwarded_hops)}"
        with calling(Caller(identity, self._default if audiences is None else audiences)):
            if headers.get(FORWARDED_HEADER):
                with forwarded_request():
                    await self._app(scope, receive, send)
                return
            await self._app(scope, receive, send)

    async def _admitted(self, scope: Scope, offered: str) -> tuple[str | None, frozenset[str] | None]:
        """Who the accepted credential names and the audiences it holds (None for either: no credential named
        them, so the caller is its address and holds `Audiences__Default`) when the request may go on; raises the
        refusal to answer otherwise. An open route (health) takes an accepted token's audiences, refusing none."""
        guarded = self._guarded(scope["path"])
        if self._shut and guarded:
            message = f"{PREFIX}Inbound__Tokens is an unresolved Key Vault reference: no caller is accepted until it is"
            raise CredentialsUnavailable(message)
        if self._tokens.match(offered) is not None:
            token = offered[len(BEARER) :].strip()
            held = self._held.get(token, frozenset())
            return f"token:{hashlib.sha256(token.encode('utf-8')).hexdigest()[:32]}", held
        if not guarded:
            return None, None
        if self._verifier is not None:
            return await self._signed_in(scope, offered)
        if self._tokens:
            log.info("refused a request without an accepted bearer token")
            raise Unauthorized("send Authorization: Bearer <an accepted token>", challenge="Bearer")
        return None, None

    async def _signed_in(self, scope: Scope, authorization: str) -> tuple[str, frozenset[str]]:
        """The Entra caller and the audiences its `Docs.Audience.<audience>` roles give it, when the bearer is an
        accepted Entra token; raises the refusal to answer otherwise."""
        assert self._verifier is not None
        token = authorization[len(BEARER) :].strip() if authorization[: len(BEARER)].lower() == BEARER else ""
        if not token:
            raise Unauthorized(
                "sign in: send Authorization: Bearer <an Entra ID access token for this app>",
                challenge=challenge(self._settings, scope),
            )
        try:
            with budget(self._settings.request_timeout_seconds):
                checked = await self._verifier.check(token)
        except KeysUnavailable:
            raise CredentialsUnavailable(
                "tokens cannot be checked right now: the tenant's signing keys are out of reach; try again shortly"
            ) from None
        if checked.verdict is Verdict.ACCEPTED:
            return f"entra:{checked.caller}", audiences_of(checked)
        if checked.verdict is Verdict.NOT_GRANTED:
            log.info("refused a token without a required scope or role")
            raise Forbidden(
                "the token carries none of the scopes or roles this app requires",
                challenge=challenge(self._settings, scope, error="insufficient_scope"),
            )
        log.info("refused an invalid bearer token")
        raise Unauthorized(
            "the access token is not valid for this app (expired, another tenant or "
            "audience, or a bad signature): sign in again",
            challenge=challenge(self._settings, scope, error="invalid_token"),
        )

    @staticmethod
    def _guarded(path: str) -> bool:
        reads = path.startswith(GUARDED_PREFIX) or path == GUARDED_PREFIX.rstrip("/")
        return reads and path not in OPEN_PATHS and not path.startswith(ADMIN_PREFIX)
