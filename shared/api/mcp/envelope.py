"""What reaches the MCP SDK: a body of bounded size that is one JSON-RPC message, checked before the SDK reads it.

The SDK reads a POST's whole body however large it is, and in the 2025-11-25 revision answers an envelope that is
not a JSON-RPC message (no `method`, a number for one, a list) with `-32602` and a validation report that quotes the
body back. Here the size is checked from `Content-Length` and again while the body streams in (a larger one is
`413`, read no further), a body nested more deeply than `shared.api.gate.bodies.MAX_JSON_DEPTH` is `-32600` before any
decoder recurses on it, and a body that parses as JSON but is not one JSON-RPC message is `-32600` (Invalid
Request), as JSON-RPC 2.0 names it, quoting nothing: an `id` must be a string or an integer (MCP: "MUST be a string
or integer"), so `1.5`, `NaN` or `1e999` is refused with an answer rather than taken as a notification. A body that
is not JSON at all is left to the SDK, whose parse error (`-32700`) is already right.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import JSONResponse, Response
from starlette.types import Message, Receive, Scope

from shared.api.gate.bodies import MAX_JSON_DEPTH, nested_too_deeply

MAX_MESSAGE_BYTES = 262_144
"""A tool call's arguments are at most a few KB (a 1,024-character query and as long a location); 256 KB leaves
room for any client's capabilities and metadata."""

INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
NOT_SERVED = frozenset({"subscriptions/listen", "resources/subscribe", "resources/unsubscribe"})
"""Methods a stateless server with no subscriptions never serves: `-32601` before the SDK validates their params
(in 2026-07-28 it would answer `subscriptions/listen` without its `notifications` with `-32602`)."""
MODERN = "2026-07-28"
"""The first revision whose answers differ here (and in `mcp.resources`); later revisions compare after it."""
SHAPE = (
    'a JSON-RPC 2.0 message is one object with "jsonrpc": "2.0", a string "method", an "id" that is a string or an '
    'integer (none for a notification) and "params" that is an object'
)


class TooLarge(Exception):
    pass


async def read_body(scope: Scope, receive: Receive) -> bytes:
    """The request's body, refused with TooLarge as soon as it is known to exceed `MAX_MESSAGE_BYTES`."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length" and value.isdigit() and int(value) > MAX_MESSAGE_BYTES:
            raise TooLarge
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_MESSAGE_BYTES:
            raise TooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def replaying(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the SDK the body already read, then whatever the connection says next."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


def refusal(body: bytes, *, revision: str = "") -> Response | None:
    """`-32600` for a body that is JSON but not one JSON-RPC message, or nested too deeply to decode safely; `-32601`
    for a request this server never serves (`NOT_SERVED`, whatever its params); None for anything the SDK should
    answer. `revision` is the request's `MCP-Protocol-Version`, which decides the HTTP status of a JSON-RPC error."""
    if nested_too_deeply(body):
        return _invalid(f"Invalid Request: nested more than {MAX_JSON_DEPTH} levels deep", None, status=400)
    try:
        message = json.loads(body)
    except RecursionError:
        return _invalid(f"Invalid Request: nested more than {MAX_JSON_DEPTH} levels deep", None, status=400)
    except ValueError:
        return None  # not JSON: the SDK's parse error
    if _well_formed(message):
        method, ident = message.get("method"), message.get("id")
        if method in NOT_SERVED and ident is not None:
            # The 2026-07-28 revision answers an unserved method with HTTP 404 (as the SDK does), 2025-11-25 with 200.
            status = 404 if revision >= MODERN else 200
            error = {"code": METHOD_NOT_FOUND, "message": "Method not found", "data": method}
            return JSONResponse({"jsonrpc": "2.0", "id": ident, "error": error}, status_code=status)
        return None
    ident = message.get("id") if isinstance(message, dict) else None
    return _invalid(f"Invalid Request: {SHAPE}", ident if _an_id(ident) else None, status=400)


def too_large() -> Response:
    return _invalid(f"Invalid Request: larger than {MAX_MESSAGE_BYTES:,} bytes", None, status=413)


def _invalid(message: str, ident: str | int | None, *, status: int) -> Response:
    answer = {"jsonrpc": "2.0", "id": ident, "error": {"code": INVALID_REQUEST, "message": message}}
    return JSONResponse(answer, status_code=status)


def _an_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _well_formed(message: Any) -> bool:
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return False
    if "method" in message:
        if not isinstance(message["method"], str) or not isinstance(message.get("params", {}), dict):
            return False
        return "id" not in message or _an_id(message["id"])
    # A client's answer to a server request (the 2025-11-25 revision has them): an id, and a result or an error.
    return _an_id(message.get("id")) and ("result" in message or "error" in message)
