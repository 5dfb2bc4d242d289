"""A plain Starlette route that the access log can name."""

from __future__ import annotations

from starlette.routing import Route
from starlette.types import Receive, Scope, Send


class NamedRoute(Route):
    """A plain Starlette route that records itself as the match (`scope["route"]`), as FastAPI's own routes do, so
    the access log names it (`POST /api/mcp`, `GET /.well-known/oauth-protected-resource`) instead of `(unmatched)`."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["route"] = self
        await super().handle(scope, receive, send)
