"""Versioned sites in searches and reads: which of a site's versions a search or a location means, and how a
version's answers name their site.

Each version is loaded, cached and ranked as a site of its own under its key (`shared.site_key.SiteKey`); this module
maps between those keys and what callers see: the site, the version, whether it is the default, and a version's
folder in a location, and which sites a search reaches (`ready`). What a site's versions are is
`versions.Versions`' to find.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import unquote

from shared.deadline import remaining
from shared.errors import (
    InvalidRequestError,
    NoSiteLoadedError,
    ProviderDeclinedError,
    ResolutionError,
    VersionsError,
)
from shared.models import Reason, Resolution, SiteAnswer, SiteSearched, VersionSet
from shared.providers.mkdocs.indexes.index import SiteIndex
from shared.providers.mkdocs.indexes.resolution import Resolver, resolve_in_site
from shared.providers.mkdocs.lifecycle.health import SiteFailed, SiteHealth, SiteVersioned
from shared.providers.mkdocs.lifecycle.loading import LoadedSite
from shared.providers.mkdocs.lifecycle.sites import SiteRegistry
from shared.providers.mkdocs.lifecycle.slots import Failure
from shared.providers.mkdocs.lifecycle.versions import Versions, VersionsPending, VersionsUnavailable
from shared.settings import SiteMap
from shared.site_key import SiteKey

LOOKS_LIKE_VERSION = re.compile(r"[vV]?[0-9]")
"""A folder that reads as a version (`2.2`, `9.9`, `v3`): one a versioned site does not list is a version that does not
exist (`404` naming the versions), never a page path of the default version. A deliberate departure from the spec's
leaf rule, which would otherwise serve `site/9.9/guide/install` as the default version's `guide/install`."""
MAX_OTHER_VERSIONS = 6
"""Other versions looked in for a page a version does not have (their indexes are loaded for it)."""

Locate = Callable[[str, str], str]
"""A site's (or a version's key's) page path as a location callers see (the provider's `_location`)."""


@dataclass(frozen=True, slots=True)
class Broken:
    """A versioned site that cannot be searched for a reason of its own (its `versions.json`)."""

    reason: str
    unpublished: bool = False


class VersionedSites:
    """The provider's view of versioned sites: their versions chosen for a search or a location."""

    def __init__(self, registry: SiteRegistry, versions: Versions, *, sites: SiteMap, wait: float) -> None:
        self._sites = sites
        self._wait = wait
        """`Search__SiteWaitSeconds`: how long a search waits for a site (and its versions) to be ready."""
        self._registry = registry
        self._versions = versions

    def known(self, site: str) -> VersionSet | None:
        return self._versions.known(site)

    async def versioned(self, site: str, *, wait: float | None = None) -> VersionSet | None:
        """The site's versions when it publishes no index of its own but a `versions.json`; None otherwise. Waits
        for the lookup at most `wait` seconds (None: what is left of the request's deadline): VersionsPending past
        it, VersionsError for a refused file or an origin that failed with nothing known."""
        failure = self._registry.failure(site)
        if failure is None or not failure.unpublished:
            return None
        return await self._versions.within(site, remaining() if wait is None else wait)

    def health(self, site: str) -> SiteHealth | None:
        """What health says of a site that publishes no index of its own, from what its `versions.json` said (without
        asking): its versions, or a failure with why; None when that is not known (or it has an index)."""
        failure = self._registry.failure(site)
        if failure is None or not failure.unpublished:
            return None
        problem = self._versions.problem(site)
        if problem is not None:
            retry = failure.failed_at + timedelta(seconds=failure.retry_after)
            return SiteFailed(reason=_why(problem), unpublished=False, retry_at=retry)
        known = self._versions.known(site)
        return SiteVersioned(versions=known.names, default=known.default) if known is not None else None

    async def aclose(self) -> None:
        await self._versions.aclose()

    async def of(self, site: str) -> VersionSet | None:
        """`versioned`, a refused or unavailable `versions.json` as a ResolutionError (`site_unavailable`, with
        why)."""
        try:
            return await self.versioned(site)
        except VersionsError as exc:
            raise ResolutionError(_unavailable(site, site, exc)) from None

    def shown(self, key: str) -> tuple[str, str | None, bool | None]:
        """The site a loaded key is (a version's key names its site), its version and whether that is the default."""
        site, version = SiteKey.parse(key)
        if version is None:
            return site, None, None
        known = self._versions.known(site)
        return site, version, known is not None and known.default == version

    def public(self, resolution: Resolution) -> Resolution:
        """The resolution naming the site a version's key is of."""
        if resolution.site is None:
            return resolution
        site, version = SiteKey.parse(resolution.site)
        if version is None:
            return resolution
        detail = resolution.detail.replace(f"'{resolution.site}'", f"'{site}' (version {version})")
        return resolution.model_copy(update={"site": site, "detail": detail.replace(resolution.site, site)})

    async def ready(
        self, site: str | None, version: str | None = None, hidden: frozenset[str] = frozenset()
    ) -> tuple[list[LoadedSite], dict[str, SiteSearched]]:
        """The sites ready to search within the per-site wait, and how each site asked for stood. A versioned site is
        searched in the version asked for, else its default (`search_in`). `hidden` sites (lower case) are not
        searched, nor said."""
        if site is not None:
            named = self._sites.site_named(site)
            if named is None or named.lower() in hidden:
                raise ProviderDeclinedError("not one of this provider's sites")
            sites: tuple[str, ...] = (named,)
        else:
            sites = tuple(name for name in self._sites.sites if name.lower() not in hidden)
        wait = self._wait
        ready = await self._registry.within(sites, wait)
        ready, broken = await self.search_in(sites, ready, version, alone=site is not None)
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

    def _indexed_at(self, ready: dict[str, LoadedSite | None], site: str) -> datetime | None:
        """The searched index's age, else the one this instance holds (a site whose check outlasted the wait)."""
        held = ready.get(site) or self._registry.current(site)
        return held.fetched_at if held is not None else None

    async def search_in(
        self, sites: tuple[str, ...], ready: dict[str, LoadedSite | None], version: str | None, *, alone: bool
    ) -> tuple[dict[str, LoadedSite | None], dict[str, Failure | Broken]]:
        """`ready` with each versioned site's version in its place (`version`, else the default), loaded within the
        wait; and the versioned sites that cannot be searched, with why. A `version` no versioned site has is a bad
        request listing theirs; an unversioned site named alone with one is too."""
        chosen: dict[str, str] = {}
        broken: dict[str, Failure | Broken] = {}
        offered: dict[str, list[str]] = {}
        unknown = False  # a site not loaded yet may turn out versioned: no version is refused while one is
        for name in sites:
            if name not in ready:
                unknown = True
            if ready.get(name) is not None or name not in ready:
                continue
            try:
                versions = await self.versioned(name, wait=self._wait)
            except VersionsPending:
                ready.pop(name, None)  # still asking: the site stands as loading, and the lookup goes on
                unknown = True
                continue
            except VersionsError as exc:
                broken[name] = Broken(_why(exc))
                continue
            if versions is None:
                continue
            concrete = versions.default if version is None else versions.concrete(version)
            offered[name] = versions.names
            if concrete is not None:
                chosen[name] = versions.key(concrete)
                self._registry.add_version(chosen[name])
        if version is not None and not chosen:
            failed = "".join(f"; {name} failed ({failure.reason})" for name, failure in broken.items())
            if offered:
                listed = "; ".join(f"{name}: {', '.join(names)}" for name, names in offered.items())
                raise InvalidRequestError(
                    f"version {version!r} is not a version of {listed}{failed}", argument="version"
                )
            if alone and not broken:
                raise InvalidRequestError(f"version: site {sites[0]} is not versioned", argument="version")
            if not unknown:
                raise InvalidRequestError(
                    f"version {version!r}: no site searched is versioned{failed}", argument="version"
                )
        if not chosen:
            return ready, broken
        found = await self._registry.within(tuple(chosen.values()), self._wait)
        ready = dict(ready)
        for name, key in chosen.items():
            if key not in found:
                ready.pop(name, None)  # still loading
                continue
            ready[name] = found[key]
            if found[key] is None and (failure := self._registry.failure(key)) is not None:
                listed = f"version {SiteKey.parse(key).version} is listed in versions.json but its folder has no index"
                broken[name] = Broken(listed) if failure.unpublished else failure
        return ready, broken

    async def resolvable(self, site: str) -> SiteIndex | None:
        """What resolution reads of a site (the resolver's `load`): its own index, or a versioned site's default
        version's; None when neither loads, so the site is skipped as the spec skips a site whose index cannot load
        (a refused or failing `versions.json` is remembered with its backoff, `versions.Versions`)."""
        index = await self._registry.index(site)
        if index is not None or SiteKey.parse(site).version is not None:
            return index
        try:
            versions = await self.versioned(site)
        except VersionsError:
            return None
        if versions is None:
            return None
        key = versions.key(versions.default)
        self._registry.add_version(key)
        return await self._registry.index(key)

    async def version_of(self, location: str, version: str | None) -> tuple[str, str, VersionSet] | None:
        """(the version's key, the location within it, the site's versions) when the location is on a versioned
        site, whose version is the location's first folder when that names one (or an alias), else `version`, else
        the default; None for a plain site (a bad request when `version` is given for one), and for a bare location
        without a version folder or `version`, which resolves across the sites as any bare path does."""
        path = location.strip().lstrip("/")
        head, _, rest = path.partition("/")
        named = self._sites.site_named(unquote(head)) if head else None
        site, remainder = (named, rest) if named is not None else (self._sites.default_site, path)
        versions = None
        if await self._registry.index(site) is None:
            try:
                versions = await self.versioned(site)
            except VersionsError as exc:
                if named is None and version is None:
                    return None  # a bare path: the default site is skipped and the others tried
                raise ResolutionError(_unavailable(location, site, exc)) from None
        if versions is None:
            if version is not None:
                raise InvalidRequestError(f"version: site {site} is not versioned", argument="version")
            return None
        first, _, after = remainder.partition("/")
        folder = versions.concrete(unquote(first)) if first else None
        if folder is None and first and await self._no_such_version(versions, unquote(first), bare=named is None):
            raise ResolutionError(self._missing_version(location, site, versions))
        if named is None and folder is None and version is None:
            return None
        asked = versions.concrete(version) if version is not None else None
        if version is not None and asked is None:
            listed = ", ".join(versions.names)
            raise InvalidRequestError(f"version {version!r} is not a version of {site}: {listed}", argument="version")
        if folder is not None and asked is not None and folder != asked:
            raise InvalidRequestError(
                f"version: the location names {folder}, version names {asked}", argument="version"
            )
        chosen = folder or asked or versions.default
        key = versions.key(chosen)
        self._registry.add_version(key)
        return key, (after if folder is not None else remainder), versions

    async def _no_such_version(self, versions: VersionSet, folder: str, *, bare: bool = False) -> bool:
        """Whether `folder`, the first one after a versioned site's name, reads as a version the site does not have:
        it starts with a digit, or `v` and a digit, after Unicode normalisation (`9.9` full-width, `v3`), is no listed
        version or alias as written, and the default version has no page folder of that name (`2fa/`). In a `bare`
        location (the versioned site is the default), no other site's loaded index has such a folder either."""
        if not LOOKS_LIKE_VERSION.match(unicodedata.normalize("NFKC", folder)):
            return False
        if bare and any(
            (held := self._registry.current(other)) is not None and folder.lower() in held.index.top_dirs
            for other in self._sites.sites
            if other != versions.site
        ):
            return False
        key = versions.key(versions.default)
        self._registry.add_version(key)
        default = await self._registry.index(key)
        if default is None:
            return True
        return not any(page.path == folder or page.path.startswith(folder + "/") for page in default.pages)

    @staticmethod
    def _missing_version(location: str, site: str, versions: VersionSet) -> Resolution:
        listed = ", ".join(
            f"{version.name} ({', '.join(version.aliases)})" if version.aliases else version.name
            for version in versions.versions
        )
        detail = f"site {site} has no such version; its versions: {listed} (default {versions.default})"
        return Resolution(requested_location=location, reason=Reason.NOT_FOUND, site=site, detail=detail)

    async def resolve_in(self, location: str, key: str, path: str, versions: VersionSet, locate: Locate) -> Resolution:
        """`path` resolved in one version of a versioned site; when that version has no such page, the versions
        that have it are named and their locations suggested."""
        resolution = await Resolver((key,), key, self._registry.index).resolve(path)
        resolution = resolution.model_copy(update={"requested_location": location})
        if resolution.reason is not Reason.NOT_FOUND:
            return resolution
        asked = SiteKey.parse(key).version
        having: list[tuple[str, str]] = []
        for other in [version for version in versions.visible() if version.name != asked][:MAX_OTHER_VERSIONS]:
            other_key = versions.key(other.name)
            self._registry.add_version(other_key)
            index = await self._registry.index(other_key)
            found = resolve_in_site(index, path) if index is not None else None
            if found is not None and found.reason is Reason.RESOLVED and found.page is not None:
                having.append((other.name, locate(other_key, found.page.path)))
        if not having:
            return resolution
        named = ", ".join(name for name, _ in having)
        detail = f"version {asked} of {versions.site} has no such page; these versions have it: {named}"
        return resolution.model_copy(update={"detail": detail, "suggestions": [where for _, where in having][:5]})


def _why(exc: VersionsError) -> str:
    """What a versions.json problem reads as: a refused file says so; a failed or pending lookup says why already."""
    return str(exc) if isinstance(exc, VersionsPending | VersionsUnavailable) else f"versions.json refused: {exc}"


def _unavailable(location: str, site: str, exc: VersionsError) -> Resolution:
    detail = f"the site's {_why(exc)}"
    return Resolution(requested_location=location, reason=Reason.SITE_UNAVAILABLE, site=site, detail=detail)
