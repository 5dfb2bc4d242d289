"""The shapes a setting's text takes, checked the same way wherever a section reads one: an absolute URL, a list
of names, a storage name, a loopback host."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

STORAGE_NAME = re.compile(r"[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]")
"""A blob container's or a storage queue's name: 3-63 lowercase letters, digits and single hyphens."""


def container_name(value: str) -> str:
    """`value` when it is a blob container's name (`STORAGE_NAME`); else ValueError saying what one is."""
    if not STORAGE_NAME.fullmatch(value):
        raise ValueError("must be a valid blob container name (3-63 lowercase letters, digits, hyphens)")
    return value


def absolute_url(value: str, what: str) -> str:
    """`value` trimmed, when it is an absolute http(s) URL with a host and no query or fragment; else ValueError
    saying it must be `what`."""
    value = value.strip()
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(f"must be {what}")
    return value


LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
"""This machine's own host names, as `urlsplit` gives them (an IPv6 address without its brackets)."""


def names(value: Any) -> Any:
    """A list of names: comma-separated, indexed (`Key__0`, ...) or a sequence; trimmed, empty entries dropped."""
    if isinstance(value, str):
        value = value.split(",")
    if isinstance(value, Mapping):
        value = [value[k] for k in sorted(value, key=int)]
    return tuple(str(name).strip() for name in value if str(name).strip())


def json_object(value: Any, mapping: str) -> Any:
    """A setting given as a JSON object's text, parsed (blank: `{}`); ValueError saying it must be a JSON object
    mapping `mapping` (`"a site to its index path"`). Anything but text is left to the field's own type."""
    if not isinstance(value, str):
        return value
    if not value.strip():
        return {}
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise ValueError(f"must be a JSON object mapping {mapping}: {exc.msg}") from None
    if not isinstance(parsed, dict):
        raise ValueError(f"must be a JSON object mapping {mapping}")
    return parsed
