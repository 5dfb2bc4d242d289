"""The service's settings, parsed and validated once, at start-up: `load_settings` and every name callers import.

`load_settings(environ)` reads `environ` and nothing else; only `load_settings()` reads the process environment.
A setting that fails its check stops the start with one message naming its key.

The package, one concern a module:

- `source`: the only reader of the environment; which app settings are read (`Forge__Documentation__*`,
  case-insensitively, nested on `__`) and what an empty value means;
- `documentation`: `DocumentationSettings`, every setting in one model, and the checks that span sections;
- `sections`: the section models (`Cache`, `Refresh`, `AiSearch`, `Remote`, `Auth`, ...);
- `secrets`: which settings are secrets (a `Secret` marker on the field) and which are unresolved Key Vault
  references;
- `values`: the shapes a setting's text takes (absolute URLs, lists of names, storage names, loopback hosts).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from pydantic import ValidationError

from shared.errors import ConfigurationError
from shared.settings.audiences import AudiencesSettings
from shared.settings.documentation import (
    DEFAULT_SITES,
    DERIVED_PREFIX,
    EMBEDDINGS_PREFIX,
    RESERVED_PREFIXES,
    DocumentationSettings,
)
from shared.settings.insights import InsightsSettings
from shared.settings.secrets import KEY_VAULT_REFERENCE, Secret, unresolved
from shared.settings.sections import (
    AiSearchSettings,
    AuthSettings,
    CacheSettings,
    IdentitySettings,
    InboundSettings,
    McpSettings,
    RefreshSettings,
    RemoteSettings,
    SearchSettings,
    WarmupSettings,
)
from shared.settings.site_map import IndexPolicy, SiteMap, SiteTimings
from shared.settings.source import HOST_OWNED, PREFIX, RETIRED, AppSettingsSource, environment
from shared.settings.values import LOOPBACK_HOSTS, STORAGE_NAME, absolute_url

__all__ = [
    "DEFAULT_SITES",
    "DERIVED_PREFIX",
    "EMBEDDINGS_PREFIX",
    "HOST_OWNED",
    "KEY_VAULT_REFERENCE",
    "LOOPBACK_HOSTS",
    "PREFIX",
    "RESERVED_PREFIXES",
    "RETIRED",
    "STORAGE_NAME",
    "AiSearchSettings",
    "AppSettingsSource",
    "AudiencesSettings",
    "AuthSettings",
    "CacheSettings",
    "DocumentationSettings",
    "IdentitySettings",
    "InboundSettings",
    "IndexPolicy",
    "InsightsSettings",
    "McpSettings",
    "RefreshSettings",
    "RemoteSettings",
    "SearchSettings",
    "Secret",
    "SiteMap",
    "SiteTimings",
    "WarmupSettings",
    "absolute_url",
    "load_settings",
    "unresolved",
]


def load_settings(environ: Mapping[str, str] | None = None) -> DocumentationSettings:
    """The settings in `environ` and nothing else (the process environment when it is None), or one message naming
    the key."""
    environ = environment(environ)
    given = {key.lower() for key in environ}
    for old, new in RETIRED.items():
        if (PREFIX + old).lower() in given:
            logging.getLogger(__name__).warning(
                "%s%s is no longer read: set %s%s instead (see docs/configuration.md)", PREFIX, old, PREFIX, new
            )
    try:
        return DocumentationSettings(_build_sources=((AppSettingsSource(DocumentationSettings, environ),), {}))
    except ValidationError as exc:
        error = exc.errors()[0]
        key = PREFIX + "__".join(str(part) for part in error["loc"] if not isinstance(part, int))
        message = str(error["msg"]).removeprefix("Value error, ")
        if not error["loc"]:
            key, _, message = (PREFIX + message).partition(": ")
        raise ConfigurationError(key, message) from None
