"""A page's Markdown from the origin: its raw Markdown when the site publishes it, else its HTML page converted.

Both the serving provider and the warm-up's page check find raw Markdown where `RawMarkdownUrlPattern` says
(`raw_markdown_url`); the provider reads through `PageFetcher`, which keeps pages in `PageCache` and converts on a
small pool of its own.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from urllib.parse import urljoin

from shared.errors import OriginError, Unconvertible
from shared.fetch import MAX_PAGE_BYTES, OriginClient, Response
from shared.providers.mkdocs.fetching.convert import convert, includes_files, looks_like_html
from shared.providers.mkdocs.fetching.pagecache import CachedPage, PageCache
from shared.providers.mkdocs.fetching.redirect_stubs import stub_target
from shared.providers.mkdocs.fetching.unserved import GONE
from shared.providers.mkdocs.indexes.index import page_key
from shared.settings import SiteMap

log = logging.getLogger(__name__)

CONVERSIONS = 2
"""Pages converted at once per process; more wait their turn (each holds a core for up to seconds)."""


class PageFetcher:
    """Pages fetched from the origin as Markdown, kept a few minutes and revalidated after that."""

    def __init__(
        self, client: OriginClient, pages: PageCache | None = None, *, sites: SiteMap, raw_pattern: str | None
    ) -> None:
        self._sites = sites
        self._raw_pattern = raw_pattern
        """`RawMarkdownUrlPattern`: where a page's raw Markdown is (None: the HTML page alone)."""
        self._client = client
        self.pages = pages if pages is not None else PageCache()
        self._converter = ThreadPoolExecutor(max_workers=CONVERSIONS, thread_name_prefix="convert")

    async def fetch(self, site: str, path: str, html_url: str) -> Fetched:
        """Raw Markdown first, then the HTML page converted; notes whether the origin itself was unreachable, and
        whether it says the page does not exist (404 or 410 for both, or for the HTML page without raw Markdown).

        A page fetched in the last minute is answered from `PageCache` without asking the origin; one fetched
        earlier is revalidated with its validators, and a `304` answers it without converting again.
        """
        fresh = self.pages.fresh(site, path)
        if fresh is not None:
            return Fetched(fresh.markdown, page=fresh)
        kept = self.pages.kept(site, path)
        raw_url = raw_markdown_url(self._sites, self._raw_pattern, site, path)
        raw_gone = raw_url is None
        if raw_url is not None:
            try:
                # The pattern is configuration and may point anywhere under the origin, not only under the site.
                response = await self._client.get(raw_url, scope=self._sites.origin, headers=_asking(kept, raw=True))
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
                html_url, scope=self._sites.base_url(site) + "/", headers=_asking(kept, raw=False)
            )
        except OriginError as exc:
            if exc.too_large:
                raise Unconvertible(
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
                    return Fetched("", redirect=urljoin(html_url, target))
                return self._keep(site, path, await self._convert(page), response, raw=False)
            html_down = response.status >= 500
            if raw_gone and response.status in GONE:
                self.pages.forget(site, path)
                return Fetched("", missing=True)
        # The HTML page is what the site serves: when it fails with a 5xx or not at all, the origin is down for this
        # page whatever the raw Markdown said (a 404 there only means the site publishes no .md twins).
        return Fetched("", origin_down=html_down)

    def _keep(self, site: str, path: str, markdown: str, response: Response, *, raw: bool) -> Fetched:
        page = CachedPage(
            markdown=markdown,
            url=response.url,
            raw=raw,
            etag=response.etag,
            last_modified=response.last_modified,
            retrieved=datetime.now(UTC),
            stored=self.pages.now(),
        )
        if markdown.strip():
            self.pages.put(site, path, page)
        return Fetched(markdown, page=page)

    def _kept(self, site: str, path: str, kept: CachedPage) -> Fetched:
        """A kept page the origin says is unchanged (304): fresh again, retrieved now."""
        renewed = replace(kept, retrieved=datetime.now(UTC), stored=self.pages.now())
        self.pages.put(site, path, renewed)
        return Fetched(renewed.markdown, page=renewed)

    async def _convert(self, page: str) -> str:
        """The HTML page as Markdown, checked and converted on the provider's own small pool, so the event loop
        keeps serving and a flood of big pages cannot take every worker thread; Unconvertible when refused."""
        try:
            return await asyncio.get_running_loop().run_in_executor(self._converter, convert, page)
        except Unconvertible as exc:
            raise Unconvertible(str(exc)) from None

    def close(self) -> None:
        self._converter.shutdown(wait=False, cancel_futures=True)


def raw_markdown_url(sites: SiteMap, pattern: str | None, site: str, path: str) -> str | None:
    """Where a page's raw Markdown is published (`pattern`: `RawMarkdownUrlPattern`); None when that is disabled."""
    if pattern is None:
        return None
    values = {
        "base": sites.base_url(site),
        "path": page_key(path) or "index",
        "site": site,
        "origin": sites.origin,
    }
    for name, value in values.items():
        pattern = pattern.replace("{" + name + "}", value)
    return pattern


@dataclass(frozen=True, slots=True)
class Fetched:
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


def _unreachable(exc: OriginError) -> bool:
    """A network failure or a server error, as opposed to a refusal or an over-large page."""
    return exc.unreachable or (exc.status or 0) >= 500
