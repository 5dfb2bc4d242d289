"""Whether a path could leave where it points once some server normalises it: one rule for the locations an index
lists, the locations callers ask for, and every URL sent to the origin (pure).

A dot segment counts however it is spelled: `..` and `.`, with a `;parameter` (`..;`, which Tomcat drops before
resolving), percent-encoded once or nested (`%2e%2e`, `%252e`), as overlong UTF-8 (`%C0%AE`), and as any character
that compatibility normalisation (NFKC, what IIS and many frameworks apply) turns into dots: the fullwidth full stop
U+FF0E, the one-dot leader U+2024, the two-dot leader U+2025. So do backslashes, a leading `//`, a scheme, control
characters and lone surrogates.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import unquote

SURROGATE = re.compile("[\ud800-\udfff]")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
DECODINGS = 3
"""Percent-decodings tried: enough for `%252e` and one more."""


def escapes(path: str) -> bool:
    """True when `path` (a location or a URL's path, its `#fragment` ignored) could leave where it points."""
    decoded = path
    try:
        for _ in range(DECODINGS):
            decoded = unquote(decoded, errors="strict")
    except UnicodeDecodeError:  # overlong or broken UTF-8 is how `%C0%AE` smuggles a dot
        return True
    if SURROGATE.search(decoded):  # no URL or answer can carry it
        return True
    text = unicodedata.normalize("NFKC", decoded)  # fullwidth and leader dots become ASCII dots, fullwidth slashes `/`
    if "\\" in text or text.startswith("//") or _SCHEME.match(text) or any(ord(char) < 32 for char in text):
        return True
    return any(segment.split(";", 1)[0] in (".", "..") for segment in text.partition("#")[0].split("/"))
