"""The usage recorder off the request path (`shared.insights.recorder`): pseudonyms per retention period, a full
queue that drops and counts, a store that fails and is retried, scrubbing before anything is written."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from typing import cast

from shared.insights.recorder import ATTEMPTS, Pseudonyms, Recorder
from shared.insights.store import UsageStore
from shared.models import SearchKind, SearchResponse
from shared.requests import ANONYMOUS, Caller, SearchRequest

DAY = 86_400.0


class Store:
    """A usage store in memory, which can be told to fail or to hold every append until released."""

    container = "docs-insights"

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.keys: dict[int, bytes] = {}
        self.failing = False
        self.held = asyncio.Event()
        self.held.set()
        self.appends = 0

    async def key(self, period: int) -> bytes:
        return self.keys.setdefault(period, bytes([period % 256]) * 32)

    async def append(self, lines: list[str], at: datetime) -> int:
        self.appends += 1
        await self.held.wait()
        if self.failing:
            raise OSError("connection refused")
        self.lines.extend(lines)
        return sum(len(line) for line in lines)

    async def aclose(self) -> None:
        return None


def recorder(store: Store, clock: list[float], **options: object) -> Recorder:
    return Recorder(cast(UsageStore, store), retention_days=30, clock=lambda: clock[0], **options)  # type: ignore[arg-type]


def asked(query: str, identity: str | None = "token:abc") -> SearchRequest:
    caller = Caller(identity) if identity is not None else ANONYMOUS
    return SearchRequest(query, kind=SearchKind.PAGE, caller=caller)


NOTHING = SearchResponse(query="q", provider="none", results=[])


async def test_one_caller_is_one_pseudonym_within_a_period_and_another_after_it() -> None:
    store, clock = Store(), [100 * DAY]
    names = Pseudonyms(cast(UsageStore, store), 30, lambda: clock[0])
    first = await names.of("token:abc", clock[0])
    assert first == await names.of("token:abc", clock[0] + 5 * DAY) != await names.of("token:xyz", clock[0])
    assert await names.of("token:abc", clock[0] + 30 * DAY) != first
    assert "abc" not in first and len(first) == 20


async def test_events_are_written_scrubbed_with_the_callers_pseudonym_and_anonymous_requests_are_not() -> None:
    store, clock = Store(), [100 * DAY]
    usage = recorder(store, clock, flush_seconds=0.01)
    usage.searched(asked("reset the password for ops@example.com"), NOTHING, floored=False)
    usage.searched(asked("from the command line", identity=None), NOTHING, floored=False)
    assert await usage.flush()
    kept = [json.loads(line) for line in store.lines]
    assert [event["question"] for event in kept] == ["reset the password for <email>"]
    assert kept[0]["caller"] != "token:abc" and usage.health().written == 1
    await usage.aclose()


async def test_a_full_queue_drops_and_counts_and_the_request_never_waits() -> None:
    store, clock = Store(), [100 * DAY]
    store.held.clear()  # the store stalls: the first batch is being written, the queue fills behind it
    usage = recorder(store, clock, queue_size=3, flush_seconds=0.01)
    usage.searched(asked("first"), NOTHING, floored=False)
    await asyncio.sleep(0.05)  # the writer took the first event and is stuck writing it
    for number in range(5):
        usage.searched(asked(f"more {number}"), NOTHING, floored=False)
    health = usage.health()
    assert health.queued == 3 and health.dropped == 2
    store.held.set()
    assert await usage.flush()
    assert usage.health().written == 4
    await usage.aclose()


async def test_a_failing_store_is_retried_then_the_batch_is_dropped_and_counted() -> None:
    store, clock = Store(), [100 * DAY]
    store.failing = True
    usage = recorder(store, clock, flush_seconds=0.01)
    usage.searched(asked("q"), NOTHING, floored=False)
    await asyncio.sleep(0.05)
    assert usage.health().status == "failing" and usage.health().last_failure == "OSError"
    store.failing = False  # back before the last attempt: the batch is written, not dropped
    assert await usage.flush(30)
    assert usage.health().written == 1 and usage.health().dropped == 0 and store.appends >= 2
    assert ATTEMPTS > 1
    await usage.aclose()
