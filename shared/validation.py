"""Caller input checks shared by every host: what the service refuses, with a reason (pure)."""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import unquote, urlsplit

from shared.errors import InvalidRequestError

MAX_QUERY_LENGTH = 512
MAX_LOCATION_LENGTH = 1024
MIN_LIMIT, MAX_LIMIT = 1, 50
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _refuse_control(name: str, value: str) -> None:
    if any(unicodedata.category(char) in ("Cc", "Cf") and char not in "\t" for char in value):
        raise InvalidRequestError(f"{name} must not contain control characters")


def check_query(query: str | None) -> str:
    if query is None or not query.strip():
        raise InvalidRequestError("q is required and must not be blank")
    if len(query) > MAX_QUERY_LENGTH:
        raise InvalidRequestError(f"q must be at most {MAX_QUERY_LENGTH} characters")
    _refuse_control("q", query)
    return query.strip()


def check_limit(limit: int) -> int:
    if not MIN_LIMIT <= limit <= MAX_LIMIT:
        raise InvalidRequestError(f"limit must be between {MIN_LIMIT} and {MAX_LIMIT}")
    return limit


def check_location(location: str | None, origin: str) -> str:
    """The location as a site-relative path; a pasted URL is accepted only when it is under the origin.

    An empty location is the default site's root page: search returns that page's location unchanged from the
    index, which is "", and every search result location must be fetchable.
    """
    if location is None or (location and not location.strip()):
        raise InvalidRequestError("location is required and must not be blank")
    if len(location) > MAX_LOCATION_LENGTH:
        raise InvalidRequestError(f"location must be at most {MAX_LOCATION_LENGTH} characters")
    _refuse_control("location", location)
    value = location.strip()
    if _SCHEME.match(value) or value.startswith("//"):
        value = _strip_origin(value, origin)
    decoded = value
    for _ in range(3):  # nested encodings such as %252e%252e
        decoded = unquote(decoded)
    _refuse_control("location", decoded)
    path = decoded.partition("#")[0]
    if "\\" in path or any(segment in (".", "..") for segment in path.split("/")):
        raise InvalidRequestError("location must not contain '.' or '..' segments or backslashes")
    return decoded


def _strip_origin(value: str, origin: str) -> str:
    parts, allowed = urlsplit(value), urlsplit(origin)
    same = (parts.scheme or allowed.scheme, parts.netloc.lower()) == (allowed.scheme, allowed.netloc.lower())
    if not same or not (parts.path + "/").startswith(allowed.path.rstrip("/") + "/"):
        raise InvalidRequestError("location is a URL outside the configured documentation origin")
    rest = parts.path[len(allowed.path.rstrip("/")) :]
    return rest + (f"#{parts.fragment}" if parts.fragment else "")
