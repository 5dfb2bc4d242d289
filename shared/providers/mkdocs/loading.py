"""A site's index copies: fetched from the origin and validated, parsed from the cache, built into a ranker.

Parsing and ranking run off the event loop, so a cold site load does not stall requests for sites already loaded.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

from shared import memory
from shared.cache import CachedIndex, CacheStat, IndexStore, ranking_name
from shared.errors import IndexFormatError, OriginError, StoreError
from shared.fetch import MAX_INDEX_BYTES, OriginClient
from shared.providers.mkdocs import artifact, code, coderank, index, markup, parameters, ranking, text
from shared.providers.mkdocs.index import SiteIndex, parse_index
from shared.providers.mkdocs.kinds import PathWeights
from shared.providers.mkdocs.ranking import Ranker
from shared.settings import DocumentationSettings

log = logging.getLogger(__name__)


def code_digest(*modules: ModuleType) -> str:
    """A short digest of these modules' source: what stored derived data records to be refused by other code."""
    return hashlib.sha256(b"".join(Path(module.__file__ or "").read_bytes() for module in modules)).hexdigest()[:32]


RANKING_CODE = code_digest(artifact, code, coderank, index, markup, parameters, ranking, text)
"""The code that decides tokens, entries and scores (the default parameters' numbers among it): a prebuilt ranker
from any other code is never loaded."""


ZENSICAL_INDEX_PATH = "/search.json"
"""Where a Zensical site publishes its search index, under its base URL (read when the MkDocs index is not there)."""
GONE = (404, 410)


@dataclass(frozen=True, slots=True)
class LoadedSite:
    """An index and its ranker, built together and swapped together."""

    index: SiteIndex
    ranker: Ranker | None
    """None while a provider ahead of MkDocs answers searches and none has fallen through yet
    (`SiteRegistry.searchable` builds it then): resolution and `get` need only the index."""
    version: str | None
    """The store version this copy was last compared with; the periodic check looks for a different one."""
    source: str
    fetched_at: datetime
    digest: str
    prebuilt: bool = False
    """Loaded from the stored prebuilt ranker rather than parsed and built here."""


@dataclass(frozen=True, slots=True)
class FetchedIndex:
    """A validated copy of a site's index straight from the origin."""

    entry: CachedIndex
    index: SiteIndex


def validators(cached: CachedIndex | CacheStat | None) -> dict[str, str]:
    """Conditional-request headers from what the origin said when the cached copy was taken."""
    headers: dict[str, str] = {}
    if cached is not None and cached.origin_etag:
        headers["If-None-Match"] = cached.origin_etag
    if cached is not None and cached.origin_last_modified:
        headers["If-Modified-Since"] = cached.origin_last_modified
    return headers


async def fetch_index(
    client: OriginClient,
    settings: DocumentationSettings,
    site: str,
    *,
    conditional: CachedIndex | CacheStat | None = None,
) -> FetchedIndex | None:
    """GET the site's published index and validate it; None on 304 (only when `conditional` is given).

    Raises OriginError when the origin fails and IndexFormatError when the copy is malformed or empty, so a bad
    origin copy never gets as far as the cache.
    """
    headers = validators(conditional)
    url = settings.index_url(site)
    # Redirects stay inside the site (`{Origin}/{site}/`), or at the index an override names: a site's index must
    # never be served from another site's.
    overridden = site in settings.search_index_overrides
    scope = url if overridden else settings.base_url(site) + "/"
    response = await client.get(url, scope=scope, max_bytes=MAX_INDEX_BYTES, headers=headers)
    if response.status in GONE and not overridden:
        # No MkDocs index: a site built with Zensical publishes `search.json` at its root instead (the same copy's
        # validators apply: they came from whichever of the two answered).
        alternative = settings.base_url(site) + ZENSICAL_INDEX_PATH
        response = await client.get(alternative, scope=scope, max_bytes=MAX_INDEX_BYTES, headers=headers)
    if response.status == 304 and headers:
        return None
    if response.status != 200:
        raise OriginError(f"index request answered HTTP {response.status}", status=response.status)
    index = await asyncio.to_thread(parse_index, site, response.body)
    entry = CachedIndex(
        response.body, datetime.now(UTC), response.etag, response.last_modified, entries=len(index.entries)
    )
    return FetchedIndex(entry, index)


async def try_parse(site: str, cached: CachedIndex) -> SiteIndex | None:
    """The cached copy parsed off the event loop, or None when it is unusable (corrupt, empty)."""
    try:
        return await asyncio.to_thread(parse_index, site, cached.payload)
    except IndexFormatError as exc:
        log.info("site %s: cached index is unusable (%s); ignoring it", site, exc)
        return None


def _build(index: SiteIndex, weights: PathWeights) -> Ranker:
    try:
        return Ranker.build(index, weights)
    finally:
        memory.trim()  # the build's working lists


async def build(
    entry: CachedIndex, source: str, index: SiteIndex, weights: PathWeights, *, rank: bool = True
) -> LoadedSite:
    """Rank off the event loop, so a cold load does not stall requests for sites already loaded; `rank=False`
    leaves the search structures for later (`SiteRegistry.searchable`)."""
    ranker = await asyncio.to_thread(_build, index, weights) if rank else None
    return LoadedSite(index, ranker, entry.version, source, entry.fetched_at, entry.digest)


async def rank(loaded: LoadedSite, weights: PathWeights) -> Ranker:
    """The ranker of a loaded index, built off the event loop."""
    return await asyncio.to_thread(_build, loaded.index, weights)


def _built_from(stat: CacheStat) -> str:
    """What a prebuilt ranker records it was built from: the index version and the ranking code."""
    return f"{stat.digest}/{RANKING_CODE}"


async def load_prebuilt(
    store: IndexStore,
    site: str,
    stat: CacheStat,
    weights: PathWeights,
    source: str = "cache",
    *,
    likely_current: bool = True,
) -> LoadedSite | None:
    """The site's stored prebuilt ranker for exactly this index version and this code, checked and loaded off the
    event loop; None when there is none, or it fails a check (the caller parses and builds, and never serves it).

    `likely_current` (a first load: the warm-up built it for the stored index) reads it in one request; otherwise
    (an index that just changed, whose ranker may not be rebuilt yet) a property read first spares downloading a
    stale one."""
    if stat.digest is None:
        return None
    try:
        if not likely_current:
            described = await store.stat(ranking_name(site))
            if described is None or described.origin_etag != _built_from(stat):
                return None
        kept = await store.read(ranking_name(site))
    except StoreError as exc:
        log.info("site %s: prebuilt ranker unreadable (%s)", site, type(exc).__name__)
        return None
    if kept is None or kept.origin_etag != _built_from(stat):
        return None
    digest = stat.digest
    try:
        loaded, ranker = await asyncio.to_thread(
            artifact.loads, kept.payload, site=site, index_digest=digest, code=RANKING_CODE, kinds=weights
        )
    except artifact.ArtifactError as exc:
        log.warning("site %s: the stored prebuilt ranker was refused (%s); building one here", site, exc)
        return None
    return LoadedSite(loaded, ranker, stat.version, source, stat.fetched_at, digest, prebuilt=True)


async def store_prebuilt(
    store: IndexStore,
    site: str,
    stat: CacheStat,
    read: Callable[[], Awaitable[CachedIndex | None]],
    weights: PathWeights,
) -> str:
    """Build and store the ranker of the stored index version `stat` unless one for this version and code is there
    (decided from properties alone): `built`, `current`, or `changed` when `read` (the index's download) is no
    longer that version. Raises StoreError and IndexFormatError."""
    name = ranking_name(site)
    existing = await store.stat(name)
    if existing is not None and existing.origin_etag == _built_from(stat):
        return "current"
    cached = await read()
    if cached is None or stat.digest is None or cached.digest != stat.digest:
        return "changed"
    digest, payload = stat.digest, cached.payload

    def prebuild() -> bytes:
        parsed = parse_index(site, payload)
        return artifact.dumps(Ranker.build(parsed, weights), parsed, index_digest=digest, code=RANKING_CODE)

    built = await asyncio.to_thread(prebuild)
    memory.trim()
    entry = CachedIndex(built, stat.fetched_at, origin_etag=_built_from(stat))
    written = await store.write(name, entry, expected_version=existing.version if existing else None)
    return "built" if written is not None else "current"
