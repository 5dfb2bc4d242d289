"""The REST protocol over the composed service: search, get and health, with their OpenAPI descriptions.

No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time, and the `site`
pattern is built from the configured sites inside `install_routes`.
"""

import re
from collections.abc import Callable, Sequence
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request, Response
from fastapi.responses import JSONResponse

from shared import __version__
from shared.api import caching
from shared.api.errors import ServiceNotStarted, within
from shared.compose import Composition
from shared.error_body import ErrorBody
from shared.errors import InvalidRequestError
from shared.models import Document, SearchKind, SearchResponse, VersionListing, View
from shared.providers.base import Status
from shared.reading import MAX_OFFSET, MAX_PART_CHARS, MAX_SECTION_LENGTH, MIN_PART_CHARS, check_read
from shared.requests import ReadRequest, SearchRequest, current_caller
from shared.validation import (
    MAX_LIMIT,
    MAX_LOCATION_LENGTH,
    MAX_QUERY_LENGTH,
    MIN_LIMIT,
    QUERY_PATTERN,
    VERSION,
    check_kind,
    whole_number,
)


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "model": ErrorBody}


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _error(
        "`bad_request`: a parameter missing, repeated, out of range or refused (control characters; for `location`"
        " also `.`/`..` segments, backslashes and URLs off the origin)"
    ),
    504: _error("`timeout`: no answer within the request deadline (`RequestTimeoutSeconds`)"),
}
SEARCH_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERROR_RESPONSES,
    503: _error("`unavailable`: nothing could be searched; `providers` says why for each"),
}
GET_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERROR_RESPONSES,
    400: _error(
        "`bad_request`: a parameter missing, repeated, out of range or refused; a `section` the page does not have "
        "(with `sections`, the page's sections to choose from)"
    ),
    404: _error("`not_found` or `unknown_site`, with `resolution`"),
    409: _error("`ambiguous`, with `resolution.candidates`"),
    502: _error("`fetch_failed`: the page resolved but no content could be fetched"),
    503: _error("`site_unavailable`: the site's index could not be loaded"),
}


VERSION_PATTERN = f"^{VERSION.pattern}$"
"""What `validation.check_version` accepts, as the OpenAPI document states it."""
VERSION_DESCRIPTION = (
    "A version of a versioned site: an exact version (`2.0`) or an alias (`latest`); without it, each versioned "
    "site's default. Ignored for unversioned sites when several are searched; a bad request for one named alone."
)


def site_pattern(sites: Sequence[str]) -> str:
    """The configured sites, matched case-insensitively, as an ECMA-262 pattern (which has no flags)."""

    def insensitive(name: str) -> str:
        return "".join(f"[{c.lower()}{c.upper()}]" if c.lower() != c.upper() else re.escape(c) for c in name)

    return "^(?:" + "|".join(insensitive(site) for site in sites) + ")$"


def composition(request: Request) -> Composition:
    """The service the lifespan composed for this app."""
    composed: Composition | None = getattr(request.app.state, "composition", None)
    if composed is None:
        raise ServiceNotStarted("the service is not started: the host did not run the ASGI lifespan")
    return composed


def _single_valued(request: Request) -> None:
    """A repeated parameter is refused: taking one of the values would be a silent guess."""
    repeated = sorted(
        {key for key, _ in request.query_params.multi_items() if len(request.query_params.getlist(key)) > 1}
    )
    if repeated:
        raise InvalidRequestError(f"{', '.join(repeated)} must be given once")


HOST_PARAMETERS = frozenset({"code"})
"""Query parameters a host reads before the app does: the Functions key for clients that cannot set headers."""


def known(*accepted: str) -> Callable[[Request], None]:
    """A parameter the route does not take is refused naming those it does: silently ignored, a misspelt `limt` or
    a guessed `max_results` would answer something other than what was asked."""

    def check(request: Request) -> None:
        unknown = sorted({key for key in request.query_params if key not in accepted and key not in HOST_PARAMETERS})
        if unknown:
            named = ", ".join(f"`{name}`" for name in unknown)
            takes = f"this takes: {', '.join(accepted)}" if accepted else "this takes no parameters"
            raise InvalidRequestError(f"no parameter {named} here; {takes}")

    return check


def _whole_numbers(*names: str) -> Callable[[Request], None]:
    """Numeric parameters spelt only with ASCII digits (`validation.whole_number`): the lax parse below would read
    `+5`, ` 5` or `1_000` as numbers."""

    def check(request: Request) -> None:
        for name in names:
            value = request.query_params.get(name)
            if value is not None:
                whole_number(name, value)

    return check


Composed = Annotated[Composition, Depends(composition)]


def install_routes(app: FastAPI, sites: Sequence[str], *, gated: bool = False, restricted: bool = False) -> None:
    """The routes; `sites` (every site some provider serves) is what `site` may name, stated in the document; `gated`
    (a caller credential is checked) makes every cacheable answer `private`. `restricted` (some sites have
    audiences): answers depend on who asks, so they are `private` and vary with `Authorization`, and the document
    names no site (the service checks `site` against what the caller may read)."""
    gated = gated or restricted
    named: dict[str, Any] = {} if restricted else {"pattern": site_pattern(sites)}
    varies = {"Vary": "Authorization"} if restricted else {}

    @app.get(
        "/api/docs/search",
        response_model=SearchResponse,
        responses=SEARCH_ERRORS,
        tags=["docs"],
        dependencies=[
            Depends(_single_valued),
            Depends(known("q", "limit", "site", "version", "kind", "language")),
            Depends(_whole_numbers("limit")),
        ],
    )
    async def search(
        composed: Composed,
        response: Response,
        q: Annotated[
            str,
            Query(
                description="Search text; `*` lists pages. Line breaks are whitespace; other control characters "
                "are refused.",
                min_length=1,
                max_length=MAX_QUERY_LENGTH,
                pattern=QUERY_PATTERN,
            ),
        ],
        limit: Annotated[int, Query(ge=MIN_LIMIT, le=MAX_LIMIT, description="Results wanted (capped at 25).")] = 10,
        site: Annotated[
            str | None,
            Query(description="Search only this site (case-insensitive).", max_length=64, **named),
        ] = None,
        version: Annotated[
            str | None, Query(description=VERSION_DESCRIPTION, max_length=64, pattern=VERSION_PATTERN)
        ] = None,
        kind: Annotated[
            str | None,
            Query(
                description="`page` (the default): pages, one result each. `code`: code blocks, one result each "
                "(at most a few per page), with `code: {language, text}` and `languageGuessed`.",
                max_length=16,
                json_schema_extra={"enum": [value.value for value in SearchKind]},
            ),
        ] = None,
        language: Annotated[
            str | None,
            Query(
                description="With `kind=code`: only blocks in this language (`bash`, `yaml`, `terraform`, "
                "`powershell`, `python`, `json`, `bicep`...; `sh`, `shell`, `yml`, `hcl`, `tf`, `pwsh`, `py` and "
                "other aliases fold into those). A language no block has finds nothing.",
                max_length=32,
            ),
        ] = None,
    ) -> SearchResponse:
        """Search every configured site; the first provider with results answers."""
        asked = SearchRequest(q, limit, site, version, check_kind(kind), language, caller=current_caller())
        work = composed.service.search(asked)
        response.headers.update(varies)
        return await within(work, composed.settings.request_timeout_seconds)

    @app.get(
        "/api/docs/get",
        response_model=Document,
        responses=GET_ERRORS,
        tags=["docs"],
        dependencies=[
            Depends(_single_valued),
            Depends(known("location", "section", "offset", "maxChars", "view", "version")),
            Depends(_whole_numbers("offset", "maxChars")),
        ],
    )
    async def get(
        composed: Composed,
        request: Request,
        response: Response,
        location: Annotated[
            str,
            Query(
                description="A search result's location, a path, or a URL under the origin; empty is the default "
                "site's root page.",
                max_length=MAX_LOCATION_LENGTH,
            ),
        ],
        section: Annotated[
            str | None,
            Query(
                description="Read one section with its subsections: a search result's `anchor`, or a heading's text "
                "(case- and whitespace-insensitive). An unknown section is `400` listing the page's sections.",
                max_length=MAX_SECTION_LENGTH,
            ),
        ] = None,
        offset: Annotated[
            int | None,
            Query(
                ge=0,
                le=MAX_OFFSET,
                description="Characters into the page's Markdown (or the section's) where the part starts; pass the "
                "previous part's `nextOffset`.",
            ),
        ] = None,
        max_chars: Annotated[
            int | None,
            Query(
                alias="maxChars",
                ge=MIN_PART_CHARS,
                description=f"The most characters to return, cut at a line boundary outside code blocks; more than "
                f"{MAX_PART_CHARS:,} is taken as {MAX_PART_CHARS:,}. `nextOffset` continues.",
            ),
        ] = None,
        view: Annotated[
            View | None,
            Query(description="`outline`: the headings with their sizes (`outline`) instead of the content."),
        ] = None,
        version: Annotated[
            str | None, Query(description=VERSION_DESCRIPTION, max_length=64, pattern=VERSION_PATTERN)
        ] = None,
    ) -> Document | Response:
        """Fetch one page as Markdown with front matter; `resolution` says how the location resolved. Without
        `section`, `offset`, `maxChars` or `view` the whole page comes back. The answer carries a weak `ETag` (from
        `contentHash` and what was asked; `If-None-Match` with it is answered `304`) and a `Cache-Control` `max-age`
        no longer than the service's own freshness for the page (`private` when callers are checked)."""
        read = check_read(section=section, offset=offset, max_chars=max_chars, view=view)
        work = composed.service.read(ReadRequest(location, read, version, current_caller()))
        document = await within(work, composed.settings.request_timeout_seconds)
        headers = {
            "ETag": caching.etag(document, read),
            "Cache-Control": caching.cache_control(document, gated=gated),
            **varies,
        }
        if caching.matches(request.headers.get("if-none-match"), headers["ETag"]):
            return Response(status_code=304, headers=headers)
        response.headers.update(headers)
        return document

    @app.get(
        "/api/docs/versions",
        response_model=VersionListing,
        responses={**ERROR_RESPONSES, 503: _error("`site_unavailable`: the site's versions.json is refused")},
        tags=["docs"],
        dependencies=[Depends(_single_valued), Depends(known("site"))],
    )
    async def versions(
        composed: Composed,
        response: Response,
        site: Annotated[str, Query(description="The site (case-insensitive).", max_length=64, **named)],
    ) -> VersionListing:
        """A site's versions (mike's `versions.json`), newest first, with their aliases, titles and which is the
        default; `versioned: false` and no versions for a site that is not versioned."""
        found = await within(
            composed.service.versions(site, current_caller()), composed.settings.request_timeout_seconds
        )
        response.headers.update(varies)
        return VersionListing.of(site, found)

    @app.get(
        "/api/health",
        tags=["ops"],
        dependencies=[Depends(known())],
        responses={503: {"description": "`status: unavailable`: nothing can be searched (every provider failing)"}},
    )
    async def health(composed: Composed) -> JSONResponse:
        """`status` (`ok`, `degraded` when some sites or providers fail, `unavailable` with 503 when nothing can be
        searched), each provider's state (per-site loads, retries and ranking), the cache store and the embedding
        model; nothing is loaded to answer it."""
        report = composed.health(composed.service.hidden(current_caller()))
        body = {"version": __version__, **report.model_dump(mode="json", by_alias=True)}
        return JSONResponse(body, status_code=503 if report.status is Status.UNAVAILABLE else 200)
