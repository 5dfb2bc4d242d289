"""What reaches the MCP SDK: a body of bounded size that is one JSON-RPC message, checked before the SDK reads it.

The SDK reads a POST's whole body however large it is, and in the 2025-11-25 revision answers an envelope that is
not a JSON-RPC message (no `method`, a number for one, a list) with `-32602` and a validation report that quotes the
body back. Here the size is checked from `Content-Length` and again while the body streams in (a larger one is
`413`, read no further), and a body that parses as JSON but is not one JSON-RPC message is `-32600` (Invalid
Request), as JSON-RPC 2.0 names it, quoting nothing. A body that is not JSON at all is left to the SDK, whose parse
error (`-32700`) is already right.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import JSONResponse, Response
from starlette.types import Message, Receive, Scope

MAX_MESSAGE_BYTES = 262_144
"""A tool call's arguments are at most a few KB (a 1,024-character query and as long a location); 256 KB leaves
room for any client's capabilities and metadata."""

INVALID_REQUEST = -32600
SHAPE = (
    'a JSON-RPC 2.0 message is one object with "jsonrpc": "2.0", a string "method", an "id" that is a string or a '
    'number (none for a notification) and "params" that is an object'
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


def refusal(body: bytes) -> Response | None:
    """`-32600` for a body that is JSON but not one JSON-RPC message; None for anything the SDK should answer."""
    try:
        message = json.loads(body)
    except ValueError:
        return None  # not JSON: the SDK's parse error
    if _well_formed(message):
        return None
    ident = message.get("id") if isinstance(message, dict) else None
    answer = {
        "jsonrpc": "2.0",
        "id": ident if _an_id(ident) else None,
        "error": {"code": INVALID_REQUEST, "message": f"Invalid Request: {SHAPE}"},
    }
    return JSONResponse(answer, status_code=400)


def too_large() -> Response:
    answer = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": INVALID_REQUEST, "message": f"Invalid Request: larger than {MAX_MESSAGE_BYTES:,} bytes"},
    }
    return JSONResponse(answer, status_code=413)


def _an_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int | float) and not isinstance(value, bool))


def _well_formed(message: Any) -> bool:
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return False
    if "method" in message:
        if not isinstance(message["method"], str) or not isinstance(message.get("params", {}), dict):
            return False
        return "id" not in message or _an_id(message["id"])
    # A client's answer to a server request (the 2025-11-25 revision has them): an id, and a result or an error.
    return _an_id(message.get("id")) and ("result" in message or "error" in message)
