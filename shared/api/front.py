"""What a person who opens the service in a browser finds: `/` pointing at the API, and the API browser (Swagger UI)
at `/api/ui` with its script, stylesheet and icon served by the app itself, so it works without a CDN.

The assets are the files the pinned `fastapi-offline` package ships, found without importing it and served on fixed
paths under `/api/ui/` (nothing else of the package is reachable); their absence stops start-up. Like the OpenAPI
document, the browser is under `/api`, so `Inbound__Tokens` and Entra sign-in guard it; `/` says only where things
are, so it is open. Neither is in the OpenAPI document.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Awaitable, Callable
from pathlib import Path

from fastapi.openapi.docs import get_swagger_ui_html
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute

from shared.api import caching
from shared.api.gate.named import NamedRoute
from shared.api.mcp.transport import MCP_PATH

UI_PATH = "/api/ui"
HEALTH_PATH = "/api/health"
BUNDLE_PACKAGE = "fastapi_offline"
ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon.png": "image/png",
}
"""The files the page loads, by name under `/api/ui/`, with their content types."""


def front_routes(*, title: str, summary: str, openapi_url: str, gated: bool) -> list[BaseRoute]:
    """`/`, `/api/ui` and the UI's assets; `gated` (any check of callers) makes the assets' caching `private`."""
    folder = _bundled_assets()
    links = {"ui": UI_PATH, "openapi": openapi_url, "mcp": MCP_PATH, "health": HEALTH_PATH}

    async def front(request: Request) -> Response:
        return JSONResponse({"name": title, "summary": summary, "links": links})

    async def browser(request: Request) -> Response:
        root = request.scope.get("root_path", "")
        html: HTMLResponse = get_swagger_ui_html(
            openapi_url=root + openapi_url,
            title=f"{title} - API browser",
            swagger_js_url=f"{root}{UI_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{UI_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{root}{UI_PATH}/favicon.png",
            oauth2_redirect_url=None,
            swagger_ui_parameters={"validatorUrl": None},  # no badge fetched from swagger.io
        )
        return html

    routes: list[BaseRoute] = [
        NamedRoute("/", front, methods=["GET"], include_in_schema=False),
        NamedRoute(UI_PATH, browser, methods=["GET"], include_in_schema=False),
    ]
    cache_control = f"{caching.scope(gated)}, max-age={caching.DEPLOYMENT_TTL_SECONDS}"
    for name, media_type in ASSETS.items():
        routes.append(
            NamedRoute(
                f"{UI_PATH}/{name}",
                _asset(folder / name, media_type, cache_control),
                methods=["GET"],
                include_in_schema=False,
            )
        )
    return routes


def _bundled_assets() -> Path:
    spec = importlib.util.find_spec(BUNDLE_PACKAGE)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"{BUNDLE_PACKAGE} is not installed: the API browser's assets come from it")
    folder = Path(spec.origin).parent / "static"
    missing = [name for name in ASSETS if not (folder / name).is_file()]
    if missing:
        raise RuntimeError(f"{BUNDLE_PACKAGE} ships no {', '.join(missing)}: pin the version requirements.txt names")
    return folder


def _asset(path: Path, media_type: str, cache_control: str) -> Callable[[Request], Awaitable[Response]]:
    async def serve(request: Request) -> Response:
        return FileResponse(path, media_type=media_type, headers={"Cache-Control": cache_control})

    return serve
