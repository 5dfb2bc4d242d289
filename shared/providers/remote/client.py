"""Tool calls on the other deployment: a fresh MCP session over streamable HTTP per request, opened, used and closed.

The other deployment's endpoint is stateless, so nothing is kept between calls: an `httpx2.AsyncClient` carrying
the headers (bearer token, Functions key, the forwarding marker), the official client transport, a session that
initializes and calls one tool. Every HTTP status is recorded, so a refused credential (401/403, which the
transport turns into a generic MCP error) is told apart from other failures. Whatever fails is translated once,
in `errors.translate`; the whole call is bounded by `seconds`, both overall and as httpx2's own timeouts.

The MCP client logs every message it sends at DEBUG (`Sending client message: {...}`), arguments included: the
query and the location. `shared.telemetry.redaction` strips every `mcp.*` record of them, so a host that turns
DEBUG on for `mcp` still never logs what was asked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from shared.providers.remote.errors import PROTOCOL, RemoteError, translate

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult

T = TypeVar("T")


async def call_tool(
    endpoint: str, name: str, arguments: Mapping[str, Any], *, headers: Mapping[str, str], seconds: float
) -> CallToolResult:
    """The tool's result (a tool error is a result, not an exception); any other failure raises RemoteError."""

    from mcp.types import CallToolResult

    async def once(session: ClientSession) -> object:
        return await session.call_tool(name, dict(arguments), read_timeout_seconds=seconds)

    result = await in_session(endpoint, once, headers=headers, seconds=seconds)
    if not isinstance(result, CallToolResult):
        raise RemoteError(PROTOCOL, f"the remote tool answered a {type(result).__name__}, not a tool result")
    return result


async def in_session(
    endpoint: str,
    work: Callable[[ClientSession], Awaitable[T]],
    *,
    headers: Mapping[str, str],
    seconds: float,
) -> T:
    """`work` over one initialized session with the other deployment, all of it within `seconds`; whatever fails
    on the way (connecting, a refused credential, a malformed answer) raises RemoteError. `work` returns what it
    learnt rather than raising the core's errors: an exception inside the session arrives wrapped by its transport."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    statuses: list[int] = []

    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    try:
        if seconds <= 0:
            raise TimeoutError
        async with (
            asyncio.timeout(seconds),
            httpx2.AsyncClient(
                headers=dict(headers),
                timeout=httpx2.Timeout(seconds),
                follow_redirects=False,
                event_hooks={"response": [record]},
            ) as http,
            streamable_http_client(endpoint, http_client=http, terminate_on_close=False) as (read, write),
            ClientSession(read, write, read_timeout_seconds=seconds) as session,
        ):
            await session.initialize()
            result = await work(session)
    except asyncio.CancelledError:
        raise
    except RemoteError:
        raise
    except (Exception, BaseExceptionGroup) as exc:  # the transport's task group wraps what it raises
        raise translate(exc, status=next((s for s in reversed(statuses) if s >= 400), None)) from exc
    return result
