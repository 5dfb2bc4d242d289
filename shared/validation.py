"""Caller input checks shared by every host: what the service refuses, with a reason (pure)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from difflib import SequenceMatcher
from urllib.parse import unquote, urlsplit

from shared.errors import InvalidRequestError
from shared.models import MAX_RESULTS, SearchKind
from shared.reading import MAX_CHARS_REFUSED, OFFSET_REFUSED, SECTION_REFUSED

MAX_QUERY_LENGTH = 1024
"""Characters in a query: about the 256 word pieces the query encoder reads (`embedding.QUERY_TOKENS`), so an
agent's task description of 150 words or so, framing and all, is searched whole rather than refused."""
MAX_LOCATION_LENGTH = 1024
MIN_LIMIT, MAX_LIMIT = 1, 50
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


WHITESPACE = re.compile("[\t\n\v\f\r\x85 \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")
""".NET's `char.IsWhiteSpace`, the spec's whitespace: tab to carriage return, U+0085, and the Unicode space (Zs),
line (Zl) and paragraph (Zp) separators. Python's `str.split()` also splits on U+001C-U+001F, which are not."""


_TRIM = re.compile(f"^{WHITESPACE.pattern}|{WHITESPACE.pattern}$")


def is_whitespace(char: str) -> bool:
    return WHITESPACE.fullmatch(char) is not None


_NOT_SPEC_WHITESPACE = "\x1c\x1d\x1e\x1f"
"""The only characters `str.split()` splits on that the spec's whitespace does not include."""


def split_whitespace(text: str) -> list[str]:
    """`text` split on runs of the spec's whitespace, without empty pieces.

    `str.split()` splits on exactly the spec's whitespace plus U+001C-U+001F, and a page's text is split for every
    preview of it, so text without those four characters (nearly all) takes that path: a tenth of the regex's time.
    """
    if not any(char in text for char in _NOT_SPEC_WHITESPACE):
        return text.split()
    return [word for word in WHITESPACE.split(text) if word]


QUERY_PATTERN = (
    "^[^\\x00-\\x08\\x0e-\\x1f\\x7f-\\x84\\x86-\\x9f]*"
    "[^\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    "[^\\x00-\\x08\\x0e-\\x1f\\x7f-\\x84\\x86-\\x9f]*$"
)
"""What `check_query` accepts, as the OpenAPI document states it (valid in Python and ECMA-262 regexes): no
control character but whitespace, and at least one character that is not whitespace."""


def _refuse_control(name: str, value: str, *, allow_whitespace: bool = False) -> None:
    """Control characters (and, in locations, invisible format characters) are refused, never guessed around."""
    categories = ("Cc",) if allow_whitespace else ("Cc", "Cf")
    for char in value:
        allowed = char == "\t" or (allow_whitespace and is_whitespace(char))
        if unicodedata.category(char) in categories and not allowed:
            raise InvalidRequestError(f"{name} must not contain control characters", argument=name)


def check_query(query: str | None) -> str:
    """The query with its surrounding whitespace trimmed. Line breaks and other whitespace are whitespace (agents
    paste multi-line error messages); any other control character is refused."""
    if query is None or not split_whitespace(query):
        raise InvalidRequestError("q is required and must not be blank", argument="q")
    if len(query) > MAX_QUERY_LENGTH:
        raise InvalidRequestError(f"q must be at most {MAX_QUERY_LENGTH} characters", argument="q")
    _refuse_control("q", query, allow_whitespace=True)
    return _TRIM.sub("", query)


LIMIT_REFUSED = (
    f"limit must be a whole number from {MIN_LIMIT} to {MAX_LIMIT} (at most {MAX_RESULTS} results are returned)"
)
BOUNDED: Mapping[str, str] = {
    "limit": LIMIT_REFUSED,
    "offset": OFFSET_REFUSED,
    "maxChars": MAX_CHARS_REFUSED,
    "section": SECTION_REFUSED,
}
"""The one sentence every interface (REST, MCP, the command line) says of a bad value of a bounded argument,
whatever was wrong with it (not a whole number, too small, too large, too long), naming its bounds."""


def bound_refusal(name: str, problem: str, bound: object = None) -> str | None:
    """What is said of argument `name` refused by a schema check (pydantic's error type `problem`, with the
    `max_length` it names as `bound`): its sentence in `BOUNDED`, or that it is too long; None for anything else."""
    if name in BOUNDED and problem in _OUT_OF_BOUNDS:
        return BOUNDED[name]
    if problem == "string_too_long":
        return f"{name} must be at most {bound} characters"
    return None


_OUT_OF_BOUNDS = frozenset(
    {
        "greater_than_equal",
        "less_than_equal",
        "greater_than",
        "less_than",
        "int_parsing",
        "int_type",
        "int_from_float",
        "string_too_long",
        "string_too_short",
    }
)


def check_limit(limit: int) -> int:
    if not MIN_LIMIT <= limit <= MAX_LIMIT:
        raise InvalidRequestError(LIMIT_REFUSED, argument="limit")
    return limit


VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")
"""A version's name or alias as mike writes them (`2.1`, `latest`, `v1.0.0-rc1`)."""
VERSION_REFUSED = (
    "version must be a version's name or alias, such as 2.1 or latest (letters, digits, '.', '_', '+', '-')"
)


def check_version(version: str | None) -> str | None:
    """The version asked for, trimmed; None when none was; InvalidRequestError for anything but a short name."""
    if version is None:
        return None
    version = version.strip()
    if not VERSION.fullmatch(version) or version in (".", ".."):
        raise InvalidRequestError(VERSION_REFUSED, argument="version")
    return version


LANGUAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9+#._-]{0,31}")
"""A code language's name as a caller may write it: a short identifier (`bash`, `c++`, `c#`, `objective-c`)."""

LANGUAGE_ALIASES: Mapping[str, str] = {
    "sh": "bash",
    "shell": "bash",
    "console": "bash",
    "zsh": "bash",
    "shell-session": "bash",
    "yml": "yaml",
    "hcl": "terraform",
    "tf": "terraform",
    "pwsh": "powershell",
    "ps1": "powershell",
    "posh": "powershell",
    "py": "python",
    "python3": "python",
}
"""Other names for a language, as fences and callers write them: the canonical name is the value."""

KINDS_REFUSED = "kind must be one of: page, code"
LANGUAGE_REFUSED = (
    "language must be a language's short name, such as bash, yaml, terraform, powershell, python, json or bicep "
    "(letters, digits, '+', '#', '.', '_', '-'; at most 32 characters)"
)


def check_kind(kind: str | None) -> SearchKind:
    """What a search is for: `page` (the default) or `code`; InvalidRequestError naming both for anything else."""
    if kind is None or kind == "":
        return SearchKind.PAGE
    try:
        return SearchKind(kind.strip().lower())
    except ValueError:
        raise InvalidRequestError(KINDS_REFUSED, argument="kind") from None


def canonical_language(name: str) -> str:
    """A language name as answers write it: lower case, aliases folded (`Shell` -> `bash`, `yml` -> `yaml`)."""
    lowered = name.strip().lower()
    return LANGUAGE_ALIASES.get(lowered, lowered)


def check_language(language: str | None, kind: SearchKind = SearchKind.CODE) -> str | None:
    """The canonical language asked for; None when none was (or it is blank); InvalidRequestError when it is not a
    short identifier, or is given to a page search (it filters code blocks). A well-formed name no block has is not
    an error: it finds nothing."""
    if language is None or not language.strip():
        return None
    if kind is not SearchKind.CODE:
        raise InvalidRequestError("language filters code blocks: use it with kind=code", argument="language")
    if not LANGUAGE.fullmatch(language.strip()):
        raise InvalidRequestError(LANGUAGE_REFUSED, argument="language")
    return canonical_language(language)


WHOLE_NUMBER = re.compile("[0-9]{1,15}")
"""The one spelling of a number a caller may send as text: ASCII digits only. `str.isdigit` admits superscripts
and other scripts' digits that `int` then refuses or reads; pydantic's lax `int` admits signs, spaces and `_`."""


def whole_number(name: str, value: str) -> int:
    """`value` as a whole number, or InvalidRequestError naming `name`: nothing but ASCII digits is read as one."""
    if not WHOLE_NUMBER.fullmatch(value):
        raise InvalidRequestError(BOUNDED.get(name, f"{name} must be a whole number (digits 0-9)"), argument=name)
    return int(value)


ROOT_LOCATION = '"" (the default site\'s home page: its location is empty)'
"""How text (the CLI's, MCP's) shows the default site's home page, whose location is the empty string."""


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
    try:
        parts, allowed = urlsplit(value), urlsplit(origin)
    except ValueError:  # a malformed host (`http://[abc/x`, a fullwidth `#`): not a URL under the origin either
        raise InvalidRequestError("location is a URL outside the configured documentation origin") from None
    same = (parts.scheme or allowed.scheme, parts.netloc.lower()) == (allowed.scheme, allowed.netloc.lower())
    if not same or not (parts.path + "/").startswith(allowed.path.rstrip("/") + "/"):
        raise InvalidRequestError("location is a URL outside the configured documentation origin")
    rest = parts.path[len(allowed.path.rstrip("/")) :]
    return rest + (f"#{parts.fragment}" if parts.fragment else "")


def nearest(name: str, names: Sequence[str], *, limit: int = 3) -> list[str]:
    """The configured names closest to `name`, closest first: one that starts with it or contains it (or that it
    contains) before one merely spelt alike (difflib's ratio of at least 0.6); case-insensitive."""
    wanted = name.strip().lower()
    scored: list[tuple[float, str]] = []
    for candidate in names:
        known = candidate.lower()
        if not wanted:
            continue
        if known.startswith(wanted) or wanted.startswith(known):
            score = 2.0 + min(len(wanted), len(known)) / max(len(wanted), len(known))
        elif wanted in known or known in wanted:
            score = 1.5 + min(len(wanted), len(known)) / max(len(wanted), len(known))
        else:
            score = SequenceMatcher(None, wanted, known).ratio()
            if score < 0.6:
                continue
        scored.append((score, candidate))
    return [candidate for _, candidate in sorted(scored, key=lambda pair: -pair[0])[:limit]]
