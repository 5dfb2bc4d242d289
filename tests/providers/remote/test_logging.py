"""Nothing a caller sent through the remote provider is ever logged: every record at DEBUG, from this project's
loggers, httpx/httpx2/httpcore and the MCP SDK, on both deployments, during remote searches and fetches whose
query, location, bearer token and Functions key carry a marker, never contains the marker."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

import pytest

from shared.cache import MemoryStore
from shared.compose import compose
from shared.errors import DocsError
from shared.requests import ReadRequest, SearchRequest
from tests.providers.remote.conftest import Deployment, b_settings
from tools.static_origin import StaticOrigin

MARKER = "zq7MARKERq7z"
LOGGERS = ("", "shared", "httpx", "httpx2", "httpcore", "httpcore2", "mcp", "uvicorn", "starlette", "fastapi")


class Everything(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(self.format(record) + " " + repr(record.__dict__))


@pytest.fixture
def captured() -> Iterator[Everything]:
    handler = Everything()
    loggers = [logging.getLogger(name) for name in LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
    logging.getLogger().addHandler(handler)
    try:
        yield handler
    finally:
        logging.getLogger().removeHandler(handler)
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


async def test_no_query_location_token_or_key_is_logged(
    static_origin: StaticOrigin, deploy: Callable[..., Deployment], captured: Everything
) -> None:
    token, key = f"token-{MARKER}", f"key-{MARKER}"
    b = deploy(Inbound__Tokens=token, Search__MinScore="0")  # the marker term must not empty the answer
    settings = b_settings(static_origin, Remote__Endpoint=b.mcp, Remote__Token=token, Remote__FunctionsKey=key)

    async with compose(settings, embedding=None, store=MemoryStore()) as a:
        found = await a.service.search(SearchRequest(f"install the agent {MARKER}", limit=3))
        page = await a.service.get(ReadRequest(found.results[0].location))
        asked = len(b.mcp_requests())
        for location in (f"guide/{MARKER}", f"{MARKER}/install", f"{static_origin.url}/alpha/{MARKER}/"):
            with contextlib.suppress(DocsError):  # a miss or a resolved page: either way it went through B
                await a.service.get(ReadRequest(location))
    wrong = b_settings(static_origin, Remote__Endpoint=b.mcp, Remote__Token=f"wrong-{MARKER}", Search__MinScore="0")
    async with compose(wrong, embedding=None, store=MemoryStore()) as a:
        refused = await a.service.search(SearchRequest(f"install {MARKER}", limit=3))

    assert found.provider == page.provider == "smithy_remote" and refused.provider == "mkdocs"
    assert len(b.mcp_requests()) >= asked + 3 and len(captured.texts) > 20  # the capture saw the traffic
    assert any("mcp.client.streamable_http" in text for text in captured.texts)
    leaks = [text for text in captured.texts if MARKER in text]
    assert leaks == []


async def test_nothing_is_logged_through_all_three_providers(
    static_origin: StaticOrigin, deploy: Callable[..., Deployment], captured: Everything
) -> None:
    """Azure AI Search (the real SDK), the remote deployment (the MCP client) and MkDocs in one chain; the Azure
    SDK's loggers are captured too. Query, location, API key and bearer token all carry the marker."""
    from tests.support.ai_search_server import AiSearchServer

    logging.getLogger("azure").setLevel(logging.DEBUG)
    token, api_key = f"token-{MARKER}", f"key-{MARKER}"
    b = deploy(Inbound__Tokens=token, Search__MinScore="0")
    hit = {"metadata_storage_path": "https://acct.blob.core.windows.net/docs/alpha/guide/install.md", "title": "x"}
    with AiSearchServer(api_key=api_key) as ai:
        settings = b_settings(
            static_origin,
            Remote__Endpoint=b.mcp,
            Remote__Token=token,
            Search__MinScore="0",
            AiSearch__MkDocsSitePrefix="alpha",
            **ai.app_settings(),
        )
        async with compose(settings, embedding=None, store=MemoryStore()) as a:
            ai.respond(hits=[hit])
            by_ai = await a.service.search(SearchRequest(f"install {MARKER}", limit=3))
            ai.respond(hits=[])
            by_remote = await a.service.search(SearchRequest(f"install the agent {MARKER}", limit=3))
            page = await a.service.get(ReadRequest(by_ai.results[0].location))
            with contextlib.suppress(DocsError):
                await a.service.get(ReadRequest(f"guide/{MARKER}"))
            b.server.stop()
            by_mkdocs = await a.service.search(SearchRequest(f"install {MARKER}", limit=3))

    assert (by_ai.provider, by_remote.provider, page.provider, by_mkdocs.provider) == (
        "ai_search",
        "smithy_remote",
        "smithy_remote",
        "mkdocs",
    )
    assert any(text.startswith("azure") for text in captured.texts)  # the SDK's own records were seen
    assert [text for text in captured.texts if MARKER in text] == []
