"""The provider chain: input checks once, ordered providers, first non-empty answer wins, attribution, the cap.

The rules, including those the spec leaves open:

- Input is checked once, before any provider runs: the query, `limit` (1..50, then capped at 25), the location
  (same-origin; no dot segment in any spelling an index entry is refused for, `shared.paths`), and `site`, which
  must name a site at least one provider declares (matched case-insensitively). Those checks'
  `InvalidRequestError` and the caller's cancellation are the only things that stop the chain. A provider's
  refusal of a `version` falls through; it is the answer (`400`) only when every provider asked refused it.
- Providers run in ascending `order`. A search with `site` asks only the providers that declare that site.
- A provider that raises anything else (it is unconfigured, unreachable, out of its scope, or broken) is logged
  with its name and the error's type, never its message, and the chain falls through to the next one.
- Search: the first non-empty list wins, truncated to the effective limit. An empty answer means "no match"
  only when some provider actually searched: when every provider that tried failed, nothing could be searched,
  and the chain raises `ServiceUnavailableError` with each provider's failure (503), never an empty 200.
- Get: only providers whose `capabilities` say they fetch; the first document wins. When none serves the page,
  the reported resolution is the most specific miss any provider gave: `ambiguous`, then `fetch_failed`, then
  `site_unavailable`, then `unknown_site`, then `not_found` (the earliest provider's on a tie), so a remote miss
  never hides a local ambiguity. No miss at all is `timeout` when a provider ran out of time, else `not_found`
  saying that no provider could answer.
- A caller's ceiling (`hidden`, from `SiteAudiences` and its audiences): a site above it is, to that caller, not
  configured: providers are told (`hidden` on the request), and whatever of it comes back is dropped here.
- Signals (`shared.telemetry`): a span per provider call; `smithy.docs.searches` and `smithy.docs.fetches` count
  answers (`ok`, `empty`, `not_found`), never invalid input, cancellation or a search nothing could run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeGuard

from pydantic import SerializeAsAny, SerializerFunctionWrapHandler, model_serializer

from shared import reading, safe_content, telemetry
from shared.deadline import remaining
from shared.errors import (
    InvalidRequestError,
    ProviderDeclinedError,
    ProviderError,
    RequestTimeoutError,
    ResolutionError,
    ServiceUnavailableError,
)
from shared.models import (
    MAX_RESULTS,
    NO_PROVIDER,
    Document,
    Reason,
    Resolution,
    SearchKind,
    SearchResponse,
    SearchResult,
    SiteSearched,
    VersionSet,
)
from shared.paths import escapes
from shared.providers.base import DocumentationProvider, ProviderHealth, Report
from shared.requests import ANONYMOUS, Caller, ReadRequest, SearchRequest
from shared.site_key import SEPARATOR
from shared.telemetry import FETCH_PROVIDER, SEARCH_PROVIDER, attribute, query_shape
from shared.usage import NO_USAGE, UsageSink
from shared.validation import (
    check_kind,
    check_language,
    check_limit,
    check_location,
    check_query,
    check_version,
    nearest,
)

log = logging.getLogger(__name__)

LISTING = "*"
MAX_LISTED = 20_000
"""The most pages `pages` lists of one site."""

MISS_PRECEDENCE = (
    Reason.AMBIGUOUS,
    Reason.FETCH_FAILED,
    Reason.SITE_UNAVAILABLE,
    Reason.UNKNOWN_SITE,
    Reason.NOT_FOUND,
)
"""Most specific first: which provider's miss `get` reports when every fetch provider missed."""


class InChain(Report):
    """A provider's health as the chain reports it: its place and whether it fetches, then its own fields."""

    order: int
    fetch: bool
    health: SerializeAsAny[ProviderHealth]

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        fields: dict[str, Any] = handler(self)
        return {"order": fields["order"], "fetch": fields["fetch"], **fields["health"]}


class DocumentationService:
    """Runs search and get through the providers in ascending `order`."""

    def __init__(
        self,
        providers: Sequence[DocumentationProvider],
        *,
        origin: str,
        usage: UsageSink = NO_USAGE,
        audiences: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        self.providers = sorted(providers, key=lambda provider: provider.order)
        self.origin = origin
        self.usage = usage
        self.restricted = {site.lower(): frozenset(held) for site, held in (audiences or {}).items()}
        """Each restricted site (lower case) and the audiences that may read it (`SiteAudiences`)."""
        """Told of every search that answered and every page read (`shared.usage`): usage insights, when on."""
        declared: dict[str, str] = {}
        for provider in self.providers:
            for site in provider.sites:
                declared.setdefault(site.lower(), site)
        self.sites = tuple(declared.values())
        """Every site some provider serves, in the first declaring provider's spelling."""

    async def search(self, request: SearchRequest) -> SearchResponse:
        """The first non-empty answer of the providers asked, checked once here: `version` only of providers that
        know versions, `kind=code` only of those that search code, `site` only of those that declare it."""
        kind = check_kind(request.kind)
        hidden = self.hidden(request.caller)
        checked = replace(
            request,
            query=check_query(request.query),
            limit=min(check_limit(request.limit), MAX_RESULTS),
            site=self.check_site(request.site, hidden),
            hidden=hidden,
            version=check_version(request.version),
            kind=kind,
            language=check_language(request.language, kind),
        )
        with telemetry.operation("search"):
            response, floored = await self._search(checked)
        _told(self.usage.searched, checked, response, floored=floored)
        return response

    async def _search(self, request: SearchRequest) -> tuple[SearchResponse, bool]:
        """The answer, and whether the relevance floor emptied it (some provider's results all fell below it)."""
        searched, floored, failures, timed_out = False, False, {}, set()
        refused: InvalidRequestError | None = None
        sites: dict[str, SiteSearched] | None = None
        code = request.kind is SearchKind.CODE
        for provider in self.providers:
            scoped = _declared(provider, request.site)
            able = provider.capabilities
            if (request.site is not None and scoped is None) or (request.version is not None and not able.versions):
                continue
            if code and not able.code:
                continue
            try:
                with telemetry.provider_call("search", provider.name) as call:
                    async with asyncio.timeout(_share(self.providers, provider)):
                        found = await provider.search(request.scoped(scoped))
                    call.answered(len(found.results))
            except asyncio.CancelledError:
                raise
            except ProviderDeclinedError:
                continue
            except Exception as exc:
                if _named_version(exc):
                    refused = refused or exc  # the next provider may have it
                    continue
                log.warning("search provider %s failed (%s); trying the next", provider.name, type(exc).__name__)
                failures[provider.name] = _details(exc)
                if _timed_out(exc):
                    timed_out.add(provider.name)
                continue
            searched = True
            sites, results, floored = found.sites or sites, found.results, floored or found.floored
            if request.hidden:  # whatever a provider gave of a site above the caller's ceiling never leaves
                results = [result for result in results if not _above(result.site, request.hidden)]
                sites = {name: state for name, state in (sites or {}).items() if not _above(name, request.hidden)}
            if results:
                attribute(SEARCH_PROVIDER, provider.name)
                telemetry.searched(provider.name, results[: request.limit])
                answer = SearchResponse(
                    query=request.query, provider=provider.name, results=results[: request.limit], sites=sites
                )
                return answer, False
        attribute(SEARCH_PROVIDER, NO_PROVIDER)
        if refused is not None and not searched:
            raise refused  # every provider that could answer refused the version: the caller's to correct
        if not searched and failures:
            if timed_out == set(failures):
                raise RequestTimeoutError
            raise ServiceUnavailableError(failures)
        telemetry.searched(NO_PROVIDER, [])
        shape = query_shape(request.query)
        log.info("search matched nothing (query length %d, %d terms)", shape["length"], shape["terms"])
        return SearchResponse(query=request.query, provider=NO_PROVIDER, results=[], sites=sites), floored

    async def get(self, request: ReadRequest) -> Document:
        """The whole page at `request.location` as the first fetch-capable provider serves it (with its outline when
        the read needs it: a provider that cannot give one is a miss); raises ResolutionError otherwise."""
        path = check_location(request.location, self.origin)
        if escapes(path):  # `..;`, fullwidth or leader dots: what an origin that normalises paths would resolve
            raise InvalidRequestError(
                "location must not contain '.' or '..' segments in any spelling ('..;', fullwidth or leader dots, "
                "percent-encoded), backslashes or a scheme",
                argument="location",
            )
        hidden = self.hidden(request.caller)
        checked = replace(request, location=path, version=check_version(request.version), hidden=hidden)
        with telemetry.operation("get"):
            return await self._get(checked, request.location or "")

    async def select(self, request: ReadRequest) -> reading.Selection:
        """The page, or the section, `request.read` names: the one place a read is composed, for every interface
        (REST and the command line shape it with `reading.shaped`, MCP fits it to its budget). A read, for usage
        insights (`get` alone is not: the chain's own look-ups, such as feedback's, are nobody's read)."""
        document = await self.get(request)
        _told(self.usage.read, request, document)
        return reading.select(safe_content.cleaned(document) if request.cleaned else document, request.read)

    async def read(self, request: ReadRequest) -> Document:
        """The page as `request.read` asks: whole, a section, a part or its outline (`shared.reading`)."""
        return reading.shaped(await self.select(request), request.read)

    async def pages(self, site: str) -> list[str] | None:
        """Every page location of a site (its default version); None when no provider lists it. For the insights
        report's pages no search returned."""
        listed = await self.listing(site)
        return [result.location for result in listed] if listed is not None else None

    async def listing(
        self, site: str, version: str | None = None, caller: Caller = ANONYMOUS
    ) -> list[SearchResult] | None:
        """Every page of a site (`version`, else its default), as the first fetching provider that lists it gives
        them (the listing query `*`, uncapped); None when none lists it. A site above the caller's ceiling is refused
        as an unknown one."""
        named = self.check_site(site, self.hidden(caller)) or site
        asked = check_version(version)
        for provider in self.providers:
            scoped = _declared(provider, named)
            if scoped is None or not provider.capabilities.fetch or (asked and not provider.capabilities.versions):
                continue
            try:
                found = await provider.search(SearchRequest(LISTING, limit=MAX_LISTED, site=scoped, version=asked))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if _named_version(exc):
                    raise
                log.warning("listing provider %s failed (%s); trying the next", provider.name, type(exc).__name__)
                continue
            if found.results:
                return found.results
        return None

    async def versions(self, site: str, caller: Caller = ANONYMOUS) -> VersionSet | None:
        """A site's versions (None: not versioned), from the first provider that knows versions and serves it; a
        site above the caller's ceiling is refused as an unknown one."""
        named = self.check_site(site, self.hidden(caller)) or site
        for provider in self.providers:
            scoped = _declared(provider, named)
            if scoped is None or not provider.capabilities.versions:
                continue
            try:
                return await provider.versions(scoped)
            except ProviderDeclinedError:
                continue
        return None

    async def _get(self, request: ReadRequest, requested: str) -> Document:
        misses: list[Resolution] = []
        refused: InvalidRequestError | None = None
        timed_out = False
        fetching = [provider for provider in self.providers if provider.capabilities.fetch]
        for provider in fetching:
            if request.version is not None and not provider.capabilities.versions:
                continue
            try:
                with telemetry.provider_call("get", provider.name) as call:
                    async with asyncio.timeout(_share(fetching, provider)):
                        document = await provider.get(request)
                    call.served()
            except asyncio.CancelledError:
                raise
            except ResolutionError as exc:
                ceilings = provider.capabilities.ceilings
                misses.append(exc.resolution if ceilings else _within_ceiling(exc.resolution, request.hidden))
                continue
            except ProviderDeclinedError:
                continue
            except Exception as exc:
                if _named_version(exc):
                    refused = refused or exc
                    continue
                log.warning("fetch provider %s failed (%s); trying the next", provider.name, type(exc).__name__)
                timed_out = timed_out or _timed_out(exc)
                continue
            if _above(document.site, request.hidden):  # as a page of a site that is not configured
                misses.append(_within_ceiling(document.resolution, request.hidden))
                continue
            attribute(FETCH_PROVIDER, provider.name)
            telemetry.fetched(provider.name, bool(document.content.strip()))
            resolution = document.resolution.model_copy(update={"requested_location": requested})
            return document.model_copy(update={"requested_location": requested, "resolution": resolution})
        attribute(FETCH_PROVIDER, NO_PROVIDER)
        telemetry.fetched(NO_PROVIDER, False)
        if refused is not None and not misses:
            raise refused
        if not misses and timed_out:
            raise RequestTimeoutError
        resolution = most_specific(misses) or Resolution(
            requested_location=requested, reason=Reason.NOT_FOUND, detail="no provider could answer for this location"
        )
        offered = [suggested for miss in misses for suggested in miss.suggestions]
        if offered and not resolution.suggestions:  # the reported miss is another provider's: keep what one offered
            resolution = resolution.model_copy(update={"suggestions": list(dict.fromkeys(offered))[:5]})
        resolution = resolution.model_copy(update={"requested_location": requested})
        log.info("fetch found nothing: %s (location length %d)", resolution.reason.value, len(requested))
        raise ResolutionError(resolution)

    def health(self) -> dict[str, InChain]:
        """Each provider's own report, in chain order, without doing I/O."""
        return {
            provider.name: InChain(order=provider.order, fetch=provider.capabilities.fetch, health=provider.health())
            for provider in self.providers
        }

    def check_site(self, site: str | None, hidden: frozenset[str] = frozenset()) -> str | None:
        """`site` in the spelling of the first provider that declares it; InvalidRequestError naming the sites
        (nearest first) when none does. A `hidden` site is not one, and is never named."""
        if site is None:
            return None
        lowered = site.strip().lower()
        visible = [known for known in self.sites if known.lower() not in hidden]
        for known in visible:
            if known.lower() == lowered:
                return known
        raise InvalidRequestError(f"site must be one of: {', '.join(by_nearness(site, visible))}")

    def hidden(self, caller: Caller) -> frozenset[str]:
        """The restricted sites (lower case) `caller` holds none of the audiences of: above its ceiling. A caller
        inside the process (no audiences given) reads every site."""
        if caller.audiences is None or not self.restricted:
            return frozenset()
        return frozenset(site for site, held in self.restricted.items() if not held & caller.audiences)

    def sites_for(self, caller: Caller) -> tuple[str, ...]:
        """The sites `caller` may read, in the service's order."""
        hidden = self.hidden(caller)
        return tuple(site for site in self.sites if site.lower() not in hidden)


def _above(site: str | None, hidden: frozenset[str]) -> bool:
    """Whether `site` (a public name, or a version's `site@version` key) is above the caller's ceiling."""
    return site is not None and site.split(SEPARATOR, 1)[0].lower() in hidden


def _within_ceiling(resolution: Resolution, hidden: frozenset[str]) -> Resolution:
    """A miss as a caller who may not read the `hidden` sites sees it: their candidates and suggestions left out,
    and a miss in one of them said as a miss in a site that is not configured."""
    if not hidden:
        return resolution

    def open_(location: str) -> bool:
        return not _above(location.strip("/").split("/", 1)[0], hidden)

    kept = [location for location in resolution.candidates if open_(location)]
    if _above(resolution.site, hidden) or (resolution.reason is Reason.AMBIGUOUS and not kept):
        return Resolution(
            requested_location=resolution.requested_location,
            reason=Reason.NOT_FOUND,
            detail="no configured site has a matching page",
        )
    return resolution.model_copy(
        update={
            "candidates": kept,
            "suggestions": [location for location in resolution.suggestions if open_(location)],
        }
    )


def _told(tell: Callable[..., None], *args: Any, **kwargs: Any) -> None:
    """The usage sink told of an answer; whatever it raises is logged by type and never reaches the caller."""
    try:
        tell(*args, **kwargs)
    except Exception as exc:
        log.warning("usage sink failed (%s); the answer stands", type(exc).__name__)


def _details(exc: Exception) -> dict[str, str]:
    """What the unavailable answer says of a provider's failure: its own details, or just the kind."""
    if isinstance(exc, ProviderError):
        return exc.details
    return {"error": "timeout"} if isinstance(exc, TimeoutError) else {"error": "failed"}


def _timed_out(exc: Exception) -> bool:
    """The provider ran out of time: its share of the deadline, or its own call's bound."""
    return isinstance(exc, TimeoutError) or (isinstance(exc, ProviderError) and exc.timed_out)


def _share(providers: Sequence[DocumentationProvider], provider: DocumentationProvider) -> float | None:
    """Seconds this provider may take: what is left of the deadline, split evenly with those after it."""
    left = remaining()
    if left is None:
        return None
    after = len(providers) - providers.index(provider)
    return left / max(1, after)


def _named_version(exc: Exception) -> TypeGuard[InvalidRequestError]:
    """A provider's refusal of the version the caller named: the next provider is asked (it may have the version),
    and the refusal is the answer (`400`) when no provider searched, or missed the page, with it."""
    return isinstance(exc, InvalidRequestError) and exc.argument == "version"


def _declared(provider: DocumentationProvider, site: str | None) -> str | None:
    """The provider's own spelling of `site`, or None when it does not serve it (or no site was asked for)."""
    if site is None:
        return None
    return next((own for own in provider.sites if own.lower() == site.lower()), None)


def by_nearness(name: str, names: Sequence[str]) -> list[str]:
    """`names` with those nearest `name` first (a misspelt or shortened site name), the rest in their order."""
    close = nearest(name, names)
    return [*close, *(known for known in names if known not in close)]


def most_specific(misses: Sequence[Resolution]) -> Resolution | None:
    """The miss to report: the most specific reason (`MISS_PRECEDENCE`), the earliest provider's on a tie."""
    ranked = [miss for miss in misses if miss.reason in MISS_PRECEDENCE]
    if not ranked:
        return misses[0] if misses else None
    return min(ranked, key=lambda miss: MISS_PRECEDENCE.index(miss.reason))
