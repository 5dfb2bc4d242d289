"""Cancel a search or get when its client hangs up, so the origin work it started stops with it.

Starlette keeps running an endpoint after its client has gone. For `GET /api/docs/*` (no request body to read),
this ASGI middleware watches the connection while the app works and cancels the app when `http.disconnect`
arrives before the answer has started. Other requests (MCP posts carry a body the app reads) pass through untouched.
"""

from __future__ import annotations

import asyncio
import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)


class CancelOnDisconnect:
    def __init__(self, app: ASGIApp, *, prefix: str = "/api/docs/") -> None:
        self._app = app
        self._prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or not scope["path"].startswith(self._prefix):
            await self._app(scope, receive, send)
            return
        first = await receive()
        if first["type"] == "http.disconnect":
            return
        gone = asyncio.Event()
        pending: list[Message] = [first]

        async def replay() -> Message:
            if pending:
                return pending.pop()
            await gone.wait()
            return {"type": "http.disconnect"}

        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        answering = asyncio.ensure_future(self._app(scope, replay, sending))

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()
            # Once the answer is being sent there is nothing left to save, and the server also reports a finished
            # response as a disconnect: cancelling then could cut the answer short.
            if not started and not answering.done():
                log.info("client disconnected; cancelling its request")  # the path may carry what it pasted
                answering.cancel()

        watcher = asyncio.ensure_future(watch())
        try:
            await answering
        except asyncio.CancelledError:
            if not gone.is_set():
                raise  # the server itself is cancelling us
        finally:
            watcher.cancel()
