"""A second instance of this app (B) under uvicorn over the MkDocs fixture origin, counting what reaches it, and a
dead endpoint that accepts connections and drops them, counting each."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from shared.api import create_app
from shared.settings import DocumentationSettings
from tests.support.sites import ROOTED_OVERRIDE, fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin

MCP = "/api/mcp"


class Counting:
    """Wraps an ASGI app and records the path and headers of every HTTP request it receives."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self.requests: list[tuple[str, dict[str, str]]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
            self.requests.append((scope["path"], headers))
        await self._app(scope, receive, send)

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]


class Built:
    """An ASGI app built when its server's lifespan starts, so its settings can name ports bound by then."""

    def __init__(self, factory: Callable[[], ASGIApp]) -> None:
        self._factory = factory
        self._app: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            self._app = self._factory()
        await self._app(scope, receive, send)


def b_settings(origin: StaticOrigin, **extra: str) -> DocumentationSettings:
    return fixture_settings(origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false", **extra)


class Deployment:
    """One app instance under uvicorn; `requests` counts what reached it."""

    def __init__(self, app: Any) -> None:
        self.counting = Counting(app)
        self.server = UvicornServer(self.counting)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def mcp(self) -> str:
        return self.server.url + MCP

    def mcp_requests(self) -> list[dict[str, str]]:
        return [headers for path, headers in self.counting.requests if path == MCP]


@pytest.fixture
def deploy(static_origin: StaticOrigin) -> Iterator[Callable[..., Deployment]]:
    """Start B over the fixture origin with extra app settings; everything started is stopped afterwards."""
    started: list[Deployment] = []

    def start(**extra: str) -> Deployment:
        deployment = Deployment(create_app(b_settings(static_origin, **extra), embedding=None))
        deployment.server.start()
        started.append(deployment)
        return deployment

    yield start
    for deployment in started:
        deployment.server.stop()


class DeadEndpoint:
    """Accepts connections and closes them at once (a deployment that is down behind its address), counting each;
    with `hold`, keeps them open without a word (a deployment that hangs)."""

    def __init__(self, *, hold: bool = False) -> None:
        self._hold = hold
        self._held: list[socket.socket] = []
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(16)
        self.connections = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}{MCP}"

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            self.connections += 1
            if self._hold:
                self._held.append(connection)
            else:
                connection.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._socket.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._socket.close()
        self._thread.join(5)
        for connection in self._held:
            connection.close()


@pytest.fixture
def dead_endpoint() -> Iterator[DeadEndpoint]:
    endpoint = DeadEndpoint()
    yield endpoint
    endpoint.close()


def wait_bound(server: UvicornServer, timeout: float = 15.0) -> str:
    """The URL of a server another thread is starting, once its socket is bound (polled against a deadline)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return server.url
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.005)
