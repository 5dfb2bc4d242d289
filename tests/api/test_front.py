"""What a browser finds: `/` points at the API, and the API browser at `/api/ui` loads everything from the app itself
(no CDN: it works on a machine without internet), guarded like the OpenAPI document it shows."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from html.parser import HTMLParser

import httpx
import pytest
from asgi_lifespan import LifespanManager

from shared.api import create_app
from shared.settings import load_settings
from tests.support.mcp_wire import INITIALIZE, MCP_HEADERS

SETTINGS = {"Forge__Documentation__Origin": "http://127.0.0.1:9", "Forge__Documentation__Search__Semantic": "false"}
TOKEN = {"Forge__Documentation__Inbound__Tokens": "read-token"}
CONTENT_TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png", ".json": "application/json"}


class _Referenced(HTMLParser):
    """Every URL a `script`, `link` or `img` tag of the page loads."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        wanted = {"script": "src", "link": "href", "img": "src"}.get(tag)
        self.urls += [value for name, value in attrs if name == wanted and value]


@asynccontextmanager
async def _client(settings: dict[str, str]) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(load_settings(settings))
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://127.0.0.1") as http,
    ):
        yield http


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with _client(SETTINGS) as client:
        yield client


async def test_the_api_browser_loads_every_asset_from_the_app_and_names_no_other_host(http: httpx.AsyncClient) -> None:
    page = await http.get("/api/ui")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert not re.search(r"(?i)\b(https?:)?//[a-z0-9]", page.text), "the page names another host"
    parser = _Referenced()
    parser.feed(page.text)
    spec = re.search(r"url: '([^']+)'", page.text)
    assert spec is not None and spec.group(1) == "/api/openapi.json"
    referenced = [*parser.urls, spec.group(1)]
    assert len(parser.urls) == 3 and all(url.startswith("/api/") for url in referenced)

    for url in referenced:
        asset = await http.get(url)
        assert asset.status_code == 200, url
        assert asset.headers["content-type"].startswith(CONTENT_TYPES[url[url.rindex(".") :]]), url
        assert asset.content
    script = await http.get(parser.urls[-1])
    assert "SwaggerUIBundle" in script.text and script.headers["cache-control"] == "public, max-age=3600"


async def test_only_the_pages_assets_are_served_and_none_is_in_the_openapi_document(http: httpx.AsyncClient) -> None:
    others = ["/api/ui/redoc.standalone.js", "/api/ui/", "/docs/oauth2-redirect", "/docs"]
    assert [(await http.get(path)).status_code for path in others] == [404] * len(others)
    paths = (await http.get("/api/openapi.json")).json()["paths"]
    assert not [path for path in paths if path == "/" or path.startswith("/api/ui")]


async def test_the_root_points_at_the_api_and_every_link_answers(http: httpx.AsyncClient) -> None:
    root = await http.get("/")

    assert root.status_code == 200 and root.headers["content-type"] == "application/json"
    assert root.json() == {
        "name": "Documentation retrieval",
        "summary": "Search documentation sites and get whole pages as Markdown.",
        "links": {"ui": "/api/ui", "openapi": "/api/openapi.json", "mcp": "/api/mcp", "health": "/api/health"},
    }
    links = root.json()["links"]
    for name in ("ui", "openapi", "health"):
        assert (await http.get(links[name])).status_code == 200, name
    assert (await http.post(links["mcp"], json=INITIALIZE, headers=MCP_HEADERS)).status_code == 200


async def test_with_inbound_tokens_the_browser_is_guarded_like_the_api_and_the_root_stays_open() -> None:
    async with _client({**SETTINGS, **TOKEN}) as http:
        reader = {"Authorization": "Bearer read-token"}
        root = await http.get("/")
        refused = [(await http.get(path)).status_code for path in ("/api/ui", "/api/ui/swagger-ui.css")]
        page = await http.get("/api/ui", headers=reader)
        style = await http.get("/api/ui/swagger-ui.css", headers=reader)

    assert root.status_code == 200 and refused == [401, 401]
    assert page.status_code == 200 and style.status_code == 200
    assert style.headers["cache-control"] == "private, max-age=3600"  # gated: no shared cache hands it on
