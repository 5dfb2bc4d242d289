"""A local stand-in for the Microsoft identity platform: a tenant's RSA key pairs made here, their public keys served
by a real HTTP server at `{authority}/{tenant}/discovery/v2.0/keys`, and v2.0-shaped access tokens minted with PyJWT.

    with LocalIssuer() as issuer:
        settings = {..., **issuer.settings(audience="api://docs")}
        token = issuer.token(scp="docs.read")
"""

from __future__ import annotations

import json
import time
import uuid
from types import TracebackType
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tools.static_origin import StaticOrigin

TENANT = "11111111-2222-3333-4444-555555555555"
OTHER_TENANT = "99999999-8888-7777-6666-555555555555"
CLIENT_ID = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
AUDIENCE = f"api://{CLIENT_ID}"


class SigningKey:
    def __init__(self, kid: str | None = None) -> None:
        self.kid = kid or uuid.uuid4().hex
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwk(self) -> dict[str, Any]:
        public = json.loads(RSAAlgorithm.to_jwk(self.private.public_key()))
        return public | {"kid": self.kid, "use": "sig", "alg": "RS256"}

    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


class LocalIssuer:
    """One tenant's keys behind a real server; `token()` mints what Entra would issue for it."""

    def __init__(self, tenant: str = TENANT) -> None:
        self.tenant = tenant
        self.keys = [SigningKey()]
        self._server = StaticOrigin()

    @property
    def authority(self) -> str:
        return self._server.url

    @property
    def issuer(self) -> str:
        return f"{self.authority}/{self.tenant}/v2.0"

    @property
    def keys_path(self) -> str:
        return f"/{self.tenant}/discovery/v2.0/keys"

    def publish(self, *keys: SigningKey) -> None:
        """Serve exactly these public keys (the tenant rolled its keys)."""
        self.keys = list(keys)
        document = {"keys": [key.jwk() for key in keys]}
        self._server.respond(self.keys_path, body=json.dumps(document), content_type="application/json")

    def fail(self, status: int = 503) -> None:
        """The key endpoint is down."""
        self._server.fail(self.keys_path, status)

    def key_requests(self) -> int:
        return len(self._server.requests_for(self.keys_path))

    def settings(
        self, *, audience: str = AUDIENCE, scopes: str = "docs.read", roles: str = "Docs.Read.All"
    ) -> dict[str, str]:
        prefix = "Forge__Documentation__Auth__"
        return {
            f"{prefix}TenantId": self.tenant,
            f"{prefix}Audience": audience,
            f"{prefix}Scopes": scopes,
            f"{prefix}AppRoles": roles,
            f"{prefix}Authority": self.authority,
        }

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": CLIENT_ID,  # v2.0 access tokens carry the API's client id
            "tid": self.tenant,
            "iat": now,
            "nbf": now,
            "exp": now + 3600,
            "sub": "user-subject",
            "oid": str(uuid.uuid4()),
            "azp": "04b07795-8ddb-461a-bbee-02f9e1bf7b46",
            "ver": "2.0",
        }
        claims.update(overrides)
        return {key: value for key, value in claims.items() if value is not None}

    def token(self, *, key: SigningKey | None = None, headers: dict[str, Any] | None = None, **claims: Any) -> str:
        signing = key or self.keys[0]
        return jwt.encode(
            self.claims(**claims), signing.private, algorithm="RS256", headers={"kid": signing.kid, **(headers or {})}
        )

    def __enter__(self) -> LocalIssuer:
        self._server.start()
        self.publish(*self.keys)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.stop()
