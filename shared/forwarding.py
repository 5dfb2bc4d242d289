"""The forwarding marker: the header a remote call carries, and the per-request flag that keeps it from going on.

A deployment's remote provider sends `FORWARDED_HEADER: 1` with every call. The receiving app's inbound middleware
(`shared.api.gate.inbound`) sees the header and marks the request as forwarded (`forwarded_request`); while it runs,
this app's own remote provider declines, so a request from A to B is never sent on to A again (A→B→A cannot loop,
whatever each deployment's `Remote__Endpoint` says). A context variable, like the request deadline: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

FORWARDED_HEADER = "x-docs-forwarded"
FORWARDED_VALUE = "1"

_FORWARDED: ContextVar[bool] = ContextVar("docs_forwarded", default=False)


@contextmanager
def forwarded_request() -> Iterator[None]:
    """Inside, the request being answered arrived from another deployment's remote provider."""
    token = _FORWARDED.set(True)
    try:
        yield
    finally:
        _FORWARDED.reset(token)


def is_forwarded() -> bool:
    """True while answering a request that another deployment's remote provider sent."""
    return _FORWARDED.get()
