"""The REST protocol over the composed service: search, get and health, with their OpenAPI descriptions."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse

from shared import __version__
from shared.api.errors import ServiceNotStarted, within
from shared.compose import Composition
from shared.errors import InvalidRequestError
from shared.models import Document, SearchResponse
from shared.validation import MAX_LIMIT, MAX_LOCATION_LENGTH, MAX_QUERY_LENGTH, MIN_LIMIT

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"description": "Bad input: `{error: {code: bad_request, message}}`"},
    504: {"description": "`timeout`: no answer within the request deadline (`RequestTimeoutSeconds`)"},
}
GET_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERROR_RESPONSES,
    404: {"description": "`not_found` or `unknown_site`, with `resolution`"},
    409: {"description": "`ambiguous`, with `resolution.candidates`"},
    502: {"description": "`fetch_failed`: the page resolved but no content could be fetched"},
    503: {"description": "`site_unavailable`: the site's index could not be loaded"},
    504: {"description": "`timeout`: no answer within the request deadline (`RequestTimeoutSeconds`)"},
}


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


Composed = Annotated[Composition, Depends(composition)]


def install_routes(app: FastAPI) -> None:
    @app.get(
        "/api/docs/search",
        response_model=SearchResponse,
        responses=ERROR_RESPONSES,
        tags=["docs"],
        dependencies=[Depends(_single_valued)],
    )
    async def search(
        composed: Composed,
        q: Annotated[
            str | None, Query(description="Search text; `*` lists pages.", max_length=MAX_QUERY_LENGTH)
        ] = None,
        limit: Annotated[int, Query(ge=MIN_LIMIT, le=MAX_LIMIT, description="Results wanted (capped at 25).")] = 10,
        site: Annotated[str | None, Query(description="Search only this configured site.", max_length=200)] = None,
    ) -> SearchResponse:
        """Search every configured site; the first provider with results answers."""
        work = composed.service.search(q or "", limit=limit, site=site or None)
        return await within(work, composed.settings.request_timeout_seconds)

    @app.get(
        "/api/docs/get",
        response_model=Document,
        responses=GET_ERRORS,
        tags=["docs"],
        dependencies=[Depends(_single_valued)],
    )
    async def get(
        composed: Composed,
        location: Annotated[
            str | None,
            Query(
                description="A search result's location, a path, or a URL under the origin.",
                max_length=MAX_LOCATION_LENGTH,
            ),
        ] = None,
    ) -> Document:
        """Fetch one whole page as Markdown with front matter; `resolution` says how the location resolved."""
        return await within(composed.service.get(location), composed.settings.request_timeout_seconds)

    @app.get(
        "/api/health",
        tags=["ops"],
        responses={503: {"description": "`status: unavailable`: nothing can be searched (every provider failing)"}},
    )
    async def health(composed: Composed) -> JSONResponse:
        """`status` (`ok`, `degraded` when some sites or providers fail, `unavailable` with 503 when nothing can be
        searched), each provider's state (per-site loads, retries and ranking), the cache store and the embedding
        model; nothing is loaded to answer it."""
        report = {"version": __version__, **composed.health()}
        return JSONResponse(report, status_code=503 if report["status"] == "unavailable" else 200)
