"""Free text a caller wrote (a search's words, a page's feedback), with what identifies a person or opens a system
replaced by placeholders, before it is kept anywhere (pure, no I/O).

Usage insights keep the questions agents asked so the people who own the documentation can see what was not
found; those questions are pasted from terminals and tickets, so they carry addresses, ids and credentials. The
rules run from the most specific to the broadest, each on what the earlier ones left:

- a URL keeps its scheme, host and path, and loses its query and fragment (`<query>`); its user info is dropped;
- a JSON Web Token, a PEM block, what follows `password`, `secret`, `token`, `api_key` and their kin after `=` or
  `:` (or a space, when it holds a digit: `token 9f8e7d6c`) become `<secret>`; so does a run of 20 or more
  letters, digits and `+/_-` mixing lower and upper case and digits (API keys, connection-string keys), and a run
  of 32 or more hex digits (hashes, hex keys);
- an e-mail address becomes `<email>`, a GUID `<guid>`, an IPv4 or IPv6 address `<ip>`;
- a run of 6 or more digits (account and card numbers, phone numbers) becomes `<number>`.

The text is also cut to `MAX_CHARS` and its whitespace collapsed, so one question is one line. What is left is
what a docs team needs to see the topic ("rotate the gateway certificate for <email>"), and nothing else.
"""

from __future__ import annotations

import re

MAX_CHARS = 2_000
"""The longest text kept: a feedback's limit; a search's words are at most 1,024 already."""

_URL = re.compile(r"\b(?P<scheme>[a-z][a-z0-9+.-]*://)(?:[^\s/@]+@)?(?P<rest>[^\s?#]*)(?P<tail>[?#]\S*)?", re.I)
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}(?:\.[A-Za-z0-9_-]*)?")
_PEM = re.compile(r"-----BEGIN [A-Z ]+-----.*?(?:-----END [A-Z ]+-----|$)", re.S)
_ASSIGNED = re.compile(
    r"(?P<name>\b[\w.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|account[_-]?key|"
    r"client[_-]?secret|sig|signature|credential|bearer)\b)"
    r"(?:(?P<join>\s*[:=]\s*)(?P<value>\"[^\"]*\"|'[^']*'|\S+)|(?P<space>\s+)(?=\S*\d)\S{6,})",
    re.I,
)
_KEYLIKE = re.compile(
    r"(?<![\w<])(?:(?=[A-Za-z0-9+/_-]*[a-z])(?=[A-Za-z0-9+/_-]*[A-Z])(?=[A-Za-z0-9+/_-]*\d)[A-Za-z0-9+/_-]{20,}={0,2}"
    r"|[0-9a-f]{32,})(?![\w>])"
)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_GUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)
_IPV4 = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")
_IPV6 = re.compile(
    r"(?<![\w:.])(?=[0-9a-f:]*(?:::|[a-f]))(?=(?:[0-9a-f]*:){2})[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}(?![\w:])", re.I
)
_DIGITS = re.compile(r"\d[\d -]{4,}\d")
_SPACE = re.compile(r"\s+")


def scrub(text: str) -> str:
    """`text` as it may be kept: placeholders for what identifies or opens, one line, at most `MAX_CHARS`."""
    text = _PEM.sub("<secret>", text[: MAX_CHARS * 2])
    text = _URL.sub(_url, text)
    text = _JWT.sub("<secret>", text)
    text = _ASSIGNED.sub(lambda found: f"{found['name']}{found['join'] or found['space']}<secret>", text)
    text = _EMAIL.sub("<email>", text)
    text = _GUID.sub("<guid>", text)
    text = _KEYLIKE.sub("<secret>", text)
    text = _IPV4.sub("<ip>", text)
    text = _IPV6.sub("<ip>", text)
    text = _DIGITS.sub(_digits, text)
    return _SPACE.sub(" ", text).strip()[:MAX_CHARS]


def _url(found: re.Match[str]) -> str:
    tail = "<query>" if found["tail"] else ""
    return f"{found['scheme']}{found['rest']}{tail}"


def _digits(found: re.Match[str]) -> str:
    """A run of digits (spaces and dashes between them, as numbers are written) of 6 or more digits."""
    run = found[0]
    return "<number>" if sum(char.isdigit() for char in run) >= 6 else run
