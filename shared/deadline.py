"""The one deadline of a request, shared by every outbound call it makes (a context variable, no I/O).

The protocol layer opens it (`budget`) around each search or get; the origin client and the chain read what is
left (`remaining`). Outbound calls get the budget minus a small grace, so that when the origin is too slow they
fail first and the provider still answers what the spec says for that failure (`fetch_failed`, a stale copy, a
fall-through) before the request's own deadline turns the answer into `timeout`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_DEADLINE: ContextVar[float | None] = ContextVar("deadline", default=None)


def grace(seconds: float) -> float:
    """What a request keeps back from its outbound calls to answer with: a tenth of it, at most a second."""
    return min(1.0, seconds * 0.1)


@contextmanager
def budget(seconds: float) -> Iterator[None]:
    """Outbound calls made inside share `seconds` less the grace (an enclosing, earlier deadline still holds)."""
    outer = _DEADLINE.get()
    mine = time.monotonic() + seconds - grace(seconds)
    token = _DEADLINE.set(mine if outer is None else min(outer, mine))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def remaining() -> float | None:
    """Seconds left for outbound calls (never negative), or None outside any request deadline."""
    deadline = _DEADLINE.get()
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def capped(seconds: float) -> float:
    """What one outbound call may take: its own bound `seconds`, or what is left of the deadline when sooner."""
    left = remaining()
    return seconds if left is None else min(seconds, left)
