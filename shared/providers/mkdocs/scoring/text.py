"""Turn documentation text and queries into search terms: identifiers kept whole and split, words stemmed.

Documentation queries mix prose ("make the namespace get created") with identifiers (`policy.default`,
`--dry-run`, `argocd_app_info`, `CreateNamespace=true`, `route53:ChangeResourceRecordSets`). One analyzer
serves both sides, so whatever a page says matches however a reader types it:

- a compound token (joined by `. / : = _ -` or written in camelCase) is emitted whole, lower-cased and
  without leading dashes, so an exact identifier match counts on top of its parts;
- pieces between hierarchical separators (`/ : = @`) that are still compounds are emitted whole too, so
  `skip-reconcile` matches `argocd.argoproj.io/skip-reconcile`;
- every word part is lower-cased, dropped if it is an English stop word, and Snowball-stemmed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

import Stemmer  # type: ignore[import-not-found]  # PyStemmer ships no type stubs

_RAW = re.compile(r"\w(?:[\w.:/=@+-]*\w)?")
_UNICODE_WORDS = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_HIERARCHY = re.compile(r"[/:=@]+")
_JOINERS = re.compile(r"[._/:=@+-]")
_JOINED_NAME = re.compile(r"[A-Za-z0-9][.=:/][A-Za-z]")
_LOWER_CAMEL = re.compile(r"[a-z]+[A-Z][a-z]")
_VERSION = re.compile(r"v?\d+(?:\.(?:\d+|x))+$", re.IGNORECASE)
_ABBREVIATIONS = frozenset({"e.g", "i.e"})
"""What `identifier_share` counts as identifiers, and what it does not."""

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between
    both but by can cannot could did do does doing down during each few for from further had has have having he her
    here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not of
    off on once only or other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your yours yourself yourselves""".split()  # noqa: SIM905
)
"""Function words: they carry no topic, and documentation prose is full of them."""

_STEMMER = Stemmer.Stemmer("english")
_TOKEN_CACHE: dict[str, tuple[str, ...]] = {}
_TOKEN_CACHE_SIZE = 200_000
"""Raw token -> terms. A plain dict: indexing looks up every token of a site, and a site repeats most of them."""


@dataclass(frozen=True, slots=True)
class Query:
    """A query's distinct terms, and optional alternatives: adjacent words joined ("log in" as "login")."""

    words: tuple[str, ...]
    joined: tuple[str, ...]


def analyze(text: str) -> list[str]:
    """Every term of a document's text, in order, repeated as often as it occurs."""
    out: list[str] = []
    cache = _TOKEN_CACHE
    for token in _RAW.findall(text):
        found = cache.get(token)
        if found is None:
            if len(cache) >= _TOKEN_CACHE_SIZE:
                cache.clear()
            found = cache[token] = _token_terms(token)
        out += found
    return out


@lru_cache(maxsize=256)
def analyze_query(query: str) -> Query:
    """A query's distinct terms, then adjacent plain words joined into one, each in first-seen order.

    Readers split what documentation writes as one word (back up / backup, log in / login, set up / setup);
    the joined form only adds evidence when a page uses it. Cached: the provider asks every site in turn.
    """
    words = tuple(dict.fromkeys(analyze(query)))
    tokens = [token.lower() for token in _RAW.findall(query)]
    joined = (stem(a + b) for a, b in pairwise(tokens) if a.isalpha() and b.isalpha())
    return Query(words, tuple(term for term in dict.fromkeys(joined) if term not in words and term not in STOP_WORDS))


@lru_cache(maxsize=256)
def identifier_share(query: str) -> float:
    """The share of a query's tokens that are identifiers a reader copied: a name with `_`, a dotted, slashed or
    `=`/`:`-joined name (`resource.respectRBAC`, `applicationsets.argoproj.io`, `CN=k8s_admins`), or a lowerCamel
    key (`insteadOf`); version numbers (`2.14`, `v1.2.x`) and abbreviations (`e.g.`) are not.

    An identifier is matched exactly by terms and only vaguely by meaning, so the ranker gives meaning less say
    the more of a query is identifiers. Plain hyphenated words (`built-in`) and product names (`GitHub`) are
    words, not identifiers. Cached: the provider asks every site in turn.
    """
    tokens = _RAW.findall(query)
    if not tokens:
        return 0.0
    found = sum(1 for token in tokens if _is_identifier(token))
    return found / len(tokens)


def _is_identifier(token: str) -> bool:
    if _VERSION.match(token) or token.lower() in _ABBREVIATIONS:
        return False
    return "_" in token or _JOINED_NAME.search(token) is not None or _LOWER_CAMEL.match(token) is not None


def written_words(text: str) -> list[str]:
    """The words a reader would type for `text` (a title), one term each, spelled as `analyze` spells them.

    `analyze` emits a compound whole *and* its parts, which is right for matching but counts one written word
    up to three times when asking how much of a title a query covers. Here a camelCase word is one word
    (`VNet`, `OneLogin`: its whole term, which a query matches by writing the word, or its parts side by side),
    and a word joined by `. _ -` is its words (`Hub-Networking` is `hub` and `network`).
    """
    out: list[str] = []
    for token in _RAW.findall(text):
        for piece in _HIERARCHY.split(token):
            words = _words(piece)
            if len(words) > 1 and not _JOINERS.search(piece):
                out.append(piece.lower())  # camelCase: analyze emits this whole
                continue
            out.extend(stem(word) for word in words if word not in STOP_WORDS)
    return out


def _token_terms(token: str) -> tuple[str, ...]:
    """Terms of one raw token: the whole compound and its pieces first, then stemmed word parts."""
    words = _words(token)
    out: list[str] = []
    if _is_compound(token, words):
        out.append(token.lower())
        pieces = _HIERARCHY.split(token)
        if len(pieces) > 1:
            out.extend(piece.lower() for piece in pieces if _is_compound(piece, _words(piece)))
    out.extend(stem(word) for word in words if word not in STOP_WORDS)
    return tuple(out)


def _words(token: str) -> list[str]:
    # camelCase splitting needs ASCII case classes; other scripts split on separators only.
    found = _CAMEL.findall(token) if token.isascii() else _UNICODE_WORDS.findall(token)
    return [word.lower() for word in found]


def _is_compound(token: str, words: list[str]) -> bool:
    return len(words) > 1 or _JOINERS.search(token) is not None


def stem(word: str) -> str:
    """The Snowball English stem of one lower-case word."""
    return str(_STEMMER.stemWord(word))
