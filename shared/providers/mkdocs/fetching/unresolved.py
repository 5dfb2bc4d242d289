"""A location that resolves to nothing: the page it moved to, or the pages near it.

A moved page is found through the origin's redirects (`redirect_stubs.py`), resolved with the rule `redirect`; a plain
miss is answered with suggestions from the indexes in hand (`near_pages.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from shared.fetch import OriginClient
from shared.models import Reason, Resolution, Rule
from shared.providers.mkdocs.fetching.near_pages import Suggester, suggest
from shared.providers.mkdocs.fetching.redirect_stubs import RedirectProbe
from shared.providers.mkdocs.indexes.index import SiteIndex
from shared.providers.mkdocs.indexes.resolution import Resolver, qualify
from shared.providers.mkdocs.lifecycle.sites import SiteRegistry
from shared.settings import SiteMap

log = logging.getLogger(__name__)


class Misses:
    """Where a location that resolved to nothing went, or what is near it."""

    def __init__(self, client: OriginClient, registry: SiteRegistry, resolver: Resolver, *, sites: SiteMap) -> None:
        self._sites = sites
        self._registry = registry
        self._resolver = resolver
        self._redirects = RedirectProbe(client)
        self._suggesters: dict[str, tuple[SiteIndex, Suggester]] = {}

    async def moved(self, location: str, hidden: frozenset[str] = frozenset()) -> Resolution | None:
        """The page an old path now redirects to at the origin (`redirects`), resolved with the rule `redirect`; a
        `hidden` site's name is an ordinary folder of the default site."""
        path = location.partition("#")[0].strip("/")
        head, _, rest = path.partition("/")
        named = self._sites.site_named(head)
        named = None if named is not None and named.lower() in hidden else named
        site, old = (named, rest) if named is not None and rest else (self._sites.default_site, path)
        loaded = self._registry.current(site)
        if loaded is None or not old:
            return None

        async def known(relative: str) -> str | None:
            return await self._indexed(site, relative)

        base = self._sites.base_url(site)
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

    async def stub_target(self, site: str, target: str) -> str | None:
        """The indexed path of a stub's target when it is a page of the same site the index knows, else None."""
        base = self._sites.base_url(site) + "/"
        if not target.startswith(base):
            return None
        return await self._indexed(site, target[len(base) :].split("#", 1)[0])

    async def _indexed(self, site: str, relative: str) -> str | None:
        """The indexed path of the page at `relative` in `site`, found exactly or by a variant (a shared leaf is a
        guess, never a redirect's target), or None."""
        found = await self._resolver.resolve(qualify(site, relative))
        return found.location if found.resolved and found.rule is not Rule.CANONICAL_LEAF else None

    async def suggestions(
        self, location: str, shown: Callable[[str, str], str], hidden: frozenset[str] = frozenset()
    ) -> list[str]:
        """Pages near a location that resolved to nothing, from the indexes in hand (no origin request), as `shown`
        locates them; a site's suggester is built once per index version, off the event loop (about 160 ms for
        4,500 pages)."""
        ready: list[tuple[str, Suggester]] = []
        for site in self._sites.sites:
            if site.lower() in hidden:
                continue
            loaded = self._registry.current(site)
            if loaded is None:
                continue
            kept = self._suggesters.get(site)
            if kept is None or kept[0] is not loaded.index:
                kept = self._suggesters[site] = (loaded.index, await asyncio.to_thread(Suggester.build, loaded.index))
            ready.append((site, kept[1]))
        return [shown(site, path) for site, path in suggest(location, ready)]
