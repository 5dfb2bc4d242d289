"""The only reader of the environment: which app settings the model is given, and how they are read.

Keys follow the spec's `Forge:Documentation:<Key>` in app-setting form (`:` becomes `__`), for example
`Forge__Documentation__Origin`. Matching is case-insensitive, like the Functions host's configuration.
Lists accept a comma-separated value or the indexed form `Key__0`, `Key__1`, ...

pydantic-settings does the reading (nested keys, case, lists left as text for the sections' validators); what is
ours is which names are read, what an empty value means, and that the indexed form of a list wins.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from pydantic_settings import BaseSettings, EnvSettingsSource

PREFIX = "Forge__Documentation__"
_EMPTY_IS_MEANINGFUL = {
    ("rawmarkdownurlpattern",),
    ("aisearch", "searchfilter"),
    ("aisearch", "mkdocssiteprefix"),
}
"""Setting paths (lower case) where an empty value means something (no raw Markdown, no filter, no stripping)
 instead of "unset"."""
_HOST_NAMES = {
    "azurewebjobsstorage": "AzureWebJobsStorage",
    "azurewebjobsstorage__blobserviceuri": "AzureWebJobsStorageBlobServiceUri",
    "website_hostname": "WEBSITE_HOSTNAME",
    "applicationinsights_connection_string": "APPLICATIONINSIGHTS_CONNECTION_STRING",
    "http_proxy": "HTTP_PROXY",
    "https_proxy": "HTTPS_PROXY",
    "all_proxy": "ALL_PROXY",
}
"""The platform's own app settings the model reads (lower case), and the alias of the field each one fills."""
HOST_OWNED = frozenset(_HOST_NAMES.values())
"""Aliases of fields the hosting platform sets, not `Forge__Documentation__*` app settings."""


def environment(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    """`environ`, or the process environment when it is None."""
    return os.environ if environ is None else environ


class AppSettingsSource(EnvSettingsSource):
    """The app settings in one mapping, read by pydantic-settings (nested on `__`, case-insensitively).

    What is ours: only `Forge__Documentation__*` and the platform's own names (trimmed) are read; an empty value (or
    only whitespace) means unset, except where the spec gives empty a meaning; and a key with keys below it (`Sites`
    beside `Sites__0`) gives way to them, so the indexed form of a list wins.
    """

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._given = environ
        super().__init__(settings_cls, case_sensitive=False, env_nested_delimiter="__", env_ignore_empty=False)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        prefix = PREFIX.lower()
        read: dict[str, str] = {}
        for key, value in self._given.items():
            name = key.lower()
            if name.startswith(prefix):
                name = name[len(prefix) :]
                if value.strip() or tuple(name.split("__")) in _EMPTY_IS_MEANINGFUL:
                    read[name] = value
            elif name in _HOST_NAMES and value.strip():
                read[_HOST_NAMES[name].lower()] = value.strip()
        return {name: value for name, value in read.items() if not any(key.startswith(name + "__") for key in read)}


RETIRED = {"Mcp__MaxContentChars": "Mcp__AnswerBudgetChars"}
"""Settings that no longer exist, and what took their place: one left set is said at start-up, not guessed at.
Compatibility until 2027-06-30: after that a retired setting is as unknown as any other."""
