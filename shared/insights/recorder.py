"""The usage recorder: the service's usage sink (`shared.usage`) when insights are on. It takes each event off the
request path into a bounded queue and one writer task appends them to the store in batches.

- A request only puts an event in the queue (no I/O, no waiting); a full queue drops it and counts it
  (`dropped`, and the `smithy.docs.usage.dropped` counter), and the request is answered as ever.
- The writer collects events for up to `FLUSH_SECONDS` (or `BATCH` of them), then stamps each with its caller's
  pseudonym, scrubs its question, and appends the batch. A batch the store refuses is tried again with backoff
  (1 s doubling to 60 s) while new events queue; after `ATTEMPTS` failures it is dropped and counted, so a store
  that stays down costs a bounded queue, never a request's time.
- A caller is its credential's or address's identity (`shared.requests.Caller`) as a keyed hash, the key kept in the
  store per retention period (`Pseudonyms`): one caller is one pseudonym within a period, and cannot be followed
  past it. A request without an identity (the command line, the timer) is not recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from shared import telemetry
from shared.insights.events import (
    MAX_LOCATIONS,
    Event,
    FeedbackEvent,
    FeedbackKind,
    ReadEvent,
    SearchEvent,
    feedback_text,
    line,
    question_of,
)
from shared.insights.store import UsageStore
from shared.models import Document, SearchResponse
from shared.providers.base import Report
from shared.requests import Caller, ReadRequest, SearchRequest

log = logging.getLogger(__name__)

QUEUE_SIZE = 10_000
BATCH = 500
FLUSH_SECONDS = 1.0
WRITE_SECONDS = 10.0
ATTEMPTS = 4
MAX_BACKOFF = 60.0
DAY_SECONDS = 86_400
ALL_SITES = "*"
DEFAULT_VERSION = "default"


class InsightsHealth(Report):
    """How usage recording stands: events queued, written, dropped (queue full or store failing), the last failure."""

    status: str
    container: str
    queued: int
    written: int
    dropped: int
    last_failure: str | None = None


class Pseudonyms:
    """A caller identity's keyed hash, the key being the store's for the current retention period."""

    def __init__(self, store: UsageStore, retention_days: int, clock: Callable[[], float] = time.time) -> None:
        self._store, self._days, self._clock = store, retention_days, clock
        self._keys: dict[int, bytes] = {}

    def period(self, at: float | None = None) -> int:
        """The retention period `at` (seconds since the epoch; now by default) falls in."""
        return int((self._clock() if at is None else at) // DAY_SECONDS) // self._days

    async def of(self, identity: str, at: float) -> str:
        """The pseudonym of `identity` at `at`; raises the store's error when the period's key cannot be had."""
        period = self.period(at)
        key = self._keys.get(period)
        if key is None:
            key = await self._store.key(period)
            self._keys = {period: key}  # an earlier period's key is forgotten
        return hmac.new(key, identity.encode("utf-8"), hashlib.sha256).hexdigest()[:20]


class Recorder:
    """The usage sink that keeps events in `store`; events are taken on a running loop, `aclose` writes what is
    queued."""

    keeps = True

    def __init__(
        self,
        store: UsageStore,
        *,
        retention_days: int,
        clock: Callable[[], float] = time.time,
        queue_size: int = QUEUE_SIZE,
        flush_seconds: float = FLUSH_SECONDS,
    ) -> None:
        self.store = store
        self.pseudonyms = Pseudonyms(store, retention_days, clock)
        self._clock = clock
        self._flush = flush_seconds
        self._queue: asyncio.Queue[tuple[str, Event]] = asyncio.Queue(queue_size)
        self._writer: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self.written = self.dropped = 0
        self._last_failure: str | None = None
        self._failing = False

    # -- the sink (on the request path: queue only) --

    def searched(self, request: SearchRequest, response: SearchResponse, *, floored: bool) -> None:
        results = response.results
        outcome = "answered" if results else ("floored" if floored else "empty")
        site, version = request.site or ALL_SITES, request.version or DEFAULT_VERSION
        telemetry.used(telemetry.signals.USAGE_SEARCHES, site=site, version=version, outcome=outcome, kind=request.kind)
        self._put(
            request.caller,
            SearchEvent(
                at=self._now(),
                caller="",
                site=request.site,
                version=request.version,
                kind=request.kind.value,
                language=request.language,
                provider=response.provider,
                results=len(results),
                top=results[0].score if results else None,
                floored=floored and not results,
                question=request.query[:2000],  # scrubbed by the writer, off the request path
                locations=[result.location for result in results[:MAX_LOCATIONS]],
                best_site=results[0].site if results else None,
            ),
        )

    def read(self, request: ReadRequest, document: Document) -> None:
        version = document.version
        telemetry.used(telemetry.signals.USAGE_READS, site=document.site, version=version or DEFAULT_VERSION)
        event = ReadEvent(self._now(), "", document.site, version, document.location, document.resolution.rule.value)
        self._put(request.caller, event)

    def feedback(self, caller: Caller, document: Document, kind: FeedbackKind, text: str) -> None:
        """An agent's feedback on the page `document` is (resolved by the caller)."""
        telemetry.used(telemetry.signals.USAGE_FEEDBACK, site=document.site, feedback_kind=kind.value)
        event = FeedbackEvent(self._now(), "", document.site, document.version, document.location, kind, text)
        self._put(caller, event)

    def _put(self, caller: Caller, event: Event) -> None:
        if caller.identity is None:
            return
        try:
            self._queue.put_nowait((caller.identity, event))
        except asyncio.QueueFull:
            self._drop(1, "queue_full")
            return
        self._idle.clear()
        self._start()

    # -- the writer (off the request path) --

    def _start(self) -> None:
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._run(), name="usage insights writer")

    async def _run(self) -> None:
        pending: list[tuple[str, Event]] = []
        failures = 0
        while True:
            if not pending:
                if self._queue.empty():
                    self._idle.set()
                pending = await self._collect()
            try:
                await asyncio.wait_for(self._write(pending), WRITE_SECONDS)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failures += 1
                self._failed(exc)
                if failures >= ATTEMPTS:
                    self._drop(len(pending), "store_failed")
                    pending, failures = [], 0
                await asyncio.sleep(min(MAX_BACKOFF, 2.0 ** (failures - 1)) if failures else 0)
                continue
            self.written += len(pending)
            pending, failures = [], 0
            if self._failing:
                self._failing = False
                log.info("usage insights storage answers again")

    async def _collect(self) -> list[tuple[str, Event]]:
        batch = [await self._queue.get()]
        ends = asyncio.get_running_loop().time() + self._flush
        while len(batch) < BATCH:
            left = ends - asyncio.get_running_loop().time()
            if left <= 0:
                break
            try:
                batch.append(await asyncio.wait_for(self._queue.get(), left))
            except TimeoutError:
                break
        return batch

    async def _write(self, batch: list[tuple[str, Event]]) -> None:
        lines = []
        for identity, event in batch:
            caller = await self.pseudonyms.of(identity, event.at / 1000)
            kept: Event = replace(event, caller=caller)
            if isinstance(kept, SearchEvent):
                kept = replace(kept, question=question_of(kept.question))
            elif isinstance(kept, FeedbackEvent):
                kept = replace(kept, text=feedback_text(kept.text))
            lines.append(line(kept))
        await self.store.append(lines, datetime.fromtimestamp(batch[-1][1].at / 1000, UTC))

    def _failed(self, exc: BaseException) -> None:
        self._last_failure = type(exc).__name__
        if not self._failing:
            self._failing = True
            log.warning("usage insights storage failed (%s); events wait in the queue, retried", type(exc).__name__)

    def _drop(self, count: int, reason: str) -> None:
        self.dropped += count
        telemetry.used(telemetry.signals.USAGE_DROPPED, count, reason=reason)

    def _now(self) -> int:
        return int(self._clock() * 1000)

    async def flush(self, seconds: float = 5.0) -> bool:
        """Wait until every queued event is written (tools and tests); False when `seconds` passed first."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), seconds)
            return True
        return False

    def health(self) -> InsightsHealth:
        return InsightsHealth(
            status="failing" if self._failing else "ok",
            container=self.store.container,
            queued=self._queue.qsize(),
            written=self.written,
            dropped=self.dropped,
            last_failure=self._last_failure,
        )

    async def purge(self, retention_days: int) -> int:
        """Delete what is past retention (the warm-up's step): events of earlier days, earlier periods' keys."""
        now = self._clock()
        before = datetime.fromtimestamp(now - retention_days * DAY_SECONDS, UTC).date()
        return await self.store.purge(before, self.pseudonyms.period(now))

    async def aclose(self, seconds: float = 5.0) -> None:
        """Write what is queued (within `seconds`), then stop the writer and close the store."""
        if self._writer is not None:
            await self.flush(seconds)
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
        await self.store.aclose()
