"""Nothing a caller sends holds the service or makes it fail: bodies nested past any decoder, bodies sent a byte a
second, clients that leave mid-body, and JSON-RPC messages with ids no revision allows. Over real sockets against
the app under uvicorn, in both MCP revisions, with the log watched for ERROR lines."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from shared.api import create_app
from shared.api.gate.bodies import nested_too_deeply
from tests.api.test_mcp_revisions import call
from tests.support.sites import ROOTED_OVERRIDE, fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin

TIMEOUT = 3
"""`RequestTimeoutSeconds` here: a slow body must be answered or closed within it and the silence bound."""
HOOK_TOKEN = "hook-secret"
MCP_HEADERS = "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
ERAS = {"2026-07-28": "MCP-Protocol-Version: 2026-07-28\r\n", "2025-11-25": "MCP-Protocol-Version: 2025-11-25\r\n"}


@pytest.fixture
def server(static_origin: StaticOrigin) -> Iterator[UvicornServer]:
    settings = fixture_settings(
        static_origin.url,
        SearchIndexOverrides=ROOTED_OVERRIDE,
        Search__Semantic="false",
        RequestTimeoutSeconds=str(TIMEOUT),
        Refresh__Tokens=HOOK_TOKEN,
    )
    with UvicornServer(create_app(settings, embedding=None)) as running:
        yield running


@pytest.fixture
def errors(caplog: pytest.LogCaptureFixture) -> Iterator[list[logging.LogRecord]]:
    caplog.set_level(logging.INFO)
    found: list[logging.LogRecord] = []
    yield found
    found.extend(record for record in caplog.get_records("call") if record.levelno >= logging.ERROR)
    assert not found, [record.getMessage() for record in found]


def raw(server: UvicornServer, head: str, body: bytes = b"", *, seconds: float = 10) -> bytes:
    """One request written to a socket as given; the answer as read until the server closes or it is whole."""
    address = urlsplit(server.url)
    with socket.create_connection((address.hostname, address.port), timeout=seconds) as connection:
        connection.sendall(head.encode() + body)
        return _answer(connection)


def _answer(connection: socket.socket) -> bytes:
    answer = b""
    while True:
        try:
            received = connection.recv(65536)
        except TimeoutError:
            return answer
        if not received:
            return answer
        answer += received
        head, _, rest = answer.partition(b"\r\n\r\n")
        lines = head.lower().split(b"\r\n")
        length = next((line.split(b":")[1] for line in lines if line.startswith(b"content-length")), None)
        if length is not None and len(rest) >= int(length):
            return answer


def post(path: str, server: UvicornServer, body: bytes, extra: str = "") -> str:
    host = urlsplit(server.url).netloc
    return f"POST {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Length: {len(body)}\r\n\r\n"


@pytest.mark.parametrize("era", sorted(ERAS))
@pytest.mark.parametrize(
    "body",
    [b"[" * 10_000, b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": ' + b'{"a":' * 40_000],
    ids=["brackets", "nested params"],
)
def test_a_deeply_nested_mcp_body_is_refused_without_an_error_line(
    server: UvicornServer, era: str, body: bytes, errors: list[logging.LogRecord]
) -> None:
    answer = raw(server, post("/api/mcp", server, body, MCP_HEADERS + ERAS[era]), body)
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert b"-32600" in answer and b"nested more than 64 levels" in answer


def test_a_deeply_nested_hook_body_is_refused(server: UvicornServer, errors: list[logging.LogRecord]) -> None:
    body = b'{"sites": ' + b"[" * 5_000
    answer = raw(server, post("/api/admin/refresh", server, body, f"Authorization: Bearer {HOOK_TOKEN}\r\n"), body)
    assert answer.startswith(b"HTTP/1.1 400") and b"nested too deeply" in answer


@pytest.mark.parametrize(
    ("path", "extra"),
    [("/api/mcp", MCP_HEADERS + ERAS["2026-07-28"]), ("/api/admin/refresh", f"Authorization: Bearer {HOOK_TOKEN}\r\n")],
    ids=["mcp", "hook"],
)
def test_a_body_sent_a_byte_a_second_is_cut_off_within_the_deadline(
    server: UvicornServer, path: str, extra: str, errors: list[logging.LogRecord]
) -> None:
    address = urlsplit(server.url)
    head = post(path, server, b"x" * 2000, extra)
    with socket.create_connection((address.hostname, address.port), timeout=1) as connection:
        connection.sendall(head.encode())
        started = time.monotonic()
        answer = b""
        # A byte a second, for as long as the server keeps reading: it must answer or close within the bound.
        while time.monotonic() - started < TIMEOUT + 5:
            try:
                connection.sendall(b"{")
            except OSError:
                break
            try:
                received = connection.recv(65536)
            except TimeoutError:
                continue
            if not received:
                break
            answer += received
            if b"}" in answer.partition(b"\r\n\r\n")[2]:
                break
    assert time.monotonic() - started < TIMEOUT + 5
    assert answer.startswith(b"HTTP/1.1 408"), answer[:300]
    assert b"request_timeout" in answer and b"connection: close" in answer.lower()


def test_a_body_that_pauses_is_cut_off_at_the_silence_bound(server: UvicornServer) -> None:
    """A client that sends half its body and then nothing is not held for the whole deadline either way."""
    head = post("/api/mcp", server, b"x" * 100, MCP_HEADERS + ERAS["2025-11-25"])
    answer = raw(server, head, b"x" * 50, seconds=TIMEOUT + 5)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:300]


@pytest.mark.parametrize("path", ["/api/mcp", "/api/admin/refresh"])
def test_a_client_that_leaves_mid_body_costs_no_error(
    server: UvicornServer, path: str, errors: list[logging.LogRecord], caplog: pytest.LogCaptureFixture
) -> None:
    address = urlsplit(server.url)
    extra = f"Authorization: Bearer {HOOK_TOKEN}\r\n" + MCP_HEADERS + ERAS["2026-07-28"]
    for _ in range(3):
        with socket.create_connection((address.hostname, address.port), timeout=5) as connection:
            connection.sendall(post(path, server, b"x" * 5000, extra).encode() + b'{"sites": [')
    # Each request has ended once the access log has its line; nothing was logged as an error (the fixture checks).
    deadline = time.monotonic() + 10
    while sum(record.getMessage().startswith(f"POST {path} ") for record in caplog.records) < 3:
        assert time.monotonic() < deadline, "the requests never ended"
        time.sleep(0.01)
    assert httpx.get(server.url + "/api/health", timeout=10).status_code == 200


@pytest.mark.parametrize("era", sorted(ERAS))
@pytest.mark.parametrize("ident", ["1.5", "NaN", "1e999", "true"])
def test_an_id_that_is_not_a_string_or_an_integer_is_answered_as_invalid(
    server: UvicornServer, era: str, ident: str
) -> None:
    body = f'{{"jsonrpc": "2.0", "id": {ident}, "method": "tools/list", "params": {{}}}}'.encode()
    answer = raw(server, post("/api/mcp", server, body, MCP_HEADERS + ERAS[era]), body)
    assert answer.startswith(b"HTTP/1.1 400") and b"-32600" in answer, answer[:300]


def test_depth_is_counted_outside_strings_only() -> None:
    assert not nested_too_deeply(b'{"text": "' + b"[" * 500 + b'"}')
    assert not nested_too_deeply(b'{"a": "\\"' + b"{" * 500 + b'"}')
    assert nested_too_deeply(b"[" * 65) and not nested_too_deeply(b"[" * 64)
    assert not nested_too_deeply(b"[[]]" * 1000)


@pytest.mark.parametrize("era", sorted(ERAS))
def test_json_rpc_edges_are_answered_as_the_revision_says(server: UvicornServer, era: str) -> None:
    listen = call(server.url, era, "subscriptions/listen", {})
    assert listen.json()["error"]["code"] == -32601  # not served, whatever its params
    arguments = {"query": "install", "limit": True}
    flag = call(server.url, era, "tools/call", {"name": "search_docs", "arguments": arguments})
    assert flag.json()["result"]["isError"] and "limit" in flag.json()["result"]["content"][0]["text"]
    twice = call(server.url, era, "resources/read", {"uri": "docs://alpha/faq?offset=1&offset=2"})
    assert twice.json()["error"]["code"] == -32602 and "more than once" in twice.json()["error"]["message"]
