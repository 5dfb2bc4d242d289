"""Sites published per release with mike: found from the origin, never configured.

A site is versioned when its origin serves `{site}/versions.json` (what mike writes: `[{"version", "title",
"aliases", "properties"?}]`, newest first). Each version is a folder of its own (`{site}/{version}/`), a whole
MkDocs (or Zensical) site with its own search index: the provider indexes, caches, ranks and fetches each as a site
of its own under the key `{site}@{version}` (`shared.site_key.SiteKey`), so everything a site has a version has too.

The default version, what a search or a location without one means: the `VersionDefaults` setting for the site,
else the target of the site root's redirect (`mike set-default` writes `{site}/index.html` as a redirect to the
default's folder, which may be an alias), else the version aliased `latest`, else the first listed. Hidden versions
(`properties.hidden`) are never the default unless pinned. A `versions.json` that is not a list of versions with
unique, folder-safe names and aliases fails that site alone with the reason, and nothing is requested off the
site's folder.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urljoin

from shared.errors import OriginError, VersionsError
from shared.fetch import OriginClient
from shared.models import Version, VersionSet
from shared.paths import escapes
from shared.providers.mkdocs.fetching.redirect_stubs import stub_target
from shared.providers.mkdocs.lifecycle.layouts import Layouts
from shared.settings import SiteMap
from shared.validation import VERSION

log = logging.getLogger(__name__)

VERSIONS_PATH = "/versions.json"
MAX_BYTES = 262_144
MAX_VERSIONS = 200
REMEMBER_SECONDS = 300.0
"""How long an instance keeps what a site's `versions.json` said (or that it has none) before asking again."""
RETRY_SECONDS = 30.0
"""How soon a `versions.json` the origin failed to answer (or answered too slowly) is asked for again, doubled for
each failure in a row up to `REMEMBER_SECONDS`; what was known is kept meanwhile."""
LATEST = "latest"


def parse_versions(site: str, payload: bytes) -> list[Version]:
    """The versions `versions.json` lists; VersionsError naming what is wrong."""
    try:
        document = json.loads(payload)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise VersionsError("versions.json is not JSON") from None
    if not isinstance(document, list) or not document:
        raise VersionsError("versions.json is not a non-empty list of versions")
    if len(document) > MAX_VERSIONS:
        raise VersionsError(f"versions.json lists more than {MAX_VERSIONS} versions")
    versions: list[Version] = []
    seen: set[str] = set()
    for raw in document:
        if not isinstance(raw, dict):
            raise VersionsError("a versions.json entry is not an object")
        name = raw.get("version")
        if not isinstance(name, str) or not _safe(name):
            raise VersionsError("a version's name is not a folder name (letters, digits, '.', '_', '+', '-')")
        aliases = raw.get("aliases") or []
        if not isinstance(aliases, list) or not all(isinstance(alias, str) and _safe(alias) for alias in aliases):
            raise VersionsError(f"version {name}: aliases are not a list of folder names")
        for label in (name, *aliases):
            if label in seen:
                raise VersionsError(f"versions.json names {label!r} twice")
            seen.add(label)
        properties = raw.get("properties")
        hidden = isinstance(properties, dict) and properties.get("hidden") is True
        title = raw.get("title") if isinstance(raw.get("title"), str) else name
        versions.append(Version(name, str(title)[:200], tuple(aliases), hidden))
    return versions


def _safe(name: str) -> bool:
    return VERSION.fullmatch(name) is not None and name not in (".", "..") and not escapes(name)


@dataclass(frozen=True, slots=True)
class Known:
    """What an instance knows of one site's `versions.json`, and until when."""

    until: float
    versions: VersionSet | None = None
    """The versions (None: not versioned, or not known yet)."""
    refused: str | None = None
    """Why the file the origin served is refused (a bad file)."""
    failed: str | None = None
    """Why the origin did not answer the last time it was asked (a timeout included); the versions known before, if
    any, are kept meanwhile."""
    failures: int = 0
    """Failed asks in a row: the next is `RETRY_SECONDS` doubled for each, at most `REMEMBER_SECONDS`."""

    def error(self) -> VersionsError | None:
        """Why the versions cannot be used: the refused file, else an origin that failed with nothing known."""
        if self.refused is not None:
            return VersionsError(self.refused)
        if self.versions is None and self.failed is not None:
            return VersionsUnavailable(f"versions.json unavailable: {self.failed}")
        return None


class VersionsUnavailable(VersionsError):
    """The origin did not answer `versions.json` (a timeout included) and nothing is known from before."""


class VersionsPending(VersionsError):
    """Nothing is known of the site's versions yet and the lookup outlasted the wait (it goes on in the background)."""


class Versions:
    """What each site's `versions.json` says, asked of the origin and remembered for `REMEMBER_SECONDS`.

    A lookup runs in the background, one per site however many requests ask, outside any request's deadline (the
    origin client's own timeout bounds it); a request waits for it at most as long as it is told (`within`), so a
    slow or dripping `versions.json` costs a search its per-site wait, never more. A failure, a timeout included, is
    remembered and asked again after a backoff, like a failed index load."""

    def __init__(
        self,
        client: OriginClient,
        *,
        sites: SiteMap,
        defaults: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        layouts: Layouts | None = None,
    ) -> None:
        self._sites = sites
        self._defaults = dict(defaults or {})
        """`VersionDefaults`: a site's default version (or alias), over what its origin says."""
        self._client = client
        self._clock = clock
        self._layouts = layouts
        """With it, a site without a `versions.json` is asked again only when its turn comes (`layouts.py`)."""
        self._known: dict[str, Known] = {}
        self._asking: dict[str, asyncio.Task[None]] = {}

    def known(self, site: str) -> VersionSet | None:
        """What was last found for the site, without asking."""
        found = self._known.get(site)
        return found.versions if found is not None else None

    def problem(self, site: str) -> VersionsError | None:
        """Why the site's versions cannot be used now (a refused file, an origin that did not answer), without
        asking; None when they can, or nothing is known yet."""
        found = self._known.get(site)
        return found.error() if found is not None else None

    async def of(self, site: str) -> VersionSet | None:
        """The site's versions, waiting for the lookup as long as it takes (the warm-up, the command line)."""
        return await self.within(site, None)

    async def within(self, site: str, seconds: float | None) -> VersionSet | None:
        """The site's versions, or None when it publishes no `versions.json`; VersionsError when it publishes a bad
        one, VersionsUnavailable when the origin fails with nothing known from before; VersionsPending when nothing
        is known yet after `seconds` (None: no bound)."""
        found = self._known.get(site)
        if found is None or self._clock() >= found.until or self._turn_came(site, found):
            task = self._asking.get(site)
            if task is None or task.done():
                # An empty context: no request's deadline cuts the lookup short, so its outcome is always recorded.
                task = asyncio.get_running_loop().create_task(
                    self._ask(site), name=f"versions {site}", context=contextvars.Context()
                )
                self._asking[site] = task
            await asyncio.wait([task], timeout=seconds)
            if not task.done() and found is None:
                raise VersionsPending(f"versions.json has not answered within {seconds:g} s; asked again meanwhile")
            found = self._known.get(site, found)
        assert found is not None
        if (error := found.error()) is not None:
            raise error
        return found.versions

    def _turn_came(self, site: str, found: Known) -> bool:
        """A site that had no `versions.json` is asked again when the check of its layouts says so."""
        unversioned = found.versions is None and found.refused is None and found.failed is None
        return unversioned and self._layouts is not None and self._layouts.versions_due(site)

    async def aclose(self) -> None:
        for task in self._asking.values():
            task.cancel()
        await asyncio.gather(*self._asking.values(), return_exceptions=True)

    async def _ask(self, site: str) -> None:
        self._known[site] = await self._asked(site, self._known.get(site))

    async def _asked(self, site: str, known: Known | None) -> Known:
        """What the origin says now; a failure keeps what was known, asked again after a backoff."""
        try:
            found = await self._fetch(site)
            # No versions.json: asked again in the site's turn (`layouts`), else after the usual while.
            remember = math.inf if found is None and self._layouts is not None else REMEMBER_SECONDS
            return Known(self._clock() + remember, found)
        except VersionsError as exc:
            return Known(self._clock() + REMEMBER_SECONDS, refused=str(exc))
        except Exception as exc:  # the origin (or anything under it) failed: one site's versions, never the service
            reason = str(exc) if isinstance(exc, OriginError) else f"{type(exc).__name__}"
            log.warning("site %s: versions.json unavailable (%s)", site, reason)
            failures = (known.failures if known is not None else 0) + 1
            delay = min(RETRY_SECONDS * 2 ** (failures - 1), REMEMBER_SECONDS) * random.uniform(1.0, 1.2)  # noqa: S311
            kept = known.versions if known is not None else None
            refused = known.refused if known is not None else None
            return Known(self._clock() + delay, kept, refused, failed=reason, failures=failures)

    async def _fetch(self, site: str) -> VersionSet | None:
        base = self._sites.base_url(site)
        response = await self._client.get(base + VERSIONS_PATH, scope=base + "/", max_bytes=MAX_BYTES)
        if response.status in (404, 410):
            return None
        if response.status != 200:
            raise OriginError(f"versions.json answered HTTP {response.status}", status=response.status)
        versions = parse_versions(site, response.body)
        pinned = self._defaults.get(site)
        default = await self._default(site, versions, pinned)
        return VersionSet(site, tuple(versions), default)

    async def _default(self, site: str, versions: list[Version], pinned: str | None) -> str:
        listed = VersionSet(site, tuple(versions), versions[0].name)
        if pinned is not None:
            chosen = listed.concrete(pinned)
            if chosen is None:
                raise VersionsError(f"VersionDefaults names {pinned!r}, which versions.json does not list")
            return chosen
        target = await self._root_target(site)
        if target is not None and (chosen := listed.concrete(target)) is not None:
            return chosen
        visible = [version for version in versions if not version.hidden] or versions
        for version in visible:
            if LATEST in version.aliases:
                return version.name
        return visible[0].name

    async def _root_target(self, site: str) -> str | None:
        """The first folder the site root's redirect points to (mike's `set-default`), if it is one."""
        base = self._sites.base_url(site)
        try:
            response = await self._client.get(base + "/", scope=base + "/", max_bytes=MAX_BYTES)
        except OriginError:
            return None
        if response.status != 200:
            return None
        target = stub_target(response.text())
        if target is None:
            return None
        resolved = urljoin(base + "/", target)
        if not resolved.startswith(base + "/"):
            return None
        return resolved[len(base) + 1 :].split("/", 1)[0] or None
