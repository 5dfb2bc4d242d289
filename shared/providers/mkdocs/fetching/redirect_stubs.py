"""Moved pages found through the origin's own redirect stubs: a location that resolves to nothing may be a page's
old path, and the documentation build leaves a stub there pointing at the page as it is now.

The build turns each moved page's `moved_from` front matter, and `troubleshoot/<ID>/` for each troubleshooting
article, into HTML stubs (`mkdocs-redirects`: a `meta http-equiv="refresh"` to the new page). The search index does
not list them, so resolution alone misses; this asks the origin, once per old path per index version and instance,
for the HTML page at that path. A stub (or an HTTP redirect) to a page of the same site that the index knows
resolves the location with the rule `redirect`. What is never followed: a target off the site or the origin (the
fetch scope), more than `MAX_HOPS` stubs in a row. Misses are chosen by whoever sends them, so probes have a
process-wide concurrency and rate cap; past it, the location is the plain miss it was.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from urllib.parse import urljoin, urlsplit

from shared.errors import OriginError
from shared.fetch import OriginClient

log = logging.getLogger(__name__)

STUB_CHARS = 16 * 1024
"""Only the start of a page is read for its refresh: a stub is a few hundred bytes."""
MAX_HOPS = 3
REMEMBERED = 4096
"""Old paths remembered (found or not), least recently used out first."""
CONCURRENT = 4
RATE_PER_SECOND = 10.0
BURST = 20.0
_REFRESH = re.compile(r"""<meta[^<>]*http-equiv=["']?refresh["']?[^<>]*content=["'][^"'<>]*?url=([^"'<>\s]+)""", re.I)


def stub_target(html: str) -> str | None:
    """Where a redirect stub points (its `meta http-equiv="refresh"` URL), or None for any other page."""
    found = _REFRESH.search(html[:STUB_CHARS])
    return found.group(1).strip() if found else None


Known = Callable[[str], Awaitable[str | None]]
"""The page the site's index knows at a path relative to the site (its indexed path), or None."""


class RedirectProbe:
    """Asks the origin where old paths went, remembering each answer per index version, within a rate cap."""

    def __init__(self, client: OriginClient, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._clock = clock
        self._remembered: OrderedDict[tuple[str, str, str], str | None] = OrderedDict()
        self._slots = asyncio.Semaphore(CONCURRENT)
        self._tokens, self._refilled = BURST, clock()

    async def moved(self, base: str, path: str, version: str, known: Known) -> str | None:
        """The indexed path of the page `path` (under the site at `base`) redirects to, or None."""
        key = (base, version, path.lower())
        if key in self._remembered:
            self._remembered.move_to_end(key)
            return self._remembered[key]
        if self._slots.locked() or not self._take():
            return None  # over the cap: the plain miss, and nothing remembered
        async with self._slots:
            found = await self._follow(base, path, known)
        self._remembered[key] = found
        while len(self._remembered) > REMEMBERED:
            self._remembered.popitem(last=False)
        return found

    def _take(self) -> bool:
        now = self._clock()
        self._tokens = min(BURST, self._tokens + (now - self._refilled) * RATE_PER_SECOND)
        self._refilled = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True

    async def _follow(self, base: str, path: str, known: Known) -> str | None:
        url = f"{base}/{path.strip('/')}/"
        for _ in range(MAX_HOPS):
            try:
                response = await self._client.get(url, scope=base + "/")
            except OriginError:
                return None
            if response.status != 200:
                return None
            target = response.url if response.url != url else stub_target(response.text())
            if target is None:
                return None
            url = urljoin(url, target).split("#", 1)[0].split("?", 1)[0]
            if not url.startswith(base + "/") or urlsplit(url).netloc != urlsplit(base).netloc:
                return None  # off the site or the origin: never followed
            page = await known(url[len(base) + 1 :])
            if page is not None:
                return page
        return None
