"""Which settings are secrets, and which of them App Service left as an unresolved Key Vault reference.

A secret setting says so in its type: `Annotated[SecretStr | None, Secret(order)]` (or a tuple of `SecretStr`), read
here from the model's fields, never from its key. Such a value is a Key Vault reference in Azure, and App Service
passes the reference text itself when it cannot resolve it (before the identity's role propagates, a secret deleted
or disabled): that text is never used as the secret, and what it guards fails closed.

The platform's own settings typed `SecretStr` (`AzureWebJobsStorage`, a proxy URL) are kept out of logs and reprs
the same way, but carry no marker: they are not the service's to resolve.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, SecretStr

from shared.settings.values import names

KEY_VAULT_REFERENCE = "@microsoft.keyvault("


@dataclass(frozen=True)
class Secret:
    """The marker of a secret setting of the service's own, in its field's `Annotated` type."""

    order: int
    """Its place among the unresolved secrets health lists: the app's own gates first (Inbound, the publish hook),
    then the providers' credentials, then the cache's."""


def unresolved(secret: SecretStr | None) -> bool:
    """True when the secret is an App Service Key Vault reference that did not resolve (its literal text)."""
    return secret is not None and secret.get_secret_value().lstrip().lower().startswith(KEY_VAULT_REFERENCE)


def secret_list(value: Any) -> Any:
    """Like `values.names`, each a SecretStr."""
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if not isinstance(value, str | Mapping):
        value = [item.get_secret_value() if isinstance(item, SecretStr) else item for item in value]
    return tuple(SecretStr(token) for token in names(value))


def unresolved_keys(settings: BaseModel, prefix: str) -> tuple[str, ...]:
    """The keys (`prefix` and the path of aliases) of the marked settings in `settings` and the sections it holds
    whose value, or one of whose values, is an unresolved reference; in the markers' order."""
    return tuple(key for _, key in sorted(_pending(settings, prefix)))


def _pending(model: BaseModel, prefix: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        key = prefix + (field.alias or name)
        marker = next((item for item in field.metadata if isinstance(item, Secret)), None)
        if marker is not None:
            held = [value] if not isinstance(value, tuple | Mapping) else value
            if isinstance(value, Mapping):  # per audience (`Inbound__AudienceTokens__<audience>`)
                held = [secret for secrets in value.values() for secret in secrets]
            if any(unresolved(secret) for secret in held):
                found.append((marker.order, key))
        elif isinstance(value, BaseModel):  # a section; an optional one left unset is None, and holds nothing
            found += _pending(value, key + "__")
    return found
