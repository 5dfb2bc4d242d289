"""How many requests one client may have in flight at once: past the bound, `429` with `Retry-After`.

An ASGI middleware over `/api/*` (health excepted). The client is what the caller cannot choose
(`shared.api.gate.clients.client_of`): the connection's peer address, or, under the Functions host, which hands the
app no peer, the `X-Forwarded-For` entry the platform's front end appended. A client that opens requests and keeps
them open (slow reads, held streams) holds at most `Inbound__MaxConcurrentPerClient` of this instance's workers;
everyone else keeps being answered. Nothing about the request but its client's address is kept, and only while it
is in flight; the address is never logged.
"""

from __future__ import annotations

from collections import Counter

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.api.errors import respond
from shared.api.gate.clients import client_of
from shared.api.gate.inbound import GUARDED_PREFIX, OPEN_PATHS
from shared.errors import Throttled

RETRY_AFTER_SECONDS = 1


class ConcurrencyLimit:
    """At most `limit` requests in flight per client; the next is refused at once, never queued."""

    def __init__(self, app: ASGIApp, *, limit: int, hops: int = 1) -> None:
        self._app = app
        self._limit = limit
        self._hops = hops
        self._in_flight: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith(GUARDED_PREFIX) or path in OPEN_PATHS:
            await self._app(scope, receive, send)
            return
        client = client_of(scope, hops=self._hops)
        if self._in_flight[client] >= self._limit:
            message = f"more than {self._limit} requests in flight from one client; retry when one has finished"
            await respond(Throttled(RETRY_AFTER_SECONDS, message))(scope, receive, send)
            return
        self._in_flight[client] += 1
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                self._in_flight[client] -= 1
                if not self._in_flight[client]:
                    del self._in_flight[client]

        async def sending(message: Message) -> None:
            # Freed as the answer's last part goes out, not after: a client holding a whole answer has its slot back.
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                release()
            await send(message)

        try:
            await self._app(scope, receive, sending)
        finally:
            release()
