"""The access log: one line per answer, refusals included, with nothing in it the client chose.

An ASGI middleware outside every other, so the answers the outer checks give (`401`, `403` and `503` from the
bearer and sign-in check, `429` from the concurrency limit) are logged like the routes' own, and an alert on the
rate of `503`s sees "signing keys out of reach". Each line is the method, the matched route's template, the status
and the time taken:

    GET /api/docs/search 200 3.1ms
    POST /api/admin/refresh 401 0.4ms
    OTHER (unmatched) 404 0.2ms

A raw path or query string can carry a pasted location or token, so neither is ever logged: the template of the
route it matched is (for a request refused before routing, the route it would have matched), or `(unmatched)`.
The method is the client's only when it is one the app routes (anything else is `OTHER`), so a client cannot write
its own text into the log. A request that ended without an answer (the client went away) is logged with `-` for
its status.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.api.errors import internal_error

log = logging.getLogger(__name__)

OTHER_METHOD = "OTHER"
UNMATCHED = "(unmatched)"


class AccessLog:
    """Logs every HTTP answer at INFO; an exception no handler answered becomes the usual `500` here, so no server
    below logs its text. `routes` are the app's (read when a request comes, so routes added later count)."""

    def __init__(self, app: ASGIApp, *, routes: Sequence[BaseRoute]) -> None:
        self._app = app
        self._routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started = time.perf_counter()
        status: int | None = None

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self._app(scope, receive, sending)
        except Exception as exc:
            if status is not None:
                raise  # the answer has begun: the server can only cut it
            await internal_error(exc)(scope, receive, sending)
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            shown = "-" if status is None else status
            log.info("%s %s %s %.1fms", self._method(scope), self._template(scope), shown, elapsed)

    def _method(self, scope: Scope) -> str:
        method = scope.get("method", "")
        routed = any(method in (getattr(route, "methods", None) or ()) for route in self._routes)
        return method if routed else OTHER_METHOD

    def _template(self, scope: Scope) -> str:
        matched = scope.get("route")
        if matched is None:  # refused before routing
            matched = next((route for route in self._routes if route.matches(scope)[0] is not Match.NONE), None)
        return getattr(matched, "path", UNMATCHED)
