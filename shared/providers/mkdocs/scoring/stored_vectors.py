"""A site's entry embeddings in the store: found for exactly its entries, or computed and stored.

Stored vectors live under their own name (`shared.cache.vectors_name`: `embeddings/{site}/{model}.json`), so a
site's artifacts never collide with another site's index. The warm-up computes them once per index version for
every instance (`ensure_vectors`); a serving instance reads only their scan rows (`shared.cache.scan_name`,
`vectors.ScanRows`: the int8 rows it holds, a third of the vectors' bytes) when they are stored for its index copy,
the vectors themselves otherwise (`embeddings.EmbeddingJobs` attaches them).

A long computation stores the rows it has so far about once a minute (`PROGRESS_SECONDS`), so a run cut short (the
warm-up's time limit, a recycled or scaled-in instance, a newer index) leaves its work in the store, and the next
run, in any instance, embeds only the rest: it reuses the rows of unchanged texts from whatever the store holds for
the site (the previous index's vectors or a partial of the new one's, which carries the rows it reused). A serving
instance holds its vectors as int8 (`quantized`) and never lends them to a recompute: the store's float16 copy is
the one source of rows to reuse.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

from shared.cache import CopyStore, StoredCopy, pieces_name, scan_name, vectors_name
from shared.embedding import EmbeddingModel
from shared.errors import StoreError
from shared.providers.mkdocs.codeblocks import code as code_module
from shared.providers.mkdocs.fetching import markup
from shared.providers.mkdocs.indexes import index as index_module
from shared.providers.mkdocs.indexes.index import SiteIndex
from shared.providers.mkdocs.lifecycle.loading import code_digest
from shared.providers.mkdocs.scoring import text
from shared.providers.mkdocs.scoring import vectors as vectors_module
from shared.providers.mkdocs.scoring.pieces import Pieces, pieces_dumps, pieces_loads
from shared.providers.mkdocs.scoring.quantized import Quantized, quantize
from shared.providers.mkdocs.scoring.vectors import PROGRESS_ENTRIES, ScanRows, SiteVectors

log = logging.getLogger(__name__)

TEXTS_CODE = code_digest(index_module, markup, text, vectors_module, code_module)
"""The code that turns an index into the texts embedded (`vectors.embedded_texts`): stored vectors recorded as
computed from the same index copy by other code are checked text by text."""

PROGRESS_SECONDS = 60.0
"""While a site is embedded, the rows computed so far are stored at most this often: a run cut short loses less."""
PROGRESS_WRITE_SECONDS = 30.0
"""The longest the embedding waits for one progress write before going on without it."""


@dataclass(frozen=True, slots=True)
class Stored:
    """What the store holds for a site: vectors for exactly this index (`current`), or any to reuse rows from."""

    current: SiteVectors | None
    reusable: SiteVectors | None
    version: str | None


def embedded_from(digest: str | None) -> str | None:
    """What vectors computed for the index copy whose SHA-256 is `digest` record they were computed from (`source`)."""
    return f"{digest}/{TEXTS_CODE}" if digest else None


def _rows(index: SiteIndex) -> int:
    """How many rows an index's vectors have: one per entry, one per page outline, one per code block."""
    return len(index.entries) + len(index.pages) + len(index.code)  # one page per distinct entry page


def _current(found: SiteVectors, index: SiteIndex, digest: str | None) -> bool:
    """Whether `found` are this index's vectors: recorded as computed from this very copy by this code (and of its
    size), or else computed from exactly its texts (`SiteVectors.matches`: every text hashed again)."""
    if found.source is not None and found.source == embedded_from(digest):
        return len(found.keys) == _rows(index)
    return found.matches(index.entries, index.code)


async def read_stored(
    store: CopyStore, model: EmbeddingModel, site: str, index: SiteIndex, *, digest: str | None = None
) -> Stored:
    """The stored vectors of this model for the site (whose index copy's SHA-256 is `digest`, when known); an
    unreadable store is the same as none stored."""
    try:
        stored = await store.read(vectors_name(site, model.model_id))
    except StoreError as exc:
        log.info("site %s: stored embeddings unreadable (%s); computing them", site, exc)
        return Stored(None, None, None)
    if stored is None:
        return Stored(None, None, None)
    found = await asyncio.to_thread(SiteVectors.loads, stored.payload, model.model_id)
    if found is not None and await asyncio.to_thread(_current, found, index, digest):
        return Stored(found, found, stored.version)
    return Stored(None, found, stored.version)


async def read_scan(
    store: CopyStore,
    model: EmbeddingModel,
    site: str,
    index: SiteIndex,
    *,
    digest: str | None,
    prefetched: asyncio.Future[StoredCopy | None] | None = None,
) -> ScanRows | None:
    """The stored scan rows of this model for exactly this index copy (whose SHA-256 is `digest`: rows record the
    copy they were computed from, and only its own apply), or None: none stored, another copy's, unreadable. What a
    serving instance attaches; the vectors themselves are read only when there are none. `prefetched`: the read
    begun beside the index's load (`prefetch_scan`), taken when it is this copy's, else read again."""
    stored = await _taken(prefetched, digest) if prefetched is not None else None
    if stored is None:
        stored = await _read_derived(store, scan_name(site, model.model_id), digest, site, "scan rows")
    if stored is None:
        return None
    found = await asyncio.to_thread(ScanRows.loads, stored.payload, model.model_id)
    if found is None or found.source != embedded_from(digest):
        return None
    if len(found) != _rows(index) or len(found.hubness) != len(index.entries):
        return None
    return found


async def read_code_rows(
    store: CopyStore, model: EmbeddingModel, site: str, index: SiteIndex, *, digest: str | None
) -> Quantized | None:
    """A site's code block rows as the scan holds them, read for its first code search (`semantics.CodeRows`): from
    its stored scan rows, else from its vectors, for exactly this index copy; None when neither is there (its
    blocks are then ranked without them). The vectors' check may read the blocks: the caller has read them."""
    pages = len(index.entries) + len(index.pages)
    scan = await read_scan(store, model, site, index, digest=digest)
    if scan is not None:
        return await asyncio.to_thread(_code_part, scan.quantized, pages)
    stored = await read_stored(store, model, site, index, digest=digest)
    if stored.current is None:
        return None
    return await asyncio.to_thread(quantize, stored.current.matrix[pages:])


def _code_part(rows: Quantized, pages: int) -> Quantized:
    """The code blocks' rows of a site's rows (those after its entries' and outlines'), copied apart."""
    import numpy as np

    columns, largest = rows
    return Quantized(np.ascontiguousarray(columns[:, pages:]), largest[pages:].copy())


async def read_pieces(
    store: CopyStore, model: EmbeddingModel, site: str, index: SiteIndex, *, digest: str | None
) -> Pieces | None:
    """The stored word pieces of this model for exactly this index copy's entries (the rerank's: `pieces.py`), or
    None: none stored, another copy's, unreadable. Read after the scan rows are attached, never before a search."""
    stored = await _read_derived(store, pieces_name(site, model.model_id), digest, site, "word pieces")
    if stored is None:
        return None
    found = await asyncio.to_thread(pieces_loads, stored.payload, model.model_id)
    if found is None or found[1] != embedded_from(digest) or len(found[0]) != len(index.entries):
        return None
    return found[0]


def prefetch_scan(store: CopyStore, model: EmbeddingModel, site: str) -> asyncio.Task[StoredCopy | None]:
    """Begin reading a site's stored scan rows now, before its index is loaded (which copy they must be for is known
    only then: `read_scan` checks): a cold instance downloads both at once, not one after the other. An unreadable
    store gives None."""

    async def read() -> StoredCopy | None:
        try:
            return await store.read(scan_name(site, model.model_id))
        except StoreError:
            return None

    return asyncio.get_running_loop().create_task(read(), name=f"prefetch the scan rows of {site}")


async def _taken(prefetched: asyncio.Future[StoredCopy | None], digest: str | None) -> StoredCopy | None:
    """A prefetched copy, when it was computed from the index copy whose SHA-256 is `digest`."""
    try:
        stored = await prefetched
    except (StoreError, asyncio.CancelledError):
        return None
    return _derived_from(stored, digest)


def _derived_from(stored: StoredCopy | None, digest: str | None) -> StoredCopy | None:
    """`stored` when its properties say it was computed from the index copy whose SHA-256 is `digest` by this code."""
    return stored if stored is not None and digest is not None and stored.built_from == embedded_from(digest) else None


async def _read_derived(store: CopyStore, name: str, digest: str | None, site: str, what: str) -> StoredCopy | None:
    """The stored copy `name` when its properties say it was computed from the index copy whose SHA-256 is `digest`
    by this code; None when there is none, it is another copy's, or the store does not answer."""
    if digest is None:
        return None
    try:
        stored = await store.read(name)
    except StoreError as exc:
        log.info("site %s: stored %s unreadable (%s)", site, what, exc)
        return None
    return _derived_from(stored, digest)


async def scan_stored(store: CopyStore, model: EmbeddingModel, site: str, digest: str) -> bool:
    """Whether scan rows for this index copy are stored, from their properties alone (no download). They are written
    only once their vectors are, so the warm-up takes them as the sign that a site's embeddings are current."""
    found = await store.stat(scan_name(site, model.model_id))
    return found is not None and found.built_from == embedded_from(digest)


async def store_scan(
    store: CopyStore, model: EmbeddingModel, site: str, scan: ScanRows, *, unreadable: bool = False
) -> bool:
    """Store the scan rows unless the ones stored are for the same index copy and code (decided from properties,
    or, when those were found `unreadable`, replaced all the same); True when written. Whoever writes last wins:
    rows of another copy are never attached (`read_scan`). Never raises: without them, instances read the
    vectors, only slower."""
    try:
        written = await _store_derived(
            store,
            scan_name(site, model.model_id),
            scan.source,
            len(scan),
            partial(scan.dumps, model.model_id),
            unreadable,
        )
        if scan.pieces is not None:
            dumps = partial(pieces_dumps, scan.pieces, model.model_id, scan.source)
            name = pieces_name(site, model.model_id)
            await _store_derived(store, name, scan.source, len(scan.pieces), dumps, unreadable)
        return written
    except StoreError as exc:
        log.info("site %s: could not store the scan rows (%s)", site, exc)
        return False


async def _store_derived(
    store: CopyStore, name: str, source: str, entries: int, dumps: Callable[[], bytes], unreadable: bool
) -> bool:
    """Store what `dumps` makes as `name`, computed from `source`, unless the copy stored there records that very
    source (decided from properties; replaced all the same when it was found `unreadable`); True when written.
    Raises StoreError."""
    existing = await store.stat(name)
    if existing is not None and existing.built_from == source and not unreadable:
        return False
    payload = await asyncio.to_thread(dumps)
    entry = StoredCopy.derived(payload, datetime.now(UTC), built_from=source, entries=entries)
    return await store.write(name, entry, expected_version=existing.version if existing else None) is not None


async def repair_scan(
    store: CopyStore, model: EmbeddingModel, site: str, index: SiteIndex, vectors: SiteVectors, digest: str
) -> bool:
    """Store this index copy's scan rows, from its `vectors`, where the stored ones are missing or are this copy's
    but unreadable (`read_scan` refused them): what an instance that had to read the vectors instead does, so the
    next cold instance reads the rows again. The warm-up cannot see such rows (it decides from properties). Rows of
    another copy are left to the warm-up. True when written; never raises."""
    source = embedded_from(digest) or ""
    try:
        existing = await store.stat(scan_name(site, model.model_id))
    except StoreError as exc:
        log.info("site %s: could not check the stored scan rows (%s)", site, exc)
        return False
    if existing is not None and existing.built_from != source:
        return False
    scan = await asyncio.to_thread(vectors.scan_rows, len(index.entries), source)
    written = await store_scan(store, model, site, scan, unreadable=existing is not None)
    if written:
        log.info("site %s: stored scan rows were %s; stored again", site, "unreadable" if existing else "missing")
    return written


async def compute_and_store(
    store: CopyStore,
    model: EmbeddingModel,
    site: str,
    index: SiteIndex,
    *,
    reuse: SiteVectors | None,
    expected_version: str | None,
    digest: str | None = None,
    stop: threading.Event | None = None,
    clock: Callable[[], float] = time.monotonic,
    progress_entries: int = PROGRESS_ENTRIES,
) -> SiteVectors:
    """Embed the entries `reuse` does not cover (on the bulk lane), then store the result conditionally; a long
    run also stores its progress (`_Saver`), which `read_stored` offers the next run as `reusable`.

    Raises EmbeddingUnavailableError when the model cannot load; a storage failure only costs the next instance
    a recompute.
    """
    entries = index.entries
    saved = _Saver(store, site, model.model_id, expected_version, asyncio.get_running_loop(), clock)
    vectors = await model.bulk(
        lambda encoder: SiteVectors.compute(
            encoder, entries, code=index.code, reuse=reuse, stop=stop, progress=saved.progress, every=progress_entries
        )
    )
    # Complete: with its hubness, and what it was computed from, so a reader of this index skips hashing its texts.
    source = embedded_from(digest)
    scan = await asyncio.to_thread(vectors.scan_rows, len(entries), source) if source else None
    hubness = scan.hubness if scan is not None else None
    dumps = partial(vectors.dumps, model.model_id, len(entries), source=source, hubness=hubness)
    payload = await asyncio.to_thread(dumps)
    await saved.write(payload, len(vectors.keys))  # rows: the entries, the page outlines and the code blocks
    if scan is not None and not saved.lost:
        await store_scan(store, model, site, scan)
    return vectors


class _Saver:
    """Stores a site's vectors, and the rows computed so far at most every `PROGRESS_SECONDS` while they are
    computed (each write conditional on the one before), so a run cut short (a timeout, a recycled instance) leaves
    its work for the next run to reuse instead of starting over."""

    def __init__(
        self,
        store: CopyStore,
        site: str,
        model_id: str,
        version: str | None,
        loop: asyncio.AbstractEventLoop,
        clock: Callable[[], float],
    ) -> None:
        self._store, self._site, self._model_id, self._version = store, site, model_id, version
        self._loop, self._clock = loop, clock
        self._last = clock()
        self._lock = asyncio.Lock()
        self._lost = False
        """Another writer replaced the stored vectors meanwhile: this run stops writing (its copy is not newer)."""

    @property
    def lost(self) -> bool:
        return self._lost

    def progress(self, snapshot: Callable[[], SiteVectors]) -> None:
        """On the bulk lane, between chunks: store the rows known so far when the last write is long enough ago."""
        if self._lost or self._clock() - self._last < PROGRESS_SECONDS:
            return
        self._last = self._clock()
        vectors = snapshot()
        writing = self.write(vectors.dumps(self._model_id), len(vectors.keys))
        try:
            done = asyncio.run_coroutine_threadsafe(writing, self._loop)
        except RuntimeError:  # the loop has closed: shutting down, nothing left to store for
            writing.close()
            return
        try:  # the lane waits for the upload (well under a second, once a minute): writes land in order
            done.result(timeout=PROGRESS_WRITE_SECONDS)
        except Exception as exc:  # progress is a bonus: the run goes on whatever happened to it
            done.cancel()
            log.info("site %s: could not store the embedding progress (%s)", self._site, type(exc).__name__)

    async def write(self, payload: bytes, rows: int) -> None:
        async with self._lock:  # one write at a time, each expecting the version the one before left
            if self._lost:
                return
            try:
                version = await self._store.write(
                    vectors_name(self._site, self._model_id),
                    StoredCopy(payload, datetime.now(UTC), entries=rows),
                    expected_version=self._version,
                )
            except StoreError as exc:
                log.info("site %s: could not store the embeddings (%s)", self._site, exc)
                return
            if version is None:
                self._lost = True
                log.info("site %s: stored embeddings were replaced meanwhile; keeping those", self._site)
                return
            self._version = version


async def ensure_vectors(
    store: CopyStore,
    model: EmbeddingModel,
    site: str,
    index: SiteIndex,
    *,
    digest: str | None = None,
) -> tuple[SiteVectors, bool]:
    """The site's vectors for exactly this index (the copy whose SHA-256 is `digest`), and whether any had to be
    computed (what the warm-up runs). Vectors that match but do not record this copy (stored by an older version)
    are stored again with the record, without embedding anything; the scan rows serving instances attach
    (`read_scan`) are stored beside them when they are not there for this copy.

    Raises StoreError when computed vectors could not be stored: serving shrugs that off (the next instance
    computes again), but a warm-up that stored nothing has not done its job and says so.
    """
    stored = await read_stored(store, model, site, index, digest=digest)
    current = stored.current
    if current is not None and (digest is None or current.source == embedded_from(digest)):
        if digest is not None and await read_scan(store, model, site, index, digest=digest) is None:
            scan = await asyncio.to_thread(current.scan_rows, len(index.entries), embedded_from(digest) or "")
            await store_scan(store, model, site, scan, unreadable=True)
        return current, False
    vectors = await compute_and_store(
        store,
        model,
        site,
        index,
        reuse=stored.reusable,
        expected_version=stored.version,
        digest=digest,
    )
    if current is not None:
        return vectors, False  # rows reused, none embedded
    if (await read_stored(store, model, site, index, digest=digest)).current is None:
        raise StoreError("the computed embeddings could not be stored")
    return vectors, True
