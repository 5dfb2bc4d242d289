"""Where a site's index comes from: the load policy, and the copies it chooses between.

A site loads from the first that serves: a fresh stored copy's prebuilt ranker (the warm-up's), the fresh stored
copy parsed and ranked here, the origin's copy (fetched, validated and written back), and a stale stored copy when
the origin fails. A store check (`SiteLoader.newer`) finds a newer copy written by any instance. Parsing and
ranking run off the event loop, so a cold site load does not stall requests for sites already loaded.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from types import ModuleType

from shared import memory
from shared.cache import (
    CopyStat,
    CopyStore,
    StoredCopy,
    index_name,
    ranking_name,
    store_newest,
)
from shared.errors import IndexFormatError, OriginError, SiteUnavailableError, StoreError
from shared.fetch import MAX_INDEX_BYTES, OriginClient
from shared.providers.mkdocs.codeblocks import code, coderank, prebuilt
from shared.providers.mkdocs.fetching import markup
from shared.providers.mkdocs.indexes import columns, index
from shared.providers.mkdocs.indexes.index import SiteIndex, check_size, parse_index
from shared.providers.mkdocs.indexes.kinds import PathWeights
from shared.providers.mkdocs.lifecycle.layouts import FIRST_CONTACT, Layout, Layouts
from shared.providers.mkdocs.scoring import artifact, parameters, postings, ranking, semantics, text
from shared.providers.mkdocs.scoring.ranking import Ranker
from shared.settings import IndexPolicy

log = logging.getLogger(__name__)


def code_digest(*modules: ModuleType) -> str:
    """A short digest of these modules' source: what stored derived data records to be refused by other code."""
    return hashlib.sha256(b"".join(Path(module.__file__ or "").read_bytes() for module in modules)).hexdigest()[:32]


RANKING_CODE = code_digest(
    artifact, code, coderank, columns, index, markup, parameters, postings, prebuilt, ranking, semantics, text
)
"""The code that decides tokens, entries and scores (the default parameters' numbers among it): a prebuilt ranker
from any other code is never loaded."""


ZENSICAL_INDEX_PATH = "/search.json"
"""Where a Zensical site publishes its search index, under its base URL (read when the MkDocs index is not there)."""
GONE = (404, 410)


class Source(StrEnum):
    """Where a loaded index copy came from."""

    ORIGIN = "origin"
    CACHE = "cache"
    STALE_CACHE = "stale-cache"
    """The store's copy, older than CacheDurationHours, served because the origin failed."""


class Prebuilt(StrEnum):
    """What storing a prebuilt ranker came to (`store_prebuilt`)."""

    BUILT = "built"
    CURRENT = "current"
    """One for this index version and this code was there already."""
    CHANGED = "changed"
    """The stored index is no longer the version asked for: nothing built."""


@dataclass(frozen=True, slots=True)
class LoadedSite:
    """An index and its ranker, built together and swapped together."""

    index: SiteIndex
    ranker: Ranker | None
    """None while a provider ahead of MkDocs answers searches and none has fallen through yet
    (`SiteRegistry.searchable` builds it then): resolution and `get` need only the index."""
    version: str | None
    """The store version this copy was last compared with; the periodic check looks for a different one."""
    source: Source
    fetched_at: datetime
    digest: str
    prebuilt: bool = False
    """Loaded from the stored prebuilt ranker rather than parsed and built here."""


@dataclass(frozen=True, slots=True)
class FetchedIndex:
    """A validated copy of a site's index straight from the origin."""

    entry: StoredCopy
    index: SiteIndex


def validators(cached: StoredCopy | CopyStat | None) -> dict[str, str]:
    """Conditional-request headers from what the origin said when the cached copy was taken."""
    headers: dict[str, str] = {}
    if cached is not None and cached.origin_etag:
        headers["If-None-Match"] = cached.origin_etag
    if cached is not None and cached.origin_last_modified:
        headers["If-Modified-Since"] = cached.origin_last_modified
    return headers


async def fetch_index(
    client: OriginClient,
    policy: IndexPolicy,
    site: str,
    *,
    conditional: StoredCopy | CopyStat | None = None,
    layouts: Layouts | None = None,
) -> FetchedIndex | None:
    """GET the site's published index and validate it; None on 304 (only when `conditional` is given). With
    `layouts`, only the layouts it says are asked for (one per check for a site that published none).

    Raises OriginError when the origin fails and IndexFormatError when the copy is malformed or empty, so a bad
    origin copy never gets as far as the cache.
    """
    headers = validators(conditional)
    sites = policy.sites
    url = sites.index_url(site)
    # Redirects stay inside the site (`{Origin}/{site}/`), or at the index an override names: a site's index must
    # never be served from another site's.
    overridden = site in sites.overrides
    scope = url if overridden else sites.base_url(site) + "/"
    bound = max_index_bytes(policy)
    # No MkDocs index: a site built with Zensical publishes `search.json` at its root instead (the same copy's
    # validators apply: they came from whichever of the two answered).
    urls = {Layout.INDEX: url, Layout.ZENSICAL: sites.base_url(site) + ZENSICAL_INDEX_PATH}
    if overridden:
        asked: tuple[Layout, ...] = (Layout.INDEX,)
    else:
        asked = layouts.to_ask(site) if layouts is not None else FIRST_CONTACT
    response = None
    try:
        for layout in asked:
            response = await client.get(urls[layout], scope=scope, max_bytes=bound, headers=headers)
            if response.status not in GONE:
                if layouts is not None and response.status in (200, 304) and not overridden:
                    layouts.published(site, layout)
                break
    except OriginError as exc:
        if exc.too_large:
            raise IndexFormatError(f"the index is larger than {bound / 2**20:g} MB (MaxIndexMegabytes)") from None
        raise
    if response is None or response.status in GONE:
        if layouts is not None and not overridden:
            layouts.unpublished(site)
        status = response.status if response is not None else 404
        raise OriginError(f"index request answered HTTP {status}", status=status)
    if response.status == 304 and headers:
        return None
    if response.status != 200:
        raise OriginError(f"index request answered HTTP {response.status}", status=response.status)
    check_size(response.body, max_entries=policy.max_entries, max_bytes=bound)
    index = await asyncio.to_thread(parse_index, site, response.body)
    entry = StoredCopy(
        response.body, datetime.now(UTC), response.etag, response.last_modified, entries=len(index.entries)
    )
    return FetchedIndex(entry, index)


def max_index_bytes(policy: IndexPolicy) -> int:
    """The largest index a site may publish, in bytes (`MaxIndexMegabytes`, never past `MAX_INDEX_BYTES`)."""
    return min(int(policy.max_megabytes * 2**20), MAX_INDEX_BYTES)


async def try_parse(site: str, cached: StoredCopy, policy: IndexPolicy) -> SiteIndex | None:
    """The cached copy parsed off the event loop, or None when it is unusable (corrupt, empty, or past the bounds
    it was stored under: they may have been lowered since)."""
    try:
        check_size(cached.payload, max_entries=policy.max_entries, max_bytes=max_index_bytes(policy))
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
    entry: StoredCopy, source: Source, index: SiteIndex, weights: PathWeights, *, rank: bool = True
) -> LoadedSite:
    """Rank off the event loop, so a cold load does not stall requests for sites already loaded; `rank=False`
    leaves the search structures for later (`SiteRegistry.searchable`)."""
    ranker = await asyncio.to_thread(_build, index, weights) if rank else None
    return LoadedSite(index, ranker, entry.version, source, entry.fetched_at, entry.digest)


async def rank(loaded: LoadedSite, weights: PathWeights) -> Ranker:
    """The ranker of a loaded index, built off the event loop."""
    return await asyncio.to_thread(_build, loaded.index, weights)


def built_from(stat: CopyStat) -> str:
    """What a prebuilt ranker records it was built from: the index version and the ranking code."""
    return f"{stat.digest}/{RANKING_CODE}"


async def load_prebuilt(
    store: CopyStore,
    site: str,
    stat: CopyStat,
    weights: PathWeights,
    source: Source = Source.CACHE,
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
            if described is None or described.built_from != built_from(stat):
                return None
        kept = await store.read(ranking_name(site))
    except StoreError as exc:
        log.info("site %s: prebuilt ranker unreadable (%s)", site, type(exc).__name__)
        return None
    if kept is None or kept.built_from != built_from(stat):
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


@dataclass(frozen=True, slots=True)
class Newer:
    """What a store check found: `copy` replaces the served index (`fresh`), or is the served one relabelled."""

    copy: LoadedSite
    fresh: bool


class SiteLoader:
    """The load policy of one process's sites: which copy a first load serves, and what a store check finds."""

    def __init__(self, client: OriginClient, store: CopyStore, *, policy: IndexPolicy, weights: PathWeights) -> None:
        self._policy = policy
        self._client = client
        self._store = store
        self._weights = weights
        self.layouts = Layouts()
        """Which layout each site publishes (`layouts.py`): one origin request per check of an unpublished site."""

    @property
    def weights(self) -> PathWeights:
        return self._weights

    def name(self, site: str) -> str:
        """The store's name for the site's index: the spec's cache file name."""
        return index_name(self._policy.file_name_template, site)

    async def load(self, site: str, *, rank: bool) -> LoadedSite:
        """The copy a first load serves; raises SiteUnavailableError when there is none. `rank=False` leaves the
        search structures for the first search that needs them."""
        name = self.name(site)
        prebuilt = await self._prebuilt(site, name) if rank else None
        if prebuilt is not None:
            return prebuilt
        cached = await self._read_cache(site, name)
        # Parsing validates the copy; the ranker, the costly part, is built only for the copy actually served.
        parsed = await try_parse(site, cached, self._policy) if cached is not None else None
        if parsed is not None and cached is not None and cached.age_hours() < self._policy.cache_hours:
            return await build(cached, Source.CACHE, parsed, self._weights, rank=rank)
        try:
            fetched = await fetch_index(
                self._client, self._policy, site, conditional=cached if parsed else None, layouts=self.layouts
            )
        except (OriginError, IndexFormatError) as exc:
            if parsed is not None and cached is not None:
                log.info("site %s: origin failed (%s); serving the stale cached index", site, type(exc).__name__)
                return await build(cached, Source.STALE_CACHE, parsed, self._weights, rank=rank)
            unpublished = isinstance(exc, OriginError) and exc.status == 404
            raise SiteUnavailableError(site, str(exc), unpublished=unpublished) from exc
        if fetched is None:
            assert parsed is not None and cached is not None  # a 304 only answers a conditional request
            usable = await build(cached, Source.CACHE, parsed, self._weights, rank=rank)
            return await self._revalidated(site, usable, cached.version)
        version = await self._write_back(site, fetched.entry, cached)
        built = await build(fetched.entry, Source.ORIGIN, fetched.index, self._weights, rank=rank)
        return replace(built, version=version)

    async def prebuilt_for(self, site: str, current: LoadedSite) -> LoadedSite | None:
        """The stored prebuilt ranker of exactly the served copy, labelled as it; None when there is none."""
        stat = await self._stat(self.name(site))
        if stat is None or stat.digest != current.digest:
            return None
        prebuilt = await load_prebuilt(self._store, site, stat, self._weights, source=current.source)
        return replace(prebuilt, version=current.version, fetched_at=current.fetched_at) if prebuilt else None

    async def written_since(self, site: str, failed_at: datetime) -> bool:
        """The store holds a copy fetched after `failed_at` (the warm-up's, for a site that failed here)."""
        stat = await self._stat(self.name(site))
        return stat is not None and stat.fetched_at > failed_at

    async def newer(self, site: str, current: LoadedSite, known: LoadedSite, *, rank: bool) -> Newer | None:
        """What the store holds beyond `known` (the newest copy in hand; `current` is served): a newer copy, the
        same one relabelled with the store's version, or None. An unchanged copy costs one property read."""
        try:
            stat = await self._store.stat(self.name(site))
            if stat is None or stat.version in (current.version, known.version):
                return None
            if stat.digest == known.digest:  # revalidated or rewritten with the same content
                fetched_at = max(current.fetched_at, stat.fetched_at)
                return Newer(replace(current, version=stat.version, fetched_at=fetched_at), fresh=False)
            if stat.fetched_at < known.fetched_at:  # older than what this instance already holds
                return Newer(replace(current, version=stat.version), fresh=False)
            prebuilt = (
                await load_prebuilt(self._store, site, stat, self._weights, likely_current=False) if rank else None
            )
            if prebuilt is not None:
                log.info(
                    "site %s: a newer cached index is in, prebuilt (%d entries)", site, len(prebuilt.index.entries)
                )
                return Newer(prebuilt, fresh=True)
            cached = await self._store.read(self.name(site))
        except StoreError as exc:
            log.info("site %s: cache check failed (%s); keeping the loaded index", site, exc)
            return None
        parsed = await try_parse(site, cached, self._policy) if cached is not None else None
        if parsed is not None and cached is not None and cached.fetched_at >= known.fetched_at:
            fresh = await build(cached, Source.CACHE, parsed, self._weights, rank=rank)
            log.info("site %s: a newer cached index is in (%d entries)", site, len(fresh.index.entries))
            return Newer(fresh, fresh=True)
        return Newer(replace(current, version=cached.version), fresh=False) if cached is not None else None

    async def _prebuilt(self, site: str, name: str) -> LoadedSite | None:
        """A fresh stored copy's prebuilt ranker (the warm-up's), loaded instead of parsing and building; None when
        there is no fresh copy or no usable prebuilt ranker for it."""
        stat = await self._stat(name)
        if stat is None or not stat.complete or stat.age_hours() >= self._policy.cache_hours:
            return None
        return await load_prebuilt(self._store, site, stat, self._weights)

    async def _stat(self, name: str) -> CopyStat | None:
        """The stored copy's properties; None when there is none or the store does not answer (the caller goes on
        without it)."""
        try:
            return await self._store.stat(name)
        except StoreError:
            return None

    async def _revalidated(self, site: str, usable: LoadedSite, version: str | None) -> LoadedSite:
        """The origin answered 304 for a stale copy: it is current again; record that for other instances."""
        now = datetime.now(UTC)
        touched = None
        try:
            if version is not None:
                touched = await self._store.touch(self.name(site), now, expected_version=version)
        except StoreError as exc:
            log.info("site %s: could not record the revalidation (%s)", site, exc)
        return replace(usable, source=Source.CACHE, fetched_at=now, version=touched or version)

    async def _read_cache(self, site: str, name: str) -> StoredCopy | None:
        try:
            return await self._store.read(name)
        except StoreError as exc:  # a broken store degrades to the origin, never to a 500
            log.info("site %s: index cache unreadable (%s); using the origin", site, exc)
            return None

    async def _write_back(self, site: str, entry: StoredCopy, cached: StoredCopy | None) -> str | None:
        try:
            return await store_newest(
                self._store, self.name(site), entry, expected_version=cached.version if cached else None
            )
        except StoreError as exc:
            log.info("site %s: could not write the index cache (%s)", site, exc)
            return None
