"""Sites published per release with mike: found from the origin, never configured.

A site is versioned when its origin serves `{site}/versions.json` (what mike writes: `[{"version", "title",
"aliases", "properties"?}]`, newest first). Each version is a folder of its own (`{site}/{version}/`), a whole
MkDocs (or Zensical) site with its own search index: the provider indexes, caches, ranks and fetches each as a site
of its own under the key `{site}@{version}` (`version_key`), so everything a site has a version has too.

The default version, what a search or a location without one means: the `VersionDefaults` setting for the site,
else the target of the site root's redirect (`mike set-default` writes `{site}/index.html` as a redirect to the
default's folder, which may be an alias), else the version aliased `latest`, else the first listed. Hidden versions
(`properties.hidden`) are never the default unless pinned. A `versions.json` that is not a list of versions with
unique, folder-safe names and aliases fails that site alone with the reason, and nothing is requested off the
site's folder.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from urllib.parse import urljoin

from shared.errors import OriginError, VersionsError
from shared.fetch import OriginClient
from shared.models import Version, VersionSet
from shared.paths import escapes
from shared.providers.mkdocs.redirects import stub_target
from shared.settings import DocumentationSettings
from shared.validation import VERSION

log = logging.getLogger(__name__)

VERSIONS_PATH = "/versions.json"
MAX_BYTES = 262_144
MAX_VERSIONS = 200
REMEMBER_SECONDS = 300.0
"""How long an instance keeps what a site's `versions.json` said (or that it has none) before asking again."""
RETRY_SECONDS = 30.0
"""How soon a `versions.json` the origin failed to answer is asked for again (what was known is kept meanwhile)."""
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


class Versions:
    """What each site's `versions.json` says, asked of the origin and remembered for `REMEMBER_SECONDS`."""

    def __init__(
        self, settings: DocumentationSettings, client: OriginClient, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._settings = settings
        self._client = client
        self._clock = clock
        self._known: dict[str, tuple[float, VersionSet | None, str | None]] = {}
        """Per site: when to ask again, its versions (None: not versioned) and why they are refused (None: not)."""
        self._asking: dict[str, asyncio.Lock] = {}

    def known(self, site: str) -> VersionSet | None:
        """What was last found for the site, without asking."""
        found = self._known.get(site)
        return found[1] if found is not None else None

    async def of(self, site: str) -> VersionSet | None:
        """The site's versions, or None when it publishes no `versions.json`; VersionsError when it publishes a bad
        one (remembered too, so a bad file costs one request per `REMEMBER_SECONDS`). One request per site at a
        time, however many searches ask; an origin that fails keeps what was known for `RETRY_SECONDS`."""
        found = self._known.get(site)
        if found is None or self._clock() >= found[0]:
            async with self._asking.setdefault(site, asyncio.Lock()):
                found = self._known.get(site)
                if found is None or self._clock() >= found[0]:
                    found = self._known[site] = await self._asked(site, found)
        if found[2] is not None:
            raise VersionsError(found[2])
        return found[1]

    async def _asked(
        self, site: str, known: tuple[float, VersionSet | None, str | None] | None
    ) -> tuple[float, VersionSet | None, str | None]:
        """(when to ask again, the versions, why they are refused) from the origin now."""
        try:
            return self._clock() + REMEMBER_SECONDS, await self._fetch(site), None
        except VersionsError as exc:
            return self._clock() + REMEMBER_SECONDS, None, str(exc)
        except OriginError as exc:  # not known now: what was known is kept, asked again soon
            log.info("site %s: versions.json unavailable (%s)", site, exc)
            kept = (known[1], known[2]) if known is not None else (None, None)
            return self._clock() + RETRY_SECONDS, *kept

    async def _fetch(self, site: str) -> VersionSet | None:
        base = self._settings.base_url(site)
        response = await self._client.get(base + VERSIONS_PATH, scope=base + "/", max_bytes=MAX_BYTES)
        if response.status in (404, 410):
            return None
        if response.status != 200:
            raise OriginError(f"versions.json answered HTTP {response.status}", status=response.status)
        versions = parse_versions(site, response.body)
        pinned = self._settings.version_defaults.get(site)
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
        base = self._settings.base_url(site)
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
