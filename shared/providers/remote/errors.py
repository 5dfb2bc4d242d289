"""The remote provider's one error, and the one place the MCP client's and httpx2's exceptions are translated.

ServiceCallError
└── RemoteError        kind: unreachable | timeout | unauthorized | credential | status | protocol | malformed | tool

The chain logs the error's type and falls through to the next provider; `details` (what a 503 answer lists) names
the kind and the HTTP status, never the query, the location, a token or a key. A miss the other deployment
reports (`not_found`, `ambiguous`, ...) is not a RemoteError but a `ResolutionError` (`mapping.miss`), so the
chain can rank it against the local providers' misses.

`COOLING` are the kinds that mean the other deployment could not be talked to at all: they start the cooldown.
"""

from __future__ import annotations

from shared.errors import ServiceCallError

UNREACHABLE = "unreachable"
TIMEOUT = ServiceCallError.TIMEOUT
UNAUTHORIZED = "unauthorized"
CREDENTIAL = "credential"
STATUS = "status"
PROTOCOL = "protocol"
MALFORMED = "malformed"
TOOL = "tool"

COOLING = frozenset({UNREACHABLE, TIMEOUT, UNAUTHORIZED, CREDENTIAL})
"""Failures to connect (or to be let in): retried only after the cooldown."""


class RemoteError(ServiceCallError):
    """A call to the other deployment failed; `kind` says how, `status` is the HTTP status when there was one."""


def translate(exc: BaseException, *, status: int | None = None) -> RemoteError:
    """The RemoteError for what a call raised (callers chain `from`); `status` is the last HTTP status seen.

    The transport runs in a task group, so failures arrive wrapped in exception groups: the first leaf decides.
    """
    import httpx2
    from mcp.shared.exceptions import MCPError

    exc = _leaf(exc)
    if isinstance(exc, RemoteError):
        return exc
    if isinstance(exc, TimeoutError | httpx2.TimeoutException):
        return RemoteError(TIMEOUT, "no answer from the remote deployment in time")
    if status in (401, 403):
        return RemoteError(UNAUTHORIZED, "the remote deployment refused the credentials", status=status)
    if status is not None and status >= 400:
        return RemoteError(STATUS, f"the remote deployment answered HTTP {status}", status=status)
    if isinstance(exc, httpx2.TransportError):
        return RemoteError(UNREACHABLE, f"the remote deployment could not be reached ({type(exc).__name__})")
    if isinstance(exc, MCPError):
        return RemoteError(PROTOCOL, f"the remote deployment answered an MCP error ({exc.code})", status=status)
    if isinstance(exc, ValueError | TypeError | KeyError | AttributeError):
        return RemoteError(MALFORMED, f"the remote deployment answered something unusable ({type(exc).__name__})")
    return RemoteError(PROTOCOL, f"the remote call failed ({type(exc).__name__})", status=status)


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
