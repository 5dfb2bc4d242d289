"""The MkDocs provider: lexical and semantic search over every site's published index, and page fetch as Markdown.

Pages an index lists but the origin does not serve (`SiteRegistry.missing`) are left out of every answer; a `get`
that finds one (404 or 410 for both the raw Markdown and the HTML page) still answers `fetch_failed` and tells the
registry, which remembers it with the cached index for every instance.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from itertools import chain, zip_longest
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import unquote

from shared import reading
from shared.errors import (
    ProviderDeclinedError,
    ResolutionError,
    Unconvertible,
)
from shared.fetch import OriginClient
from shared.markdown import with_front_matter
from shared.models import (
    Document,
    Found,
    Reason,
    Rule,
    SearchKind,
    SearchResult,
    VersionSet,
)
from shared.preview import make_preview
from shared.providers.base import Capabilities
from shared.providers.mkdocs.codeblocks import codesearch
from shared.providers.mkdocs.codeblocks.codesearch import CodeRankers
from shared.providers.mkdocs.codeblocks.languages import CodeFences
from shared.providers.mkdocs.fetching.pagecache import PageCache
from shared.providers.mkdocs.fetching.pages import Fetched, PageFetcher, raw_markdown_url
from shared.providers.mkdocs.fetching.unresolved import Misses
from shared.providers.mkdocs.indexes.resolution import Resolver, qualify
from shared.providers.mkdocs.lifecycle.health import MkDocsHealth, SiteLoaded
from shared.providers.mkdocs.lifecycle.loading import LoadedSite
from shared.providers.mkdocs.lifecycle.sites import SiteRegistry
from shared.providers.mkdocs.lifecycle.versioned import VersionedSites
from shared.providers.mkdocs.lifecycle.versions import Versions
from shared.providers.mkdocs.scoring.federation import Federation, Federations
from shared.providers.mkdocs.scoring.ranking import RankedHit, Ranker
from shared.providers.mkdocs.scoring.semantics import relevance_floor, semantic_say
from shared.providers.mkdocs.scoring.text import analyze_query
from shared.requests import ReadRequest, SearchRequest
from shared.settings import SiteMap

if TYPE_CHECKING:
    from shared.encoders import QueryEmbedding

log = logging.getLogger(__name__)

T = TypeVar("T")

LISTING_QUERY = "*"


class MkDocsProvider:
    """Search and fetch over the MkDocs sites published under one origin."""

    name = "mkdocs"
    order = 100
    capabilities = Capabilities(fetch=True, versions=True, code=True, ceilings=True)
    """Reads; a version of a versioned site in searches and reads (`versions.py`); code blocks (`codesearch.py`)."""

    def __init__(
        self,
        client: OriginClient,
        registry: SiteRegistry,
        *,
        sites: SiteMap,
        raw_pattern: str | None,
        version_defaults: Mapping[str, str],
        min_score: float,
        site_wait: float,
        check_interval: float,
        pages: PageCache | None = None,
    ) -> None:
        self._map = sites
        self._min_score = min_score
        """`Search__MinScore`: the relevance floor a result must clear."""
        self._check_interval = check_interval
        """`Cache__CheckIntervalSeconds`: a document is fresh no longer than the index that resolved it is."""
        self._client = client
        self._registry = registry
        raw = raw_pattern
        versions = Versions(client, sites=sites, defaults=version_defaults, layouts=registry.layouts)
        self._versioned = VersionedSites(registry, versions, sites=sites, wait=site_wait)
        self._resolver = Resolver(sites.sites, sites.default_site, self._versioned.resolvable)
        self._fetcher = PageFetcher(client, pages, sites=sites, raw_pattern=raw)
        self._federations = Federations()
        self._misses = Misses(client, registry, self._resolver, sites=sites)
        self._code = CodeRankers(
            CodeFences(client, registry.store, lambda site, path: raw_markdown_url(sites, raw, site, path))
        )
        self.sites = sites.sites

    async def search(self, request: SearchRequest) -> Found:
        with self._registry.searching():  # reads that can wait (the rerank's word pieces) wait for it
            return await self._search(
                request.query,
                limit=request.limit,
                site=request.site,
                version=request.version,
                kind=request.kind,
                language=request.language,
                hidden=request.hidden,
            )

    async def _search(
        self,
        query: str,
        *,
        limit: int,
        site: str | None,
        version: str | None,
        kind: SearchKind,
        language: str | None,
        hidden: frozenset[str] = frozenset(),
    ) -> Found:
        loaded, states = await self._versioned.ready(site, version, hidden)
        # A provider ahead of MkDocs may have deferred the search structures: a search that reaches here builds them.
        if any(entry.ranker is None for entry in loaded):
            searchable = await asyncio.gather(*(self._registry.searchable(entry.index.site) for entry in loaded))
            loaded = [entry for entry in searchable if entry is not None]
        if kind is SearchKind.CODE:
            return Found(await self._search_code(query, loaded, limit, language, hidden), sites=states)
        if query.strip() == LISTING_QUERY:
            return Found(self._listing(loaded, limit, hidden), sites=states)
        loaded = await self._with_stored_vectors(loaded)
        wanted = analyze_query(query)
        # All sites are scored in one pass; hits (best section, breadcrumb, preview) are built only for those returned.
        rankers = [_ranker(entry) for entry in loaded]
        missing = [self._registry.missing(entry) for entry in loaded]
        sites = tuple(entry.index.site for entry in loaded)
        federation = self._federations.of(sites, rankers)
        say = semantic_say(query, wanted, federation.parameters)
        # The query is embedded, and its vector scanned, on a worker thread while this one does the lexical part.
        scanning = self._scan(query, say, federation, lambda asked: (federation.scan(asked.vector), asked.pieces))
        try:
            lexical = federation.lexical(wanted)
        except BaseException:
            if scanning is not None:
                scanning.cancel()
            raise
        products, pieces = await self._scanned(scanning) or (None, None)
        found = federation.ranked(lexical, say, limit, products, missing, pieces)
        floor = relevance_floor(self._min_score, wanted, federation.parameters, by_meaning=products is not None)
        kept = [
            self._result(loaded[site], scored.hit(number), query, hidden)
            for site, scored, number in found
            if scored.scores[number] >= floor
        ]
        return Found(kept, sites=states, floored=bool(found) and not kept)

    async def _search_code(
        self, query: str, loaded: list[LoadedSite], limit: int, language: str | None, hidden: frozenset[str]
    ) -> list[SearchResult]:
        """The best code blocks for the query (`codesearch.py`), at most a few per page, in `language` if given."""
        loaded = await self._with_stored_vectors(loaded)
        loaded = await codesearch.readable(loaded, self._registry.code_side)
        rankers = [_ranker(entry) for entry in loaded]
        code = await self._code.of(loaded, rankers)
        missing = [self._registry.missing(entry) for entry in loaded]
        if query.strip() == LISTING_QUERY:
            found = codesearch.listed(code, language=language, limit=limit, missing=missing)
        else:
            wanted = analyze_query(query)
            federation = self._federations.of(tuple(entry.index.site for entry in loaded), rankers)
            say = semantic_say(query, wanted, federation.parameters)
            scanned = await self._scanned(self._scan(query, say, federation, codesearch.scan_both(federation)))
            products, similarities = scanned if scanned is not None else (None, None)
            found = codesearch.ranked(
                code,
                federation,
                wanted,
                say,
                products,
                similarities,
                language=language,
                limit=limit,
                missing=missing,
                floor=self._min_score,
            )
        floor = self._min_score if query.strip() != LISTING_QUERY else 0.0
        results = []
        for site, number, score in found:
            if score < floor:
                continue
            ranker, block = code[site], code[site].blocks[number]
            page = self._result(loaded[site], codesearch.page_hit(block, score), query, hidden)
            language, guessed = ranker.languages[number], ranker.guessed[number]
            pending = self._code.reading(loaded[site].index.site)
            results.append(codesearch.result(page, block, language, guessed, score, query, pending=pending))
        return results

    async def code_fences_read(self, site: str) -> None:
        """Wait until the Markdown fences of a site's code blocks, being read since its first code search, are read
        (`languages.py`; tools and tests: no search waits for them)."""
        await self._code.settled(site)

    async def _with_stored_vectors(self, loaded: list[LoadedSite]) -> list[LoadedSite]:
        """The searched sites once their just-loaded stored vectors were looked up (a short, bounded wait:
        `SiteRegistry.looked_up`; vectors being computed are never waited for), each as served now (a swap meanwhile
        is searched as it is)."""
        if self._registry.embedding is None:
            return loaded
        await self._registry.looked_up([entry.index.site for entry in loaded])
        return [self._registry.current(entry.index.site) or entry for entry in loaded]

    def _scan(
        self, query: str, say: float, federation: Federation, scan: Callable[[QueryEmbedding], T]
    ) -> asyncio.Future[T] | None:
        """The query's embedding and `scan` of it (`Federation.scan`, and its word pieces; for code, its rows too),
        begun now (`EmbeddingModel.begin_query`), when the query is to be ranked by meaning and every site searched
        ranks semantically; None ranks them all lexically.

        Scores merged across sites are always of one kind: while any searched site has no vectors attached (being
        computed, unavailable, failed) the whole answer is lexical. A just-loaded site's stored vectors get a
        short, bounded wait before this (`_with_stored_vectors`).
        """
        model = self._registry.embedding
        if model is None or say <= 0 or federation.correction is None:
            return None
        return model.begin_query(query, scan)

    @staticmethod
    async def _scanned(scanning: asyncio.Future[T] | None) -> T | None:
        """What the begun scan found; None (a lexical ranking, rather than an empty answer) if it failed."""
        if scanning is None:
            return None
        try:
            return await scanning
        except Exception as exc:  # ranking lexically beats answering nothing
            log.warning(
                "embedding or scanning the query failed (%s); this search is ranked lexically", type(exc).__name__
            )
            return None

    async def versions(self, site: str) -> VersionSet | None:
        """A configured site's versions (loading it first), None for an unversioned one; ResolutionError
        (`site_unavailable`, with why) for a `versions.json` the service refuses."""
        named = self._map.site_named(site)
        if named is None:
            raise ProviderDeclinedError("not one of this provider's sites")
        await self._registry.get(named)
        return await self._versioned.of(named)

    def _listing(self, loaded: list[LoadedSite], limit: int, hidden: frozenset[str]) -> list[SearchResult]:
        """Pages only, round-robin across sites before the limit, so a large site cannot hide the others."""
        per_site = [self._listed(entry, limit) for entry in loaded]
        interleaved = [pair for pair in chain.from_iterable(zip_longest(*per_site)) if pair is not None]
        return [self._result(loaded_site, hit, "", hidden) for loaded_site, hit in interleaved[:limit]]

    def _listed(self, loaded: LoadedSite, limit: int) -> list[tuple[LoadedSite, RankedHit]]:
        missing = self._registry.missing(loaded)
        return [(loaded, hit) for hit in _ranker(loaded).listing(limit, missing)]

    def _result(self, loaded: LoadedSite, hit: RankedHit, query: str, hidden: frozenset[str]) -> SearchResult:
        entry, key = hit.entry, loaded.index.site
        site, version, default = self._versioned.shown(key)
        return SearchResult(
            location=self._location(key, entry.location, hidden),
            title=entry.title,
            url=self._url(key, entry.location),
            site=site,
            version=version,
            default_version=default,
            preview_text=make_preview(hit.preview_source, query),
            score=round(hit.score, 4) if math.isfinite(hit.score) else 0.0,
            provider=self.name,
            page_title=entry.page_title,
            breadcrumb=list(hit.breadcrumb),
            anchor=hit.section.anchor if hit.section is not None else entry.anchor,
            page_chars=loaded.index.page_chars.get(entry.page),
            indexed_at=loaded.fetched_at,
        )

    def _location(self, site: str, location: str, hidden: frozenset[str] = frozenset()) -> str:
        """Bare for the default site; `{site}/{path}` elsewhere, a site root being the bare site name; a version of a
        versioned site other than its default behind its folder (`vdocs/2.0/guide/install/`).

        A default-site page under a top-level folder named like a configured site is the exception: bare, its
        location would be routed to that site, so it is qualified with the default site to stay fetchable; a site
        `hidden` from the caller is not one (to it the bare location reaches the page, and the name stays unsaid).
        """
        named, version, default = self._versioned.shown(site)
        if version is not None:
            site, location = named, location if default else f"{version}/{location}"
        if site != self._map.default_site:
            return qualify(site, location)
        head = location.strip("/").split("/", 1)[0]
        known = self._versioned.known(site) if version is not None and default else None
        if known is not None and known.concrete(unquote(head)):
            return qualify(site, location)  # bare, a default-version path under a folder named like a version
        routed = self._map.site_named(unquote(head)) if head else None
        return qualify(site, location) if routed is not None and routed.lower() not in hidden else location

    def _url(self, site: str, location: str) -> str:
        return f"{self._map.base_url(site)}/{location}"

    async def get(self, request: ReadRequest) -> Document:
        """The page as Markdown with front matter, and its outline (anchors from the site's index) whether or not
        the read needs it; of a versioned site, in the version its location's folder or `version` names, else the
        default (`_version_of`)."""
        try:
            return await self._get(request.location, request.version, request.hidden)
        except ResolutionError as exc:  # a version's key never leaves: the answer names its site
            raise ResolutionError(self._versioned.public(exc.resolution)) from None

    async def _get(self, location: str, version: str | None, hidden: frozenset[str] = frozenset()) -> Document:
        # A site above the caller's ceiling is, to it, not configured: its name is an ordinary first folder.
        head = location.strip().lstrip("/").split("/", 1)[0]
        named = self._map.site_named(head) if hidden and head else None
        above = named is not None and named.lower() in hidden
        pinned = None if above else await self._versioned.version_of(location, version)
        if pinned is not None:
            resolution = await self._versioned.resolve_in(location, *pinned, self._location)
        else:
            resolver = self._resolver if not hidden else self._resolver.without(hidden)

            def shown(site: str, path: str) -> str:
                return self._location(site, path, hidden)

            resolution = await resolver.resolve(location)
            if resolution.reason in (Reason.NOT_FOUND, Reason.UNKNOWN_SITE) and not resolution.candidates:
                resolution = await self._misses.moved(location, hidden) or resolution
            missed = resolution.reason in (Reason.NOT_FOUND, Reason.UNKNOWN_SITE) and not resolution.candidates
            if missed and not resolution.resolved:
                resolution = resolution.model_copy(
                    update={"suggestions": await self._misses.suggestions(location, shown, hidden)}
                )
        if not resolution.resolved:
            raise ResolutionError(resolution)
        site, path = resolution.site or "", resolution.location or ""
        if resolution.rule is not Rule.EXACT:
            log.info(
                "location of length %d resolved in site %s to %s by rule %s",
                len(location),
                site,
                path,
                resolution.rule.value,
            )
        url = self._url(site, path)
        try:
            fetched = await self._fetcher.fetch(site, path, url)
            if fetched.redirect is not None and (moved := await self._misses.stub_target(site, fetched.redirect)):
                # An index entry whose page became a stub is served as the page it points to, never "Redirecting...".
                path, url = moved, self._url(site, moved)
                resolution = resolution.model_copy(
                    update={"location": moved, "rule": Rule.REDIRECT, "detail": "the indexed page redirects here"}
                )
                fetched = await self._fetcher.fetch(site, path, url)
        except Unconvertible as exc:
            log.warning("site %s: a page could not be converted (%s)", site, exc)
            failed = resolution.model_copy(update={"reason": Reason.FETCH_FAILED, "detail": str(exc)})
            raise ResolutionError(failed) from None

        if fetched.missing:
            self._registry.page_missing(site, path)  # recorded in the background; the answer does not wait
        extra: dict[str, str] = {}
        if not fetched.markdown.strip() and fetched.origin_down:
            fetched = Fetched(await self._from_index(site, path), origin_down=True)
            extra["fallback"] = "search-index"  # the origin is down: the page is rebuilt from the cached index
        if not fetched.markdown.strip():
            detail = "neither raw Markdown nor the HTML page had content"
            raise ResolutionError(resolution.model_copy(update={"reason": Reason.FETCH_FAILED, "detail": detail}))
        retrieved = fetched.page.retrieved if fetched.page is not None else datetime.now(UTC)
        public, shown_version, default = self._versioned.shown(site)
        stamp = retrieved.strftime("%Y-%m-%dT%H:%M:%SZ")
        content = with_front_matter(fetched.markdown, {"source": url, "site": public, "retrieved": stamp, **extra})
        loaded = self._registry.current(site)
        # As fresh as a new read: the page is served as it is while its cache keeps it fresh, and the index that
        # resolved it is checked again within the check interval. A page rebuilt from the index is not kept.
        fresh = self._fetcher.pages.fresh_for(fetched.page) if fetched.page is not None and not extra else 0.0
        return Document(
            requested_location=location,
            location=self._location(site, path, hidden),
            site=public,
            version=shown_version,
            default_version=default,
            url=url,
            provider=self.name,
            content=content,
            resolution=self._versioned.public(resolution),
            last_modified=_iso(fetched.page.last_modified) if fetched.page is not None else None,
            indexed_at=loaded.fetched_at if loaded is not None else None,
            outline=reading.outline(content, loaded.index.sections(path) if loaded is not None else []),
        ).fresh_until(min(fresh, self._check_interval))

    async def _from_index(self, site: str, path: str) -> str:
        """The page rebuilt from its index entries: what can still be served while the origin is down."""
        loaded = await self._registry.get(site)
        if loaded is None:
            return ""
        parts: list[str] = []
        for entry in loaded.index.entries_of(path):
            heading = "#" if entry.anchor is None else "##"
            text = " ".join(entry.text.split())
            parts.append(f"{heading} {entry.title}\n\n{text}" if text else f"{heading} {entry.title}")
        return "\n\n".join(parts) + "\n" if parts else ""

    def health(self) -> MkDocsHealth:
        """The origin, each site's load state and how it ranks, without loading anything; a site that publishes no
        index of its own reads as what its `versions.json` said (versioned, or failed with why)."""
        sites = {
            name: site.model_copy(update={"code_languages": self._code.languages(name)})
            if isinstance(site, SiteLoaded)
            else self._versioned.health(name) or site
            for name, site in self._registry.health().items()
        }
        return MkDocsHealth.of(
            sites,
            origin=self._map.origin,
            default_site=self._map.default_site,
            semantic=self._registry.embedding is not None,
        )

    async def aclose(self) -> None:
        await self._versioned.aclose()
        await self._registry.aclose()
        self._fetcher.close()


def _iso(http_date: str | None) -> str | None:
    """An HTTP date (`Last-Modified`) as ISO 8601 UTC, or None when there is none or it does not parse."""
    if not http_date:
        return None
    try:
        return parsedate_to_datetime(http_date).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _ranker(loaded: LoadedSite) -> Ranker:
    """A searched site's ranker: `SiteRegistry.searchable` built it before any search reads it."""
    assert loaded.ranker is not None
    return loaded.ranker
