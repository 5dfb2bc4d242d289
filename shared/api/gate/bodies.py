"""Request bodies arrive whole and in time, or the request ends: slow bodies are cut off, vanished clients let go.

An ASGI middleware over every route. Each part of a body must come within `SILENCE_SECONDS` of the one before,
and the whole body within `seconds` (`RequestTimeoutSeconds`) of the request's start; past either, the request is
answered `408 request_timeout` with `Connection: close` (when its answer has not begun; else the connection is
just closed) and counted (`smithy.docs.requests.cut`). Without it, a client sending `Content-Length: 2000` and then a
byte a second holds a worker, and its slot in the in-flight bound, for as long as it likes.

A client that hangs up before its body is whole (`ClientDisconnect`, or an endpoint reading past the disconnect)
is let go at INFO, with no answer: nobody is listening. Requests without a body pass through untouched.

`nested_too_deeply` is the depth bound every JSON body is checked against before a decoder can recurse on it.
"""

from __future__ import annotations

import asyncio
import logging
import time

from starlette.requests import ClientDisconnect, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.api.errors import error
from shared.errors import InvalidRequestError
from shared.telemetry import signals

log = logging.getLogger(__name__)

SILENCE_SECONDS = 5.0
"""The longest pause between two parts of one body: a client on any real network sends faster."""
MAX_JSON_DEPTH = 64
"""How deeply a JSON body may nest: a JSON-RPC message or a hook body needs four or five levels."""


class SlowBody(Exception):
    """The body did not arrive in time (`why` says which bound)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class BodyDeadline:
    """Cuts off request bodies that arrive too slowly; lets go of clients that leave mid-body."""

    def __init__(self, app: ASGIApp, *, seconds: float, silence: float = SILENCE_SECONDS) -> None:
        self._app = app
        self._seconds = seconds
        self._silence = silence

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _has_body(scope):
            await self._app(scope, receive, send)
            return
        deadline = time.monotonic() + self._seconds
        whole = False
        started = False

        async def bounded() -> Message:
            nonlocal whole
            if whole:
                return await receive()  # after the body: a disconnect, whenever it comes
            left = deadline - time.monotonic()
            wait = min(self._silence, left)
            try:
                async with asyncio.timeout(max(wait, 0.0)):
                    message = await receive()
            except TimeoutError:
                raise SlowBody(
                    f"the request body did not arrive within {self._seconds:g} s"
                    if left <= self._silence
                    else f"the request body paused for more than {self._silence:g} s"
                ) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                whole = True
            return message

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._app(scope, bounded, sending)
        except SlowBody as exc:
            signals.cut("slow_body")
            log.info("cut off a request whose body arrived too slowly")
            if not started:
                answer = error(408, "request_timeout", f"{exc.why}; send it whole and at once")
                answer.headers["Connection"] = "close"
                await answer(scope, receive, send)
        except ClientDisconnect:
            log.info("the client left before its request body was whole")


def _has_body(scope: Scope) -> bool:
    """A request that announces a body: a non-zero `Content-Length`, or a chunked one."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return value.strip() not in (b"", b"0")
        if name == b"transfer-encoding":
            return True
    return False


def nested_too_deeply(raw: bytes | str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether a JSON text opens more than `limit` arrays and objects inside each other (strings skipped; the text
    need not be valid JSON). Linear, and never recursive, so it runs before any decoder does."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    depth = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # closing quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return False


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The body, refused (`InvalidRequestError`) as soon as it is known to be larger than `max_bytes`: from
    `Content-Length` before any of it is read, else while it streams in."""
    too_large = InvalidRequestError(f"the body is larger than {max_bytes:,} bytes")
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > max_bytes:
        raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise too_large
    return bytes(body)
