"""Pages fetched and converted in the last minutes, so reading one in parts costs one origin fetch and conversion.

An agent reads a long page in several calls a few seconds apart. Each entry keeps the Markdown as fetched (raw or
converted from HTML), where it came from and the origin's validators: within `FRESH_SECONDS` it is served as it is;
after that, until `KEEP_SECONDS`, the provider revalidates it with a conditional request (a `304` reuses it without
converting again). Bounded by the characters it holds, least recently used out first. Only pages the origin served
are kept: a page rebuilt from the index while the origin is down is not.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

FRESH_SECONDS = 60.0
KEEP_SECONDS = 600.0
MAX_CHARS = 8_000_000
"""About 8 MB of ASCII Markdown across every page kept (the sample corpus's longest page is 99,329 characters)."""


@dataclass(frozen=True, slots=True)
class CachedPage:
    markdown: str
    url: str
    """The URL the Markdown came from: the raw Markdown or the HTML page."""
    raw: bool
    etag: str | None
    last_modified: str | None
    retrieved: datetime
    stored: float

    def validators(self) -> dict[str, str]:
        headers = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


class PageCache:
    """(site, page) -> the page's Markdown as last fetched; a size-bounded LRU with two ages."""

    def __init__(self, *, max_chars: int = MAX_CHARS, clock: Callable[[], float] = time.monotonic) -> None:
        self._pages: OrderedDict[tuple[str, str], CachedPage] = OrderedDict()
        self._chars = 0
        self._max_chars = max_chars
        self._clock = clock

    def now(self) -> float:
        return self._clock()

    def fresh(self, site: str, page: str) -> CachedPage | None:
        """The page when it was fetched less than `FRESH_SECONDS` ago."""
        cached = self.kept(site, page)
        return cached if cached is not None and self._clock() - cached.stored < FRESH_SECONDS else None

    def fresh_for(self, cached: CachedPage) -> float:
        """Seconds `cached` will still be served as it is (0 once it is revalidated on every read)."""
        return max(0.0, FRESH_SECONDS - (self._clock() - cached.stored))

    def kept(self, site: str, page: str) -> CachedPage | None:
        """The page when it is still worth revalidating (younger than `KEEP_SECONDS`)."""
        key = (site, page)
        cached = self._pages.get(key)
        if cached is None:
            return None
        if self._clock() - cached.stored >= KEEP_SECONDS:
            self._drop(key)
            return None
        self._pages.move_to_end(key)
        return cached

    def put(self, site: str, page: str, cached: CachedPage) -> None:
        key = (site, page)
        self._drop(key)
        if len(cached.markdown) > self._max_chars:
            return
        self._pages[key] = cached
        self._chars += len(cached.markdown)
        while self._chars > self._max_chars:
            self._drop(next(iter(self._pages)))

    def forget(self, site: str, page: str) -> None:
        self._drop((site, page))

    def _drop(self, key: tuple[str, str]) -> None:
        cached = self._pages.pop(key, None)
        if cached is not None:
            self._chars -= len(cached.markdown)

    def __len__(self) -> int:
        return len(self._pages)
