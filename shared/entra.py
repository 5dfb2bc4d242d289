"""Microsoft identity platform v2.0 access tokens, checked in-app: who may read when Entra sign-in is on.

A token is accepted when, in this order:

    header     `alg` is RS256 (never `none`, never an HMAC, never anything a key could be confused with) and `kid` is
               one of the tenant's signing keys ({Authority}/{TenantId}/discovery/v2.0/keys)
    signature  verifies with that key
    claims     `iss` is {Authority}/{TenantId}/v2.0, `aud` is the audience, `tid` (when present) the tenant,
               `exp` and `nbf` hold with LEEWAY seconds of clock skew
    grant      `scp` names a required scope, or `roles` an accepted role (the caller decides which: `Grant`)

The keys are fetched with the service's own HTTP client (`shared.fetch`, scoped to the authority, bounded by
FETCH_SECONDS), one fetch at a time however many requests need it (they all wait on that one), and fetched again:

    every KEYS_REFRESH seconds   a key the tenant removed stops validating at that refresh, an hour at most after
                                 the tenant removed it; when the refresh fails, the keys in hand go on validating
                                 until they are KEYS_TTL old
    for an unknown `kid`         at most once a MIN_REFETCH seconds (Entra rolls keys)

A failed fetch is remembered for RETRY_SECONDS, so meanwhile a token that needs the keys raises `KeysUnavailable` at
once (the caller answers 503, never lets the request through) instead of each request waiting out a hung endpoint.
Nothing here logs a token, a key or a claim's value. This is the MCP SDK's `TokenVerifier` (`verify_token`), with
the reasons its own middleware does not tell apart (no token, a bad token, no grant, keys out of reach).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import jwt
from mcp.server.auth.provider import AccessToken

from shared.errors import KeysUnavailable, OriginError
from shared.fetch import OriginClient
from shared.settings import AuthSettings

log = logging.getLogger(__name__)

ALGORITHM = "RS256"
LEEWAY = 60
"""Seconds of clock skew allowed on `exp` and `nbf`."""
KEYS_REFRESH = 3600.0
"""Seconds between scheduled fetches of the keys: how long a key the tenant removed can go on validating."""
KEYS_TTL = 24 * 3600.0
"""The oldest keys are used at, when their scheduled refreshes keep failing."""
MIN_REFETCH = 60.0
FETCH_SECONDS = 3.0
"""The most one fetch of the keys may take, connecting included."""
RETRY_SECONDS = 10.0
"""How long a failed fetch is remembered: tokens that need the keys meanwhile are answered 503 at once."""
MAX_KEYS_BYTES = 256 * 1024
_GUID_URI = re.compile(r"api://([0-9a-fA-F-]{36})/?")


class Verdict(StrEnum):
    """What a token is worth against a grant."""

    ACCEPTED = "accepted"
    INVALID = "invalid"
    """Not a token of this tenant for this audience, expired, not yet valid, or signed wrongly."""
    NOT_GRANTED = "not_granted"
    """Valid, but without a required scope or an accepted role."""


@dataclass(frozen=True, slots=True)
class Grant:
    """What a caller must hold: one of `scopes` (delegated, `scp`) or one of `roles` (app-only, `roles`); both empty:
    any valid token."""

    scopes: frozenset[str]
    roles: frozenset[str]

    def allows(self, scopes: Iterable[str], roles: Iterable[str]) -> bool:
        if not self.scopes and not self.roles:
            return True
        return bool(self.scopes.intersection(scopes) or self.roles.intersection(roles))


@dataclass(frozen=True, slots=True)
class Checked:
    verdict: Verdict
    token: AccessToken | None = None

    @property
    def caller(self) -> str:
        """Who called, for per-caller limits: the token's object id, subject or client, never logged."""
        if self.token is None:
            return ""
        claims = self.token.claims or {}
        return str(claims.get("oid") or self.token.subject or self.token.client_id)


class EntraVerifier:
    """Checks bearer tokens against one tenant and audience."""

    def __init__(
        self,
        settings: AuthSettings,
        *,
        client: OriginClient | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings
        self._client = client or OriginClient(settings.authority, timeout=FETCH_SECONDS, connect_timeout=FETCH_SECONDS)
        self._owns_client = client is None
        self._clock = clock
        self._keys: dict[str, Any] = {}
        self._fetched = float("-inf")
        self._fetching: asyncio.Task[None] | None = None
        """The one fetch in flight, which every request that needs the keys waits on."""
        self._failed: tuple[float, str] | None = None
        """When the last fetch failed (on `clock`) and why, until one succeeds."""
        self.audiences = _audiences(settings.audience or "")
        self.grant = Grant(frozenset(settings.scopes), frozenset(settings.app_roles))

    async def check(self, token: str, grant: Grant | None = None) -> Checked:
        """The token's verdict against `grant` (default: the read grant); raises KeysUnavailable."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return Checked(Verdict.INVALID)
        kid = header.get("kid")
        if header.get("alg") != ALGORITHM or not isinstance(kid, str) or not kid:
            return Checked(Verdict.INVALID)
        key = await self._key(kid)
        if key is None:
            return Checked(Verdict.INVALID)
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[ALGORITHM],
                audience=list(self.audiences),
                issuer=self._settings.issuer,
                leeway=LEEWAY,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            log.info("refused a bearer token: %s", type(exc).__name__)
            return Checked(Verdict.INVALID)
        tenant = claims.get("tid")
        if tenant is not None and _is_guid(self._settings.tenant_id) and tenant != self._settings.tenant_id:
            return Checked(Verdict.INVALID)
        scopes = str(claims.get("scp", "")).split()
        roles = [str(role) for role in claims.get("roles", []) if isinstance(role, str)]
        access = AccessToken(
            token=token,
            client_id=str(claims.get("azp") or claims.get("appid") or ""),
            scopes=[*scopes, *roles],
            expires_at=int(claims["exp"]),
            resource=self._settings.resource,
            subject=str(claims["sub"]) if "sub" in claims else None,
            claims={key: claims[key] for key in ("iss", "tid", "oid") if key in claims},
        )
        verdict = Verdict.ACCEPTED if (grant or self.grant).allows(scopes, roles) else Verdict.NOT_GRANTED
        return Checked(verdict, access)

    async def verify_token(self, token: str) -> AccessToken | None:
        """The MCP SDK's `TokenVerifier`: the access token when accepted, else None (keys out of reach raise)."""
        checked = await self.check(token)
        return checked.token if checked.verdict is Verdict.ACCEPTED else None

    async def _key(self, kid: str) -> Any:
        age = self._clock() - self._fetched
        if age < KEYS_REFRESH and (kid in self._keys or age < MIN_REFETCH):
            return self._keys.get(kid)  # None: fetched a moment ago without it, a forged or foreign kid
        try:
            await self._refetched()
        except KeysUnavailable:
            if kid in self._keys and self._clock() - self._fetched < KEYS_TTL:
                return self._keys[kid]  # a scheduled refresh failed: the keys in hand still hold for a while
            raise
        return self._keys.get(kid)

    async def _refetched(self) -> None:
        """The keys fetched again: the fetch in flight if there is one, else a new one; raises KeysUnavailable
        at once while a failure is remembered."""
        if self._failed is not None and self._clock() - self._failed[0] < RETRY_SECONDS:
            raise KeysUnavailable(self._failed[1])
        if self._fetching is None or self._fetching.done():
            # A context of its own: the fetch is bounded by FETCH_SECONDS, not by the deadline of whichever request
            # happened to start it, whose end would otherwise fail it for every request waiting on it.
            self._fetching = asyncio.get_running_loop().create_task(
                self._fetch(), name="signing keys", context=contextvars.Context()
            )
            self._fetching.add_done_callback(_retrieved)
        await asyncio.shield(self._fetching)  # a request that gives up does not cancel everyone's fetch

    async def _fetch(self) -> None:
        url = self._settings.keys_url
        try:
            response = await self._client.get(url, scope=url, max_bytes=MAX_KEYS_BYTES)
            if response.status != 200:
                raise self._failure(f"the signing keys answered HTTP {response.status}")
            keys = _parse_keys(response.body)
        except OriginError as exc:
            log.warning("the tenant's signing keys could not be fetched (%s)", type(exc).__name__)
            raise self._failure("the tenant's signing keys could not be fetched") from None
        except ValueError:
            log.warning("the tenant's signing keys were not a key set")
            raise self._failure("the tenant's signing keys were not a key set") from None
        self._keys, self._fetched, self._failed = keys, self._clock(), None
        log.info("fetched %d signing keys of the tenant", len(keys))

    def _failure(self, reason: str) -> KeysUnavailable:
        """Remember a failed fetch for RETRY_SECONDS."""
        self._failed = (self._clock(), reason)
        return KeysUnavailable(reason)

    async def aclose(self) -> None:
        if self._fetching is not None:
            self._fetching.cancel()
            await asyncio.gather(self._fetching, return_exceptions=True)
        if self._owns_client:
            await self._client.aclose()


def _retrieved(task: asyncio.Task[None]) -> None:
    """A fetch whose waiters all gave up still has its failure read, so asyncio does not log it as lost."""
    if not task.cancelled():
        task.exception()


def _parse_keys(body: bytes) -> dict[str, Any]:
    document = json.loads(body)
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError("no keys")
    keys: dict[str, Any] = {}
    for entry in document["keys"]:
        if not isinstance(entry, dict) or entry.get("kty") != "RSA" or entry.get("use", "sig") != "sig":
            continue
        kid = entry.get("kid")
        if not isinstance(kid, str):
            continue
        try:
            keys[kid] = jwt.PyJWK(entry, algorithm=ALGORITHM).key
        except jwt.PyJWTError:
            continue
    return keys


def _audiences(audience: str) -> tuple[str, ...]:
    """The audience, and for the default Application ID URI `api://<client id>` also the bare client id: v2.0 access
    tokens carry the client id in `aud` whichever form the client asked for."""
    audience = audience.strip()
    match = _GUID_URI.fullmatch(audience)
    return (audience, match.group(1)) if match else (audience,)


def _is_guid(value: str | None) -> bool:
    return value is not None and re.fullmatch(r"[0-9a-fA-F-]{36}", value) is not None
