"""The MCP endpoint's transport: `/api/mcp` as streamable HTTP, stateless, over the session manager the app's
lifespan runs (`shared.api.app`).

Each POST is checked to be one JSON-RPC message of bounded size (`shared.api.mcp.envelope`) before the SDK sees it, and
answered within the request deadline; the SDK's DNS-rebinding protection admits the app's own host names and
loopback only. Before the lifespan has started the server, the endpoint answers `503 starting` (`ServiceNotStarted`,
through `shared.api.errors.respond`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.types import Message, Receive, Scope, Send

from shared.api.errors import ServiceNotStarted, error, respond
from shared.api.mcp import envelope
from shared.settings import LOOPBACK_HOSTS

log = logging.getLogger(__name__)

MCP_PATH = "/api/mcp"


def transport_security(allowed_hosts: Sequence[str]) -> TransportSecuritySettings:
    """DNS-rebinding protection that admits exactly the app's own host names and loopback (any port)."""
    hosts: list[str] = []
    origins: list[str] = []
    # The settings name IPv6 loopback bare (`::1`); a Host header brackets it (`[::1]:7071`), as the SDK compares it.
    loopback = (f"[{host}]" if ":" in host else host for host in sorted(LOOPBACK_HOSTS))
    for host in (*loopback, *allowed_hosts):
        hosts += [host, f"{host}:*"]
        origins += [f"https://{host}", f"https://{host}:*", f"http://{host}", f"http://{host}:*"]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


class McpEndpoint:
    """`/api/mcp` (and `/api/mcp/`, never redirected) handed to the session manager the lifespan started, once its
    body is known to be one JSON-RPC message of bounded size (`shared.api.mcp.envelope`); no request outlives the
    request deadline (and a little grace for the answer to go out): one that has not begun its answer by then is
    answered `504`."""

    GRACE_SECONDS = 2.0

    def __init__(self, *, seconds: float = 30.0) -> None:
        self.server: MCPServer[Any] | None = None
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.server is None:
            await respond(ServiceNotStarted("the MCP endpoint is not started"))(scope, receive, send)
            return
        if scope.get("method") == "POST":
            try:
                raw = await envelope.read_body(scope, receive)
            except envelope.TooLarge:
                await envelope.too_large()(scope, receive, send)
                return
            revision = Headers(scope=scope).get("mcp-protocol-version", "")
            if (refused := envelope.refusal(raw, revision=revision)) is not None:
                await refused(scope, receive, send)
                return
            receive = envelope.replaying(raw, receive)
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        with anyio.move_on_after(self.seconds + self.GRACE_SECONDS) as deadline:
            await self.server.session_manager.handle_request(scope, receive, sending)
        if deadline.cancelled_caught:
            log.warning("an MCP request outlived the request deadline and was ended")
            if not started:
                await error(504, "timeout", "no answer within the request deadline")(scope, receive, send)
