"""A site's index copies: fetched from the origin and validated, parsed from the cache, built into a ranker.

Parsing and ranking run off the event loop, so a cold site load does not stall requests for sites already loaded.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from shared import memory
from shared.cache import CachedIndex, CacheStat
from shared.errors import IndexFormatError, OriginError
from shared.fetch import MAX_INDEX_BYTES, OriginClient
from shared.providers.mkdocs.index import SiteIndex, parse_index
from shared.providers.mkdocs.kinds import PathWeights
from shared.providers.mkdocs.ranking import Ranker
from shared.settings import DocumentationSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LoadedSite:
    """An index and its ranker, built together and swapped together."""

    index: SiteIndex
    ranker: Ranker
    version: str | None
    """The store version this copy was last compared with; the periodic check looks for a different one."""
    source: str
    fetched_at: datetime
    digest: str


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
    scope = url if site in settings.search_index_overrides else settings.base_url(site) + "/"
    response = await client.get(url, scope=scope, max_bytes=MAX_INDEX_BYTES, headers=headers)
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


async def build(entry: CachedIndex, source: str, index: SiteIndex, weights: PathWeights) -> LoadedSite:
    """Rank off the event loop, so a cold load does not stall requests for sites already loaded."""
    ranker = await asyncio.to_thread(_build, index, weights)
    return LoadedSite(index, ranker, entry.version, source, entry.fetched_at, entry.digest)
