"""Nothing a caller sent reaches a log at any level: one test per library that would log it, each sending a marker
and reading every record (or every line the process wrote)."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.types import Message, Receive, Scope, Send

from shared.api import create_app
from shared.errors import DocsError
from shared.providers.remote.provider import RemoteProvider
from shared.requests import ReadRequest, SearchRequest
from shared.settings import load_settings
from shared.telemetry.redaction import scrub
from tests.support.sites import ROOTED_OVERRIDE, fixture_env, fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin

ROOT = Path(__file__).resolve().parents[1]
MARKER = "zqmarker7f3a"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_at_trace_level_logs_no_query_location_or_header(static_origin: StaticOrigin) -> None:
    port = free_port()
    env = {
        **os.environ,
        **fixture_env(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false"),
    }
    command = [sys.executable, "-m", "shared", "serve", "--port", str(port), "--log-level", "trace"]
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        base, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 60
        while True:
            try:
                httpx.get(base + "/api/health", timeout=2)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.05)
        httpx.get(base + "/api/docs/search", params={"q": f"install {MARKER}"}, timeout=30)
        httpx.get(base + "/api/docs/get", params={"location": f"guide/{MARKER}"}, timeout=30)
        httpx.post(
            base + "/api/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Host": f"{MARKER}.example"},
            timeout=30,
        )
    finally:
        server.terminate()
        output, _ = server.communicate(timeout=30)
    assert "TRACE:" in output and "Completed" in output  # trace was on: scopes logged, not what the caller sent
    assert MARKER not in output


@pytest.fixture
def server(static_origin: StaticOrigin) -> Iterator[UvicornServer]:
    settings = fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false")
    with UvicornServer(create_app(settings, embedding=None)) as running:
        yield running


def every_line(caplog: pytest.LogCaptureFixture) -> str:
    return caplog.text + "\n".join(record.getMessage() for record in caplog.records)


def test_the_mcp_server_logs_no_foreign_host_or_origin(server: UvicornServer, caplog: pytest.LogCaptureFixture) -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    with caplog.at_level(logging.DEBUG):
        for headers in ({"Host": f"{MARKER}.example"}, {"Origin": f"https://{MARKER}.example"}):
            response = httpx.post(server.url + "/api/mcp", json=initialize, headers=headers, timeout=10)
            assert response.status_code in (403, 421)
    assert caplog.records and MARKER not in every_line(caplog)


class Malformed:
    """A deployment whose `tools/call` answers are cut off mid-JSON, quoting the marker."""

    def __init__(self, app: object) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        more = True
        while more:
            message: Message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        if b"tools/call" in body:
            request_id = json.loads(body)["id"]
            cut = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"echo": MARKER}})[:-8].encode()
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": cut})
            return

        async def replay() -> Message:
            return {"type": "http.request", "body": body, "more_body": False}

        await self._app(scope, replay, send)  # type: ignore[operator]


async def test_a_malformed_remote_answer_logs_no_arguments(
    static_origin: StaticOrigin, caplog: pytest.LogCaptureFixture
) -> None:
    b = fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false")
    with UvicornServer(Malformed(create_app(b, embedding=None))) as remote:
        settings = load_settings({"Forge__Documentation__Remote__Endpoint": remote.url + "/api/mcp"})
        assert settings.remote is not None
        provider = RemoteProvider(settings.remote, sites=("alpha",))
        with caplog.at_level(logging.DEBUG):
            for call in (
                provider.search(SearchRequest(f"install {MARKER}", limit=3)),
                provider.get(ReadRequest(f"guide/{MARKER}")),
            ):
                with pytest.raises(DocsError):
                    await call
        await provider.aclose()
    assert any(record.name.startswith("mcp") for record in caplog.records)  # the client did log
    assert MARKER not in every_line(caplog)


def test_a_scrubbed_record_keeps_its_message_up_to_the_values() -> None:
    try:
        raise ValueError(f"bad {MARKER}")
    except ValueError:
        record = logging.getLogger("mcp.client").makeRecord(
            "mcp.client", logging.ERROR, "f", 1, f"Invalid Host header: {MARKER}", None, sys.exc_info()
        )
    scrub(record)
    assert record.getMessage() == "Invalid Host header: (not logged) [ValueError; traceback not logged]"
    assert record.exc_info is None
