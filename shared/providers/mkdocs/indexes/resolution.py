"""Resolve a requested location to one canonical page: site selection and the rules within a site.

A resolution names a site and location only when it resolved (the spec: "the resolved site and location when
it resolved"); `not_found` always carries the rule `none`, with any pages sharing the leaf as candidates.

The module does no I/O of its own: the caller passes `load`, which returns a site's index or None when that
site cannot load. Reason and rule strings are the spec's vocabulary (`shared.models.Reason`, `Rule`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from shared.models import Reason, Resolution, Rule
from shared.providers.mkdocs.indexes.index import Page, SiteIndex, page_key
from shared.site_key import SiteKey
from shared.validation import nearest

Loader = Callable[[str], Awaitable[SiteIndex | None]]
_SUFFIXES = (".md", ".html", ".htm")


@dataclass(frozen=True, slots=True)
class SiteOutcome:
    """What the rules found in one site: resolved (one page), ambiguous (candidates) or a miss."""

    reason: Reason
    rule: Rule
    page: Page | None = None
    candidates: tuple[Page, ...] = ()


_MISS = SiteOutcome(Reason.NOT_FOUND, Rule.NONE)


def normalize(location: str) -> str:
    """Trim surrounding whitespace and slashes and drop any #fragment."""
    return location.strip().partition("#")[0].strip("/")


def strip_variant(path: str) -> str:
    """The variant form: no .md/.html/.htm suffix, no trailing /index, a bare index is the site root."""
    lowered = path.lower()
    for suffix in _SUFFIXES:
        if lowered.endswith(suffix):
            path = path[: -len(suffix)]
            break
    path = path.rstrip("/")
    if path.lower() == "index":
        return ""
    if path.lower().endswith("/index"):
        path = path[: -len("/index")]
    return path


def resolve_in_site(index: SiteIndex, path: str) -> SiteOutcome:
    """Apply `exact`, `variant` and `canonical-leaf` in order, case-insensitively."""
    twins = index.by_key.get(path.lower(), [])
    exact = _exact(twins, path)
    if exact is not None:
        return SiteOutcome(Reason.RESOLVED, Rule.EXACT, exact)
    if twins:  # pages differing only in case (`Dup/`, `dup/`), none spelled as asked: a guess would be wrong
        return SiteOutcome(Reason.AMBIGUOUS, Rule.EXACT, candidates=tuple(twins))
    variant = strip_variant(path)
    if variant != path:
        matches = index.by_key.get(variant.lower(), [])
        chosen = _exact(matches, variant)
        if chosen is not None:
            return SiteOutcome(Reason.RESOLVED, Rule.VARIANT, chosen)
        if matches:
            return SiteOutcome(Reason.AMBIGUOUS, Rule.VARIANT, candidates=tuple(matches))
    leaf = page_key(variant).rsplit("/", 1)[-1].lower()
    sharing = index.by_leaf.get(leaf, []) if leaf else []
    if len(sharing) == 1:
        return SiteOutcome(Reason.RESOLVED, Rule.CANONICAL_LEAF, sharing[0])
    if sharing:  # a guess would be worse than a miss: not_found, with the pages offered as candidates
        return SiteOutcome(Reason.NOT_FOUND, Rule.NONE, candidates=tuple(sharing))
    return _MISS


def _exact(matches: Sequence[Page], path: str) -> Page | None:
    """The one page matching case-insensitively, or among case twins the one spelled exactly as asked."""
    if len(matches) == 1:
        return matches[0]
    return next((page for page in matches if page.lookup == path), None)


class Resolver:
    """Site selection over the configured sites, in the spec's five steps."""

    def __init__(self, sites: Sequence[str], default_site: str, load: Loader) -> None:
        self._sites = tuple(sites)
        self._default = default_site
        self._load = load

    def without(self, hidden: frozenset[str]) -> Resolver:
        """This resolver as if the `hidden` sites (lower case) were not configured."""
        return Resolver([site for site in self._sites if site.lower() not in hidden], self._default, self._load)

    async def resolve(self, requested: str) -> Resolution:
        path = normalize(requested)
        head, _, rest = path.partition("/")
        named = next((site for site in self._sites if site.lower() == head.lower()), None) if head else None
        if named is not None:
            return await self._in_named_site(requested, named, rest, path)
        default_index = await self._load(self._default)
        shared_leaf: list[str] = []
        if default_index is not None:
            outcome = resolve_in_site(default_index, path)
            if outcome.reason is not Reason.NOT_FOUND:
                return _to_resolution(requested, default_index.site, outcome)
            shared_leaf.extend(qualify(_public(default_index.site), page.path) for page in outcome.candidates)
        others = [site for site in self._sites if site != self._default]
        indexes = await asyncio.gather(*(self._load(site) for site in others))
        loaded = [index for index in indexes if index is not None]
        found: list[tuple[str, SiteOutcome]] = []
        for index in loaded:
            outcome = resolve_in_site(index, path)
            if outcome.reason is Reason.NOT_FOUND:
                shared_leaf.extend(qualify(_public(index.site), page.path) for page in outcome.candidates)
            else:
                found.append((index.site, outcome))
        if len(found) == 1:
            return _to_resolution(requested, *found[0])
        if found:
            return _across_sites(requested, found)
        everything = [index for index in (default_index, *loaded) if index is not None]
        return _no_match(
            requested,
            path,
            everything,
            default_loaded=default_index is not None,
            shared_leaf=shared_leaf,
            sites=self._sites,
        )

    async def _in_named_site(self, requested: str, site: str, rest: str, path: str) -> Resolution:
        index = await self._load(site)
        if index is None:
            return Resolution(
                requested_location=requested,
                reason=Reason.SITE_UNAVAILABLE,
                detail=f"the search index of site '{site}' could not be loaded",
            )
        outcome = resolve_in_site(index, rest)
        if outcome.reason is Reason.NOT_FOUND:
            retry = resolve_in_site(index, path)
            if retry.reason is not Reason.NOT_FOUND:
                outcome = retry
        return _to_resolution(requested, index.site, outcome)


def qualify(site: str, location: str) -> str:
    """A location in site/location form; a site root is the bare site name."""
    return f"{site}/{location}" if location.strip("/") or location.startswith("#") else site


def _public(key: str) -> str:
    """The site a loaded index is of: a versioned site's default version is loaded under its version's key
    (`vdocs@2.1`), and its locations are the site's own (`vdocs/guide/install`)."""
    return SiteKey.parse(key).site


def _to_resolution(requested: str, site: str, outcome: SiteOutcome) -> Resolution:
    """`site` is the loaded key (a version's, for a versioned site), which a resolution carries until the provider
    names the site it is of; candidates name the site."""
    candidates = [qualify(_public(site), page.path) for page in outcome.candidates]
    if outcome.page is not None:
        page = outcome.page
        detail = f"resolved to '{page.path or '/'}' in site '{site}' by the {outcome.rule.value} rule"
        return Resolution(
            requested_location=requested,
            reason=Reason.RESOLVED,
            rule=outcome.rule,
            site=site,
            location=page.path,
            detail=detail,
        )
    if outcome.reason is Reason.AMBIGUOUS:
        detail = f"{len(candidates)} pages in site '{site}' match; pass one of the candidates"
    elif candidates:
        detail = f"the leaf is shared by {len(candidates)} pages in site '{site}'; pass one of the candidates"
    else:
        detail = f"no page in site '{site}' matches"
    return Resolution(
        requested_location=requested, reason=outcome.reason, rule=outcome.rule, candidates=candidates, detail=detail
    )


def _across_sites(requested: str, found: Sequence[tuple[str, SiteOutcome]]) -> Resolution:
    candidates: list[str] = []
    for site, outcome in found:
        pages = (outcome.page,) if outcome.page is not None else outcome.candidates
        candidates.extend(qualify(_public(site), page.path) for page in pages)
    rules = {outcome.rule for _, outcome in found}
    return Resolution(
        requested_location=requested,
        reason=Reason.AMBIGUOUS,
        rule=rules.pop() if len(rules) == 1 else Rule.NONE,
        candidates=candidates,
        detail=f"{len(found)} sites have a matching page; pass a site-qualified candidate",
    )


def _no_match(
    requested: str,
    path: str,
    loaded: Sequence[SiteIndex],
    *,
    default_loaded: bool,
    shared_leaf: list[str],
    sites: Sequence[str] = (),
) -> Resolution:
    """Step 5; a leaf shared by several pages is still not_found, but the pages are offered as candidates; an
    unknown site names the configured sites nearest to it first."""
    head = path.split("/", 1)[0]
    if "/" in path and "-" in head and all(head.lower() not in index.top_dirs for index in loaded):
        close = nearest(head, sites)
        reason, detail = (
            Reason.UNKNOWN_SITE,
            f"'{head}' is not a configured site" + (f"; the nearest: {', '.join(close)}" if close else ""),
        )
    elif not default_loaded:
        reason, detail = Reason.SITE_UNAVAILABLE, "the default site could not be loaded, so the path was not checked"
    elif shared_leaf:
        reason = Reason.NOT_FOUND
        detail = f"the final segment matches {len(shared_leaf)} pages, so none was picked; pass one of the candidates"
        return Resolution(requested_location=requested, reason=reason, candidates=shared_leaf, detail=detail)
    else:
        reason, detail = Reason.NOT_FOUND, "no configured site has a matching page"
    return Resolution(requested_location=requested, reason=reason, detail=detail)
