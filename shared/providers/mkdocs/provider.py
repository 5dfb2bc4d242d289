"""The MkDocs provider: lexical and semantic search over every site's published index, and page fetch as Markdown.

Pages an index lists but the origin does not serve (`SiteRegistry.missing`) are left out of every answer; a `get`
that finds one (404 or 410 for both the raw Markdown and the HTML page) still answers `fetch_failed` and tells the
registry, which remembers it with the cached index for every instance.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from itertools import chain, zip_longest
from typing import TYPE_CHECKING
from urllib.parse import unquote, urljoin

from shared import memory, reading
from shared.errors import (
    NoSiteLoadedError,
    OriginError,
    ProviderDeclinedError,
    ResolutionError,
)
from shared.fetch import MAX_PAGE_BYTES, OriginClient, Response
from shared.models import (
    Document,
    Found,
    Reason,
    Resolution,
    Rule,
    SearchKind,
    SearchResult,
    SiteAnswer,
    SiteSearched,
    VersionSet,
)
from shared.preview import make_preview
from shared.providers.mkdocs import codesearch
from shared.providers.mkdocs.code import CodeBlock
from shared.providers.mkdocs.codesearch import CodeRankers
from shared.providers.mkdocs.convert import Unconvertible, convert, includes_files, looks_like_html
from shared.providers.mkdocs.federation import Federation
from shared.providers.mkdocs.health import MkDocsHealth, SiteLoaded
from shared.providers.mkdocs.index import IndexEntry, SiteIndex, page_key
from shared.providers.mkdocs.languages import CodeFences
from shared.providers.mkdocs.loading import LoadedSite
from shared.providers.mkdocs.missing import GONE
from shared.providers.mkdocs.pagecache import CachedPage, PageCache
from shared.providers.mkdocs.ranking import RankedHit, Ranker, semantic_say
from shared.providers.mkdocs.redirects import RedirectProbe, stub_target
from shared.providers.mkdocs.resolution import Resolver, qualify
from shared.providers.mkdocs.sites import Failure, SiteRegistry
from shared.providers.mkdocs.suggest import Suggester, suggest
from shared.providers.mkdocs.text import analyze_query
from shared.providers.mkdocs.versioned import Broken, VersionedSites
from shared.providers.mkdocs.versions import Versions
from shared.settings import DocumentationSettings

if TYPE_CHECKING:
    from shared.providers.mkdocs.federation import Products

log = logging.getLogger(__name__)

LISTING_QUERY = "*"
CONVERSIONS = 2
"""Pages converted at once per process; more wait their turn (each holds a core for up to seconds)."""
FEDERATIONS = 4
"""Sets of sites searched together whose federations are kept (`_federation`)."""


class ConversionError(ValueError):
    """A page that will not be converted to Markdown: answered as `fetch_failed`."""


class MkDocsProvider:
    """Search and fetch over the MkDocs sites published under one origin."""

    name = "mkdocs"
    order = 100
    supports_fetch = True

    def __init__(
        self,
        settings: DocumentationSettings,
        client: OriginClient,
        registry: SiteRegistry,
        *,
        pages: PageCache | None = None,
    ) -> None:
        self._settings = settings
        self._client = client
        self._registry = registry
        self._resolver = Resolver(settings.sites, settings.default_site, registry.index)
        self._converter = ThreadPoolExecutor(max_workers=CONVERSIONS, thread_name_prefix="convert")
        self._pages = pages if pages is not None else PageCache()
        self._suggesters: dict[str, tuple[SiteIndex, Suggester]] = {}
        self._federations: dict[tuple[str, ...], Federation] = {}
        """The last few sets of sites searched together (all of them, one named, those loaded so far)."""
        self._redirects = RedirectProbe(client)
        self._versioned = VersionedSites(settings, registry, Versions(settings, client))
        self._code = CodeRankers(
            CodeFences(settings, client, registry.store, lambda site, path: raw_markdown_url(settings, site, path))
        )
        self.sites = settings.sites

    supports_versions = True
    """Searches and reads may name a version of a versioned site (`versions.py`)."""

    supports_code = True
    """Searches may ask for code blocks (`kind=code`, with a `language`): `codesearch.py`."""

    async def search(
        self,
        query: str,
        *,
        limit: int,
        site: str | None = None,
        version: str | None = None,
        kind: SearchKind = SearchKind.PAGE,
        language: str | None = None,
    ) -> Found:
        loaded, states = await self._load_sites(site, version)
        # A provider ahead of MkDocs may have deferred the search structures: a search that reaches here builds them.
        if any(entry.ranker is None for entry in loaded):
            searchable = await asyncio.gather(*(self._registry.searchable(entry.index.site) for entry in loaded))
            loaded = [entry for entry in searchable if entry is not None]
        if kind is SearchKind.CODE:
            return Found(await self._search_code(query, loaded, limit, language), sites=states)
        if query.strip() == LISTING_QUERY:
            return Found(self._listing(loaded, limit), sites=states)
        if self._registry.embedding is not None:
            await self._registry.looked_up([entry.index.site for entry in loaded])
            loaded = [self._registry.current(entry.index.site) or entry for entry in loaded]  # a swap meanwhile
        wanted = analyze_query(query)
        floor = self._settings.search.min_score
        # All sites are scored in one pass; hits (best section, breadcrumb, preview) are built only for those returned.
        rankers = [_ranker(entry) for entry in loaded]
        missing = [self._registry.missing(entry) for entry in loaded]
        sites = tuple(entry.index.site for entry in loaded)
        federation = self._federation(sites, rankers)
        say = semantic_say(query, wanted, federation.parameters)
        # The query is embedded, and its vector scanned, on a worker thread while this one does the lexical part.
        scanning = self._scan(query, say, federation)
        try:
            lexical = federation.lexical(wanted)
        except BaseException:
            if scanning is not None:
                scanning.cancel()
            raise
        products = await self._scanned(scanning)
        found = federation.ranked(lexical, say, limit, products, missing)
        return Found(
            (
                self._result(loaded[site], scored.hit(number), query)
                for site, scored, number in found
                if scored.scores[number] >= floor
            ),
            sites=states,
        )

    async def _search_code(
        self, query: str, loaded: list[LoadedSite], limit: int, language: str | None
    ) -> list[SearchResult]:
        """The best code blocks for the query (`codesearch.py`), at most a few per page, in `language` if given."""
        if self._registry.embedding is not None:
            await self._registry.looked_up([entry.index.site for entry in loaded])
            loaded = [self._registry.current(entry.index.site) or entry for entry in loaded]
        rankers = [_ranker(entry) for entry in loaded]
        code = await self._code.of(loaded, rankers)
        missing = [self._registry.missing(entry) for entry in loaded]
        if query.strip() == LISTING_QUERY:
            found = codesearch.listed(code, language=language, limit=limit, missing=missing)
        else:
            wanted = analyze_query(query)
            federation = self._federation(tuple(entry.index.site for entry in loaded), rankers)
            say = semantic_say(query, wanted, federation.parameters)
            model = self._registry.embedding
            scanned = None
            if model is not None and say > 0 and federation.correction is not None:
                try:
                    scanned = await model.begin_query(query, codesearch.scan_both(federation))
                except Exception as exc:  # ranking lexically beats answering nothing
                    log.warning("embedding the code query failed (%s); ranked lexically", type(exc).__name__)
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
                floor=self._settings.search.min_score,
            )
        floor = self._settings.search.min_score if query.strip() != LISTING_QUERY else 0.0
        results = []
        for site, number, score in found:
            if score < floor:
                continue
            ranker, block = code[site], code[site].blocks[number]
            page = self._result(loaded[site], _block_hit(block, score), query)
            results.append(
                codesearch.result(page, block, ranker.languages[number], ranker.guessed[number], score, query)
            )
        return results

    async def code_fences_read(self, site: str) -> None:
        """Wait until the Markdown fences of a site's code blocks, being read since its first code search, are read
        (`languages.py`; tools and tests: no search waits for them)."""
        await self._code.settled(site)

    def _federation(self, sites: tuple[str, ...], rankers: list[Ranker]) -> Federation:
        """The sites' federation (`federation.py`), built again (a millisecond at 25 sites) only when one of their
        rankers or embeddings changed; kept by site names, so a swapped site's old ranker is not held."""
        key = sites
        federation = self._federations.get(key)
        if federation is None or not federation.current(rankers):
            federation = Federation.of(rankers)
            memory.heap_for(federation.array_bytes)
            self._federations.pop(key, None)
            while len(self._federations) >= FEDERATIONS:
                self._federations.pop(next(iter(self._federations)))
            self._federations[key] = federation
        return federation

    def _scan(self, query: str, say: float, federation: Federation) -> asyncio.Future[Products | None] | None:
        """The query's embedding and its scan (`Federation.scan`), begun now (`EmbeddingModel.begin_query`), when
        the query is to be ranked by meaning and every site searched ranks semantically; None ranks them all
        lexically.

        Scores merged across sites are always of one kind: while any searched site has no vectors attached (being
        computed, unavailable, failed) the whole answer is lexical. A just-loaded site's stored vectors get a
        short, bounded wait before this (`SiteRegistry.looked_up`); vectors being computed are never waited for.
        """
        model = self._registry.embedding
        if model is None or say <= 0 or federation.correction is None:
            return None
        return model.begin_query(query, federation.scan)

    @staticmethod
    async def _scanned(scanning: asyncio.Future[Products | None] | None) -> Products | None:
        """The begun scan's products; None (a lexical ranking, rather than an empty answer) if it failed."""
        if scanning is None:
            return None
        try:
            return await scanning
        except Exception as exc:  # ranking lexically beats answering nothing
            log.warning(
                "embedding or scanning the query failed (%s); this search is ranked lexically", type(exc).__name__
            )
            return None

    async def _load_sites(
        self, site: str | None, version: str | None = None
    ) -> tuple[list[LoadedSite], dict[str, SiteSearched]]:
        """The sites ready to search within the per-site wait, and how each site asked for stood. A versioned site is
        searched in the version asked for, else its default (`_in_versions`)."""
        if site is not None:
            named = self._settings.site_named(site)
            if named is None:
                raise ProviderDeclinedError("not one of this provider's sites")
            sites: tuple[str, ...] = (named,)
        else:
            sites = self._settings.sites
        wait = self._settings.search.site_wait_seconds
        ready = await self._registry.within(sites, wait)
        ready, broken = await self._versioned.search_in(sites, ready, version, alone=site is not None)
        loaded = [entry for entry in ready.values() if entry is not None]
        failures: dict[str, Failure | Broken] = {
            name: failure for name in sites if (failure := self._registry.failure(name)) is not None
        }
        for name in ready:  # a versioned site stands as its version does
            if ready[name] is not None:
                failures.pop(name, None)
        failures.update(broken)
        answers = {
            name: SiteAnswer.SEARCHED
            if ready.get(name) is not None
            else SiteAnswer.LOADING
            if name not in ready
            else SiteAnswer.UNPUBLISHED
            if name in failures and failures[name].unpublished
            else SiteAnswer.FAILED
            for name in sites
        }
        states = {
            name: SiteSearched(state=answer, indexed_at=self._indexed_at(ready, name))
            for name, answer in answers.items()
        }
        if not loaded and not all(failure.unpublished for failure in failures.values()):
            # Nothing to search because sites are failing is an outage to report, not "no match"; sites that are
            # merely not published yet have nothing to find.
            raise NoSiteLoadedError({name: failure.reason for name, failure in failures.items()})
        return loaded, states

    async def versions(self, site: str) -> VersionSet | None:
        """A configured site's versions (loading it first), None for an unversioned one; ResolutionError
        (`site_unavailable`, with why) for a `versions.json` the service refuses."""
        named = self._settings.site_named(site)
        if named is None:
            raise ProviderDeclinedError("not one of this provider's sites")
        await self._registry.get(named)
        return await self._versioned.of(named)

    def _indexed_at(self, ready: dict[str, LoadedSite | None], site: str) -> datetime | None:
        """The searched index's age, else the one this instance holds (a site whose check outlasted the wait)."""
        held = ready.get(site) or self._registry.current(site)
        return held.fetched_at if held is not None else None

    def _listing(self, loaded: list[LoadedSite], limit: int) -> list[SearchResult]:
        """Pages only, round-robin across sites before the limit, so a large site cannot hide the others."""
        per_site = [self._listed(entry, limit) for entry in loaded]
        interleaved = [pair for pair in chain.from_iterable(zip_longest(*per_site)) if pair is not None]
        return [self._result(loaded_site, hit, "") for loaded_site, hit in interleaved[:limit]]

    def _listed(self, loaded: LoadedSite, limit: int) -> list[tuple[LoadedSite, RankedHit]]:
        missing = self._registry.missing(loaded)
        return [(loaded, hit) for hit in _ranker(loaded).listing(limit, missing)]

    def _result(self, loaded: LoadedSite, hit: RankedHit, query: str) -> SearchResult:
        entry, key = hit.entry, loaded.index.site
        site, version, default = self._versioned.shown(key)
        return SearchResult(
            location=self._location(key, entry.location),
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

    def _location(self, site: str, location: str) -> str:
        """Bare for the default site; `{site}/{path}` elsewhere, a site root being the bare site name; a version of a
        versioned site other than its default behind its folder (`vdocs/2.0/guide/install/`).

        A default-site page under a top-level folder named like a configured site is the exception: bare, its
        location would be routed to that site, so it is qualified with the default site to stay fetchable.
        """
        named, version, default = self._versioned.shown(site)
        if version is not None:
            site, location = named, location if default else f"{version}/{location}"
        if site != self._settings.default_site:
            return qualify(site, location)
        head = location.strip("/").split("/", 1)[0]
        known = self._versioned.known(site) if version is not None and default else None
        if known is not None and known.concrete(unquote(head)):
            return qualify(site, location)  # bare, a default-version path under a folder named like a version
        return qualify(site, location) if head and self._settings.site_named(unquote(head)) else location

    async def _moved(self, location: str) -> Resolution | None:
        """The page an old path now redirects to at the origin (`redirects`), resolved with the rule `redirect`."""
        path = location.partition("#")[0].strip("/")
        head, _, rest = path.partition("/")
        named = self._settings.site_named(head)
        site, old = (named, rest) if named is not None and rest else (self._settings.default_site, path)
        loaded = self._registry.current(site)
        if loaded is None or not old:
            return None

        async def known(relative: str) -> str | None:
            return await self._indexed(site, relative)

        base = self._settings.base_url(site)
        target = await self._redirects.moved(base, old, loaded.fetched_at.isoformat(), known)
        if target is None:
            return None
        log.info("location of length %d resolved in site %s by rule redirect", len(location), site)
        return Resolution(
            requested_location=location,
            reason=Reason.RESOLVED,
            rule=Rule.REDIRECT,
            site=site,
            location=target,
            detail="the page moved: the origin redirects this path to it",
        )

    async def _stub_target(self, site: str, target: str) -> str | None:
        """The indexed path of a stub's target when it is a page of the same site the index knows, else None."""
        base = self._settings.base_url(site) + "/"
        if not target.startswith(base):
            return None
        return await self._indexed(site, target[len(base) :].split("#", 1)[0])

    async def _indexed(self, site: str, relative: str) -> str | None:
        """The indexed path of the page at `relative` in `site`, found exactly or by a variant (a shared leaf is a
        guess, never a redirect's target), or None."""
        found = await self._resolver.resolve(qualify(site, relative))
        return found.location if found.resolved and found.rule is not Rule.CANONICAL_LEAF else None

    async def _suggestions(self, location: str) -> list[str]:
        """Pages near a location that resolved to nothing, from the indexes in hand (no origin request); a site's
        suggester is built once per index version, off the event loop (about 160 ms for 4,500 pages)."""
        ready: list[tuple[str, Suggester]] = []
        for site in self._settings.sites:
            loaded = self._registry.current(site)
            if loaded is None:
                continue
            kept = self._suggesters.get(site)
            if kept is None or kept[0] is not loaded.index:
                kept = self._suggesters[site] = (loaded.index, await asyncio.to_thread(Suggester.build, loaded.index))
            ready.append((site, kept[1]))
        return [self._location(site, path) for site, path in suggest(location, ready)]

    def _url(self, site: str, location: str) -> str:
        return f"{self._settings.base_url(site)}/{location}"

    async def get(self, location: str, *, outline: bool = False, version: str | None = None) -> Document:
        """The page as Markdown with front matter, and its outline (anchors from the site's index); of a versioned
        site, in the version its location's folder or `version` names, else the default (`_version_of`)."""
        try:
            return await self._get(location, version)
        except ResolutionError as exc:  # a version's key never leaves: the answer names its site
            raise ResolutionError(self._versioned.public(exc.resolution)) from None

    async def _get(self, location: str, version: str | None) -> Document:
        pinned = await self._versioned.version_of(location, version)
        if pinned is not None:
            resolution = await self._versioned.resolve_in(location, *pinned, self._location)
        else:
            resolution = await self._resolver.resolve(location)
            if resolution.reason in (Reason.NOT_FOUND, Reason.UNKNOWN_SITE) and not resolution.candidates:
                resolution = await self._moved(location) or resolution
            missed = resolution.reason in (Reason.NOT_FOUND, Reason.UNKNOWN_SITE) and not resolution.candidates
            if missed and not resolution.resolved:
                resolution = resolution.model_copy(update={"suggestions": await self._suggestions(location)})
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
            fetched = await self._fetch_markdown(site, path, url)
            if fetched.redirect is not None and (moved := await self._stub_target(site, fetched.redirect)):
                # An index entry whose page became a stub is served as the page it points to, never "Redirecting...".
                path, url = moved, self._url(site, moved)
                resolution = resolution.model_copy(
                    update={"location": moved, "rule": Rule.REDIRECT, "detail": "the indexed page redirects here"}
                )
                fetched = await self._fetch_markdown(site, path, url)
        except ConversionError as exc:
            log.warning("site %s: a page could not be converted (%s)", site, exc)
            failed = resolution.model_copy(update={"reason": Reason.FETCH_FAILED, "detail": str(exc)})
            raise ResolutionError(failed) from None

        if fetched.missing:
            self._registry.page_missing(site, path)  # recorded in the background; the answer does not wait
        extra: dict[str, str] = {}
        if not fetched.markdown.strip() and fetched.origin_down:
            fetched = _Fetched(await self._from_index(site, path), origin_down=True)
            extra["fallback"] = "search-index"  # the origin is down: the page is rebuilt from the cached index
        if not fetched.markdown.strip():
            detail = "neither raw Markdown nor the HTML page had content"
            raise ResolutionError(resolution.model_copy(update={"reason": Reason.FETCH_FAILED, "detail": detail}))
        retrieved = fetched.page.retrieved if fetched.page is not None else datetime.now(UTC)
        public, shown_version, default = self._versioned.shown(site)
        content = with_front_matter(fetched.markdown, source=url, site=public, retrieved=retrieved, **extra)
        loaded = self._registry.current(site)
        # As fresh as a new read: the page is served as it is while its cache keeps it fresh, and the index that
        # resolved it is checked again within the check interval. A page rebuilt from the index is not kept.
        fresh = self._pages.fresh_for(fetched.page) if fetched.page is not None and not extra else 0.0
        return Document(
            requested_location=location,
            location=self._location(site, path),
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
        ).fresh_until(min(fresh, self._settings.cache.check_interval_seconds))

    async def _fetch_markdown(self, site: str, path: str, html_url: str) -> _Fetched:
        """Raw Markdown first, then the HTML page converted; notes whether the origin itself was unreachable, and
        whether it says the page does not exist (404 or 410 for both, or for the HTML page without raw Markdown).

        A page fetched in the last minute is answered from `PageCache` without asking the origin; one fetched
        earlier is revalidated with its validators, and a `304` answers it without converting again.
        """
        fresh = self._pages.fresh(site, path)
        if fresh is not None:
            return _Fetched(fresh.markdown, page=fresh)
        kept = self._pages.kept(site, path)
        raw_url = self._raw_url(site, path)
        raw_gone = raw_url is None
        if raw_url is not None:
            try:
                # The pattern is configuration and may point anywhere under the origin, not only under the site.
                response = await self._client.get(raw_url, scope=self._settings.origin, headers=_asking(kept, raw=True))
                if response.status == 304 and kept is not None and kept.raw:
                    return self._kept(site, path, kept)
                text = response.text()
                usable = not looks_like_html(text, response.content_type) and not includes_files(text)
                if response.status == 200 and text.strip() and usable:
                    return self._keep(site, path, text, response, raw=True)
                raw_gone = response.status in GONE
            except OriginError as exc:
                log.info("raw Markdown unavailable for site %s (%s); converting the HTML page", site, exc)
        try:
            response = await self._client.get(
                html_url, scope=self._settings.base_url(site) + "/", headers=_asking(kept, raw=False)
            )
        except OriginError as exc:
            if exc.too_large:
                raise ConversionError(
                    f"the page is larger than {MAX_PAGE_BYTES:,} bytes, the most a page is read"
                ) from None
            log.warning("page fetch failed for site %s: %s", site, exc)
            html_down = _unreachable(exc)
        else:
            if response.status == 304 and kept is not None and not kept.raw:
                return self._kept(site, path, kept)
            if response.status == 200:
                page = response.text()
                if (target := stub_target(page)) is not None:
                    return _Fetched("", redirect=urljoin(html_url, target))
                return self._keep(site, path, await self._convert(page), response, raw=False)
            html_down = response.status >= 500
            if raw_gone and response.status in GONE:
                self._pages.forget(site, path)
                return _Fetched("", missing=True)
        # The HTML page is what the site serves: when it fails with a 5xx or not at all, the origin is down for this
        # page whatever the raw Markdown said (a 404 there only means the site publishes no .md twins).
        return _Fetched("", origin_down=html_down)

    def _keep(self, site: str, path: str, markdown: str, response: Response, *, raw: bool) -> _Fetched:
        page = CachedPage(
            markdown=markdown,
            url=response.url,
            raw=raw,
            etag=response.etag,
            last_modified=response.last_modified,
            retrieved=datetime.now(UTC),
            stored=self._pages.now(),
        )
        if markdown.strip():
            self._pages.put(site, path, page)
        return _Fetched(markdown, page=page)

    def _kept(self, site: str, path: str, kept: CachedPage) -> _Fetched:
        """A kept page the origin says is unchanged (304): fresh again, retrieved now."""
        renewed = replace(kept, retrieved=datetime.now(UTC), stored=self._pages.now())
        self._pages.put(site, path, renewed)
        return _Fetched(renewed.markdown, page=renewed)

    async def _convert(self, page: str) -> str:
        """The HTML page as Markdown, checked and converted on the provider's own small pool, so the event loop
        keeps serving and a flood of big pages cannot take every worker thread; ConversionError when refused."""
        try:
            return await asyncio.get_running_loop().run_in_executor(self._converter, convert, page)
        except Unconvertible as exc:
            raise ConversionError(str(exc)) from None

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

    def _raw_url(self, site: str, path: str) -> str | None:
        return raw_markdown_url(self._settings, site, path)

    def health(self) -> MkDocsHealth:
        """The origin, each site's load state and how it ranks, without loading anything."""
        sites = {
            name: site.model_copy(update={"code_languages": self._code.languages(name)})
            if isinstance(site, SiteLoaded)
            else site
            for name, site in self._registry.health().items()
        }
        return MkDocsHealth.of(
            sites,
            origin=self._settings.origin,
            default_site=self._settings.default_site,
            semantic=self._registry.embedding is not None,
        )

    async def aclose(self) -> None:
        await self._registry.aclose()
        self._converter.shutdown(wait=False, cancel_futures=True)


def raw_markdown_url(settings: DocumentationSettings, site: str, path: str) -> str | None:
    """Where a page's raw Markdown is published (`RawMarkdownUrlPattern`); None when that is disabled."""
    pattern = settings.raw_markdown_url_pattern
    if pattern is None:
        return None
    values = {
        "base": settings.base_url(site),
        "path": page_key(path) or "index",
        "site": site,
        "origin": settings.origin,
    }
    for name, value in values.items():
        pattern = pattern.replace("{" + name + "}", value)
    return pattern


@dataclass(frozen=True, slots=True)
class _Fetched:
    markdown: str
    page: CachedPage | None = None
    """What the origin served (None for a page rebuilt from the index or not fetched at all)."""
    origin_down: bool = False
    missing: bool = False
    """The origin says the page does not exist: neither raw Markdown nor an HTML page (404 or 410)."""
    redirect: str | None = None
    """The page is a redirect stub to this URL (an index entry left behind by a move)."""


def _asking(kept: CachedPage | None, *, raw: bool) -> dict[str, str] | None:
    """Validators for a conditional request, when the page kept came from this same source."""
    return kept.validators() or None if kept is not None and kept.raw == raw else None


def _iso(http_date: str | None) -> str | None:
    """An HTTP date (`Last-Modified`) as ISO 8601 UTC, or None when there is none or it does not parse."""
    if not http_date:
        return None
    try:
        return parsedate_to_datetime(http_date).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _unreachable(exc: OriginError) -> bool:
    """A network failure or a server error, as opposed to a refusal or an over-large page."""
    return exc.unreachable or (exc.status or 0) >= 500


_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(?P<body>.*?)(?:\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def with_front_matter(markdown: str, *, source: str, site: str, retrieved: datetime, **extra: str) -> str:
    """Prefix `source`, `site` and `retrieved`, merged into the page's own front matter when it has one.

    The page's own block is recognised with LF or CRLF line endings; its own keys of the same names (and their
    continuation lines) give way to ours, so each key appears once.
    """
    ours = {"source": source, "site": site, "retrieved": retrieved.strftime("%Y-%m-%dT%H:%M:%SZ"), **extra}
    body = markdown.lstrip("\ufeff")
    theirs: list[str] = []
    match = _FRONT_MATTER.match(body)
    if match is not None:
        theirs = _without_keys(match.group("body").splitlines(), set(ours))
        body = body[match.end() :]
    header = "".join(f"{key}: {value}\n" for key, value in ours.items()) + "".join(f"{line}\n" for line in theirs)
    if match is not None:
        return f"---\n{header}---\n{body}"
    return f"---\n{header}---\n\n{body}"


def _without_keys(lines: list[str], keys: set[str]) -> list[str]:
    """Front matter lines without the top-level `keys` and the indented or list lines that continue them."""
    kept: list[str] = []
    dropping = False
    for line in lines:
        top_level = bool(line) and not line[0].isspace() and not line.startswith("- ")
        if top_level:
            dropping = line.split(":", 1)[0].strip() in keys
        if not dropping:
            kept.append(line)
    return kept


def _block_hit(block: CodeBlock, score: float) -> RankedHit:
    """A code block as a page hit at its section: what `_result` turns into a result (location, url, breadcrumb)."""
    entry = IndexEntry(block.location, block.page, block.anchor, block.title, block.page_title, "", 1.0, block.trail)
    crumb = (*entry.trail_titles, block.page_title) + ((block.title,) if block.anchor is not None else ())
    return RankedHit(entry, score, crumb, block.prose)


def _ranker(loaded: LoadedSite) -> Ranker:
    """A searched site's ranker: `SiteRegistry.searchable` built it before any search reads it."""
    assert loaded.ranker is not None
    return loaded.ranker
