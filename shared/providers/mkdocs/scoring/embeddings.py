"""A site's entry embeddings attached in the background: each served index's, or a newer one's before it is served.

- a first load is served lexically at once; a search waits for its stored vectors' lookup at most
  `STORED_VECTORS_WAIT`, never for vectors being computed;
- a newer index for a site that already ranks semantically is embedded before it is served: the job ends with
  its outcome (`Embedded`) and the registry installs index and vectors together; if embedding it fails, the
  index is installed anyway and ranks lexically;
- every job computes on the model's one bulk lane, and a superseded job stops at its next batch; found or computed
  vectors are `stored_vectors`' to read and write;
- a job that fails (not for want of the model) is tried again after `SiteRetrySeconds`, doubling per consecutive
  failure up to an hour, with jitter.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from shared.cache import CopyStore, StoredCopy
from shared.embedding import EmbeddingModel
from shared.encoders import PieceEncoder
from shared.errors import EmbeddingStopped, EmbeddingUnavailableError
from shared.providers.mkdocs.lifecycle.health import Semantic
from shared.providers.mkdocs.lifecycle.loading import LoadedSite
from shared.providers.mkdocs.scoring.stored_vectors import (
    Stored,
    compute_and_store,
    prefetch_scan,
    read_code_rows,
    read_pieces,
    read_scan,
    read_stored,
    repair_scan,
)
from shared.providers.mkdocs.scoring.vectors import ScanRows, SiteVectors

log = logging.getLogger(__name__)

MAX_RETRY_SECONDS = 3600.0
"""The longest wait between two tries at embedding a site whose embedding keeps failing."""
STORED_VECTORS_WAIT = 1.0
"""Seconds a search waits for a just-loaded site's stored vectors to be looked up and attached (one download)."""
PIECES_WAIT = 10.0
"""Seconds at most a site's word pieces wait, for every configured site's first lookup and then for a moment without
a search, before they are read: a cold instance loads its sites first, and pieces read beside those loads held them
up, as pieces read beside its first search held that up (a site that never loads here, or searches that never stop,
do not hold the pieces past this)."""


@dataclass(frozen=True, slots=True)
class Embedded:
    """How an embedding job ended: the index it embedded, holding its vectors when `state` is READY, else ranking
    lexically for `reason`."""

    index: LoadedSite
    state: Semantic
    reason: str = ""


@dataclass(slots=True)
class _Job:
    """One index's embedding work: `looked_up` once its stored vectors were searched for, `stop` to end it early."""

    loaded: LoadedSite
    replacing: bool
    """`loaded` waits for its vectors to replace the served index (the caller installs it); else it is served."""
    looked_up: asyncio.Event = field(default_factory=asyncio.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    task: asyncio.Task[Embedded | None] | None = None

    def cancel(self) -> None:
        self.stop.set()
        if self.task is not None:
            self.task.cancel()


class EmbeddingJobs:
    """The background embedding of each site's served index, or of the index waiting to replace it."""

    def __init__(
        self,
        store: CopyStore,
        model: EmbeddingModel,
        *,
        retry_seconds: float = 30.0,
        sites: Sequence[str] = (),
        pieces_wait: float = PIECES_WAIT,
        read_code: Callable[[LoadedSite], Awaitable[None]] | None = None,
    ) -> None:
        self.model = model
        self._read_code = read_code
        """Reads a prebuilt site's code blocks (`parts.read_code_part`): checking stored vectors text by text, or
        computing them, needs them."""
        self._sites = tuple(sites)
        """The configured sites, whose first lookups a cold instance's word pieces wait for (`pieces_wait`)."""
        self._pieces_wait = pieces_wait
        self._started = asyncio.Event()
        """Set when a job starts: a wait for every site's job wakes to look again."""
        self._store = store
        self._retry_seconds = retry_seconds
        """A failed embedding is tried again after this long (with jitter), not left lexical until a new index."""
        self._jobs: dict[str, _Job] = {}
        self._states: dict[str, tuple[Semantic, str]] = {}
        self._retries: dict[str, asyncio.TimerHandle] = {}
        self._failures: dict[str, int] = {}
        """Consecutive failed embeddings per site: each doubles the wait, up to `MAX_RETRY_SECONDS`, so a failure
        that repeats does not re-embed a whole site every half minute."""
        self._searches = 0
        self._quiet = asyncio.Event()
        """Set while no search is in flight (`searching`): word pieces are read then."""
        self._quiet.set()
        self._prefetched: dict[str, asyncio.Task[StoredCopy | None]] = {}
        """Scan rows being read beside their site's first load (`prefetch`), until its first job takes them."""
        self._pieces_reads = asyncio.Semaphore(1)
        """One site's word pieces read at a time, once every site has looked its vectors up: read beside the sites
        still loading, they held those up (the first search at 8x: 0.9 to 1.5 s against 0.8)."""

    def start(self, site: str, loaded: LoadedSite, *, replacing: bool = False) -> asyncio.Task[Embedded | None]:
        """Embed `loaded` in the background; a job for an older index stops. The job ends with its outcome (None
        when a newer job superseded it): a served index's ranker has its vectors already, one `replacing` the served
        index is the caller's to install, with its vectors or without them."""
        self.cancel(site)
        pending_retry = self._retries.pop(site, None)
        if pending_retry is not None:
            pending_retry.cancel()
        self._states[site] = (Semantic.PENDING, "")
        job = _Job(loaded, replacing)
        self._started.set()
        job.task = asyncio.get_running_loop().create_task(self._run(site, job))
        self._jobs[site] = job
        return job.task

    def prefetch(self, site: str) -> None:
        """Begin reading the site's stored scan rows beside its index's first load (`stored_vectors.prefetch_scan`):
        its first job takes them; a load that fails drops them (`forget`)."""
        if site not in self._prefetched:
            self._prefetched[site] = prefetch_scan(self._store, self.model, site)

    def forget(self, site: str) -> None:
        """Drop the scan rows prefetched for a site whose load failed."""
        prefetched = self._prefetched.pop(site, None)
        if prefetched is not None:
            prefetched.cancel()

    def cancel(self, site: str) -> None:
        previous = self._jobs.pop(site, None)
        if previous is not None:
            previous.cancel()  # its thread stops at the next batch

    def state(self, site: str) -> tuple[Semantic, str]:
        """Where the site's newest index's embeddings stand, and why when they are unavailable or failed."""
        return self._states.get(site, (Semantic.PENDING, ""))

    async def looked_up(self, sites: list[str], seconds: float = STORED_VECTORS_WAIT) -> None:
        """Wait, at most `seconds`, until these sites' stored vectors have been looked up (and attached if found).

        Never waits for vectors being computed: a search ranks lexically meanwhile.
        """
        events = [
            job.looked_up
            for site in sites
            if (job := self._jobs.get(site)) is not None and not job.replacing and not job.looked_up.is_set()
        ]
        if events:
            await _set(events, seconds)

    @contextmanager
    def searching(self) -> Iterator[None]:
        """Brackets a search: word pieces are read between searches, so a cold instance's first search (which loads
        the sites and waits for their lookups) does not share its event loop with reading them (a read that can wait
        should; measured at eight times the sample corpus, the first search's gain was within a cold start's noise)."""
        self._searches += 1
        self._quiet.clear()
        try:
            yield
        finally:
            self._searches -= 1
            if not self._searches:
                self._quiet.set()

    async def _looked_up_everywhere(self, deadline: float) -> None:
        """Until every configured site has a job and every job has looked its stored vectors up (attached them, or
        begun computing), or `deadline` has passed: a cold instance's word pieces are read after what its sites'
        first searches wait for, not beside it."""
        loop = asyncio.get_running_loop()
        while (remaining := deadline - loop.time()) > 0:
            pending = [job.looked_up for job in self._jobs.values() if not job.looked_up.is_set()]
            absent = any(site not in self._jobs for site in self._sites)
            if not pending and not absent:
                return
            self._started.clear()
            await _set([*pending, self._started] if absent else pending, remaining, asyncio.FIRST_COMPLETED)

    async def finished(self, site: str) -> None:
        """Wait until the site's job has ended, whatever its outcome (tests and tools use it)."""
        job = self._jobs.get(site)
        if job is not None and job.task is not None:
            await asyncio.wait([job.task])

    async def aclose(self) -> None:
        for retry in self._retries.values():
            retry.cancel()
        jobs = list(self._jobs.values())
        for job in jobs:
            job.cancel()
        await asyncio.gather(*(job.task for job in jobs if job.task is not None), return_exceptions=True)

    async def _run(self, site: str, job: _Job) -> Embedded | None:
        """Attach the index's vectors: the stored ones for exactly these entries, else computed and stored.

        A failure leaves the index ranked lexically and says why in health. None when a newer job took its place.
        """
        loaded, model = job.loaded, self.model
        state: tuple[Semantic, str] = (Semantic.READY, "")
        try:
            # The model loads while the stored vectors download: queries need it even when vectors are stored.
            loading = asyncio.ensure_future(model.ready())
            loading.add_done_callback(lambda done: done.cancelled() or done.exception())  # retrieved, never lost
            try:
                # What a cold instance reads: the scan rows alone, a third of the vectors' bytes.
                prefetched = self._prefetched.pop(site, None)
                index, digest = loaded.index, loaded.digest
                scan = await read_scan(self._store, model, site, index, digest=digest, prefetched=prefetched)
                stored = Stored(None, None, None)
                if scan is None:
                    if self._read_code is not None:
                        await self._read_code(loaded)
                    stored = await read_stored(self._store, model, site, loaded.index, digest=loaded.digest)
                if scan is None and stored.current is None:
                    job.looked_up.set()  # nothing stored: searches stop waiting and rank lexically meanwhile
                await loading
            finally:
                loading.cancel()
            vectors: SiteVectors | ScanRows | None = scan if scan is not None else stored.current
            if vectors is None:
                vectors = await compute_and_store(
                    self._store,
                    model,
                    site,
                    loaded.index,
                    reuse=stored.reusable,
                    expected_version=stored.version,
                    digest=loaded.digest,
                    stop=job.stop,
                )
            assert loaded.ranker is not None  # jobs start only for indexes with their search structures
            await asyncio.to_thread(loaded.ranker.attach, vectors)  # compares every entry with every other
            semantic = loaded.ranker.semantic
            pieced = isinstance(await model.ready(), PieceEncoder)  # an encoder that gives them stored them too
            if scan is not None and semantic is not None and pieced:  # rows alone: the rerank's word pieces follow
                job.looked_up.set()  # searches rank by meaning now, and are reranked once the pieces are in
                if not job.replacing and self._jobs.get(site) is job:
                    self._states[site] = (Semantic.READY, "")  # what health says: it ranks by meaning already
                loop = asyncio.get_running_loop()
                deadline = loop.time() + self._pieces_wait
                await self._looked_up_everywhere(deadline)
                async with self._pieces_reads:
                    await _set([self._quiet], deadline - loop.time())  # between searches, up to the deadline
                    semantic.pieces.value = await read_pieces(
                        self._store, model, site, loaded.index, digest=loaded.digest
                    )
            if scan is None and stored.current is not None and loaded.digest is not None:
                await repair_scan(self._store, model, site, loaded.index, stored.current, loaded.digest)
        except asyncio.CancelledError:
            job.stop.set()
            raise
        except EmbeddingStopped:  # superseded: the newer index's job reports the state
            return None
        except EmbeddingUnavailableError as exc:
            state = (Semantic.UNAVAILABLE, str(exc))
            log.warning("site %s: semantic matching is off: %s", site, exc)
        except Exception as exc:  # a background task: nobody else would see it
            state = (Semantic.FAILED, type(exc).__name__)
            log.warning("site %s: embedding the index failed (%s); it ranks lexically until a retry", site, state[1])
        finally:
            job.looked_up.set()
        if self._jobs.get(site) is not job:  # superseded by a newer index meanwhile
            return None
        self._states[site] = state
        if state[0] is Semantic.FAILED:
            self._schedule_retry(site, loaded)
        else:
            self._failures.pop(site, None)
        return Embedded(loaded, *state)

    async def code_rows(self, loaded: LoadedSite) -> None:
        """Read a site's code block rows for its first code search, when its attached rows left them in the store
        (`semantics.CodeRows`); left unread (its blocks ranked without them, read again by the next code search) when
        the store has none for this index copy. The blocks are read first (`SiteRegistry.code_side`)."""
        semantic = loaded.ranker.semantic if loaded.ranker is not None else None
        rows = semantic.code_rows if semantic is not None else None
        if rows is None or rows.read:
            return
        index = loaded.index
        found = await read_code_rows(self._store, self.model, index.site, index, digest=loaded.digest)
        if found is not None:
            rows.fill(found)
        else:
            log.warning("site %s: no stored code rows for its index; its code blocks rank without them", index.site)

    def _schedule_retry(self, site: str, loaded: LoadedSite) -> None:
        """Try the index again later, served by then; a newer index (a new job) or closing cancels the retry."""
        failures = self._failures[site] = self._failures.get(site, 0) + 1
        backoff = min(MAX_RETRY_SECONDS, self._retry_seconds * 2 ** (failures - 1))
        delay = backoff * random.uniform(1.0, 1.2)  # noqa: S311  jitter, not cryptography
        self._retries[site] = asyncio.get_running_loop().call_later(delay, self.start, site, loaded)


async def _set(events: list[asyncio.Event], seconds: float, until: str = asyncio.ALL_COMPLETED) -> None:
    """Wait, at most `seconds`, until these events are set (`until`: all of them, or the first)."""
    waiters = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waiters, timeout=seconds, return_when=until)
    finally:
        for waiter in waiters:
            waiter.cancel()
