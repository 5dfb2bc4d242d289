"""Who a request comes from, as far as the caller cannot choose it: the connection's peer, or the platform's
`X-Forwarded-For` entry (the in-flight bound, the hook's throttles and, without a credential, usage insights)."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.types import Scope


def client_of(scope: Scope, *, hops: int = 1) -> str:
    """Who a request comes from, as far as the caller cannot choose it: the connection's peer address; without one
    (the Functions host's ASGI scope has `client: None`), the `hops`-th `X-Forwarded-For` entry from the right.

    App Service's front ends, which Flex Consumption apps sit behind too, append the address that connected to them
    to `X-Forwarded-For` (as `ip:port`), after whatever the caller sent: the rightmost entry is the platform's, every
    entry left of it the caller's own text. With another proxy of yours in front (Front Door, Application Gateway),
    the platform's entry is that proxy's address and the client's is one further left (`Inbound__ForwardedHops=2`).
    Under uvicorn the peer is the connection's (`python -m shared serve` does not let uvicorn rewrite it from
    headers)."""
    peer = scope.get("client")
    if peer:
        return str(peer[0])
    entries = [entry.strip() for entry in Headers(scope=scope).getlist("x-forwarded-for")]
    chain = [part.strip() for entry in entries for part in entry.split(",") if part.strip()]
    if len(chain) < hops:
        return "unknown"
    return _address(chain[-hops][:64])


def _address(entry: str) -> str:
    """An address without its port: `[v6]:port`, `v4:port`, or a bare address."""
    if entry.startswith("["):
        return entry[1:].split("]", 1)[0]
    if entry.count(":") == 1:  # IPv4:port: the port is the connection, not the client
        return entry.split(":", 1)[0]
    return entry
