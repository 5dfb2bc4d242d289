"""Turn Azure AI Search hits into search results, as the spec maps them (pure: no I/O, no SDK).

A hit names its document by the blob the indexer read (`metadata_storage_path`), for example
`https://acct.blob.core.windows.net/container/forge/guide/install.md` (or that URL base64-encoded, when the index
uses it as its key). Below the container, the blob's path is the
page's path on the documentation origin, so:

- `url` is that path under `PlatformDocsBaseUrl` (a trailing `index.html` becomes its directory, the page's
  canonical address);
- `location` is the clean form of the path (no `.md` / `.html` suffix, no trailing `index`), with the
  `MkDocsSitePrefix` segment stripped, so the MkDocs provider resolves it for `get`: bare for that site,
  `{site}/{path}` for every other;
- `site` is the path's first segment;
- `previewText` is cut from the content field around the query (`shared.preview`), the indexed description only
  when that comes back empty (on rendered pages the description is the site-wide meta description);
- `score` is the semantic reranker's score when present, else the search score.

Twins (the `.md` and `.html` blobs of one page, both indexed when no `SearchFilter` removes one) share a location:
only the better-ranked one is kept, so one page never fills two result slots.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

from shared.code_samples import guess, sample
from shared.models import SearchResult
from shared.preview import make_preview
from shared.validation import canonical_language

PROVIDER = "ai_search"
_SUFFIXES = (".md", ".html", ".htm")
RERANKER_SCORE = "@search.reranker_score"
SEARCH_SCORE = "@search.score"
CODE_PER_PAGE = 3
"""Code chunks of one page a code search keeps at most (as the MkDocs provider's code search does)."""


@dataclass(frozen=True, slots=True)
class Fields:
    """The index's field names, as configured."""

    url: str = "metadata_storage_path"
    content: str = "content"
    title: str = "title"
    description: str = "description"
    version: str | None = None
    """The field holding a versioned site's version (`VersionField`), when the index has one."""
    language: str | None = None
    """The field holding a code chunk's language (`LanguageField`), when the index has one."""

    def selected(self) -> list[str]:
        """What a search asks the index to return: exactly the fields mapping reads."""
        optional = tuple(field for field in (self.version, self.language) if field)
        return list(dict.fromkeys((self.url, self.title, self.content, self.description, *optional)))


@dataclass(frozen=True, slots=True)
class Mapper:
    """Maps hits for one configuration: the index's fields, where pages are published, the stripped prefix."""

    fields: Fields
    base_url: str
    site_prefix: str

    def results(
        self, hits: Iterable[Mapping[str, object]], query: str, limit: int, *, code: bool = False
    ) -> list[SearchResult]:
        """Up to `limit` results in the hits' order; hits without a usable path are skipped, twins kept once. With
        `code`, each hit is a code chunk: its content is the block (`code_result`), and a page keeps up to
        `CODE_PER_PAGE` of them."""
        seen: dict[str, int] = {}
        results: list[SearchResult] = []
        for hit in hits:
            result = self.result(hit, query)
            if result is not None and code:
                result = self.code_result(result, hit)
            if result is None or seen.get(result.location.lower(), 0) >= (CODE_PER_PAGE if code else 1):
                continue
            seen[result.location.lower()] = seen.get(result.location.lower(), 0) + 1
            results.append(result)
            if len(results) >= limit:
                break
        return results

    def code_result(self, result: SearchResult, hit: Mapping[str, object]) -> SearchResult | None:
        """A code chunk's result: its content as the block, its language from `LanguageField` (else guessed, and
        marked so); None for a chunk with no code in it."""
        text = _text(hit.get(self.fields.content)).strip("\n")
        if not text.strip():
            return None
        named = canonical_language(_text(hit.get(self.fields.language))) if self.fields.language else ""
        language = named or guess(text)
        return result.model_copy(update={"code": sample(text, language), "language_guessed": not named})

    def result(self, hit: Mapping[str, object], query: str) -> SearchResult | None:
        """One hit as a result, or None when its path cannot name a page."""
        path = document_path(_text(hit.get(self.fields.url)), self.base_url)
        if path is None:
            return None
        segments = path.rstrip("/").split("/")
        clean = clean_path(path)
        site = segments[0] if len(segments) > 1 else self.site_prefix
        location = strip_prefix(clean, self.site_prefix)
        preview = make_preview(_text(hit.get(self.fields.content)), query)
        if not preview:
            preview = make_preview(_text(hit.get(self.fields.description)), query)
        title = " ".join(_text(hit.get(self.fields.title)).split())
        version = _text(hit.get(self.fields.version)).strip() if self.fields.version else ""
        return SearchResult(
            version=version or None,
            location=location,
            title=title or (clean.rsplit("/", 1)[-1] if clean else site),
            url=page_url(self.base_url, path),
            site=site,
            preview_text=preview,
            score=score(hit),
            provider=PROVIDER,
        )


def document_path(raw: str, base_url: str) -> str | None:
    """The page's path on the origin (`forge/guide/install.md`): below the blob container of a storage URL, below
    `base_url` for a URL already on the published site, as given for a relative path; None when unusable."""
    raw = _base64_decoded(raw.strip())
    if not raw:
        return None
    base = base_url.rstrip("/")
    if raw.lower().startswith(base.lower() + "/"):
        path = raw[len(base) + 1 :]
    elif "://" in raw:
        try:
            path = urlsplit(raw).path.strip("/").partition("/")[2]  # drop the container
        except ValueError:  # a malformed URL: this hit is skipped, the others stand
            return None
    else:
        path = raw
    path = unquote(path.partition("?")[0].partition("#")[0])
    segments = [segment for segment in path.split("/") if segment]
    if not segments or "\\" in path or any(s in (".", "..") or not s.isprintable() for s in segments):
        return None
    return "/".join(segments) + ("/" if path.endswith("/") else "")


def _base64_decoded(raw: str) -> str:
    """The URL inside a key the indexer base64-encoded (its `base64Encode` mapping: URL-safe, by default in the
    .NET token form whose last digit counts the padding it dropped); anything else unchanged."""
    if "/" in raw or "." in raw or len(raw) < 8:
        return raw
    candidates = []
    if raw[-1] in "012" and (len(raw) - 1 + int(raw[-1])) % 4 == 0:
        candidates.append(raw[:-1] + "=" * int(raw[-1]))
    candidates.append(raw + "=" * (-len(raw) % 4))
    for candidate in candidates:
        try:
            decoded = base64.urlsafe_b64decode(candidate).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            continue
        if decoded.startswith(("https://", "http://")):
            return decoded
    return raw


def clean_path(path: str) -> str:
    """The clean form MkDocs resolves exactly: no `.md`/`.html`/`.htm` suffix, no trailing `index` segment or `/`."""
    path = path.rstrip("/")
    lowered = path.lower()
    for suffix in _SUFFIXES:
        if lowered.endswith(suffix):
            path = path[: -len(suffix)]
            break
    if path.lower() == "index":
        return ""
    if path.lower().endswith("/index"):
        return path[: -len("/index")]
    return path


def strip_prefix(path: str, prefix: str) -> str:
    """`path` without its leading `prefix` segment (case-insensitive); unchanged when it has none or it is empty."""
    prefix = prefix.strip("/")
    if not prefix:
        return path
    head, _, rest = path.partition("/")
    return rest if head.lower() == prefix.lower() else path


def page_url(base_url: str, path: str) -> str:
    """The published address of `path`: under `base_url`, a trailing `index.html` shown as its directory."""
    if path.lower() == "index.html":
        path = ""
    elif path.lower().endswith("/index.html"):
        path = path[: -len("index.html")]
    return f"{base_url.rstrip('/')}/{quote(path, safe='/')}"


def score(hit: Mapping[str, object]) -> float:
    """The reranker's score when the semantic ranker gave one, else the search score; 0 when neither is a number."""
    for key in (RERANKER_SCORE, SEARCH_SCORE):
        value = hit.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            return round(float(value), 4)
    return 0.0


def _text(value: object) -> str:
    """A string field's value; anything else (missing, null, a number, a list) counts as absent."""
    return value if isinstance(value, str) else ""
