"""The embedding model: the real MiniLM encoder, and the process-wide resource around any encoder (one bulk lane,
one load, failures remembered)."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import numpy.typing as npt
import pytest

from shared.embedding import (
    BATCH,
    MAX_TOKENS,
    MINILM,
    MINILM_ID,
    QUERY_TOKENS,
    EmbeddingModel,
    Encoder,
    MiniLM,
    _clipped,
)
from shared.errors import EmbeddingStopped, EmbeddingUnavailableError
from shared.providers.mkdocs.scoring.parameters import DEFAULT
from tests.support.encoders import WordEncoder, model_of


@pytest.fixture(scope="module")
def minilm() -> MiniLM:
    return MiniLM.load()


def unit(encoder: Encoder, text: str) -> npt.NDArray[np.float32]:
    vector: npt.NDArray[np.float32] = encoder.encode([text])[0]
    return vector


# -- the real model


def test_embeddings_are_384_dimensional_unit_vectors(minilm: MiniLM) -> None:
    vectors = minilm.encode(["reset the administrator password", "x", "word " * 200])
    assert vectors.shape == (3, minilm.dimensions) == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_paraphrase_is_closer_than_an_unrelated_sentence(minilm: MiniLM) -> None:
    reset, forgot, bread = minilm.encode(
        ["reset the administrator password", "I forgot the admin login", "bake sourdough bread"]
    )
    assert float(reset @ forgot) > float(reset @ bread) + 0.3
    assert float(reset @ bread) < DEFAULT.threshold < float(reset @ forgot)  # the ranker's cut-off separates them too


def test_the_same_text_always_gets_the_same_vector(minilm: MiniLM) -> None:
    text = "reset the administrator password"
    assert np.array_equal(unit(minilm, text), unit(minilm, text))
    [first, again] = minilm.encode([text, text])
    assert np.array_equal(first, again)


def test_rows_come_back_in_input_order_across_batches_of_mixed_lengths(minilm: MiniLM) -> None:
    # encode sorts by length and works in batches of 16: every row must still land where its text was.
    texts = [f"entry {n} " + "about deny windows " * (n % 5) for n in range(40)]
    together = minilm.encode(texts)
    alone = np.stack([unit(minilm, text) for text in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_embedding_stops_between_batches_when_asked(minilm: MiniLM) -> None:
    stop = threading.Event()
    stop.set()
    with pytest.raises(EmbeddingStopped):
        minilm.encode(["one", "two"], stop=stop)


FRAMING = (
    "Hi! I'm an assistant working for a small group of engineers. This week they are busy with planning, hiring "
    "interviews and a quarterly review, so they asked me to find a few things out for them while they keep going. "
    "Please answer briefly, quote the page you used, and say if you are unsure. They have also asked me to keep a "
    "short log of what I looked at, to leave out anything about pricing or licences, to prefer the current version "
    "of each page over older release notes, to mention when two pages disagree, and to keep the whole answer under "
    "a page so they can read it between meetings. Thank you! Here is what they would like to know: "
)
FREEZE_QUESTION = "How do we forbid pushing updates over the holidays?"
SYNC_WINDOWS = "Sync windows: deny windows block deployments at scheduled times, such as a change freeze."


def test_a_question_after_a_long_framing_paragraph_is_still_embedded_whole(minilm: MiniLM) -> None:
    tokens = len(minilm._tokenizer.encode(FRAMING + FREEZE_QUESTION).ids)
    assert MAX_TOKENS < tokens <= QUERY_TOKENS  # the premise: past the entries' budget, within the model's
    page = unit(minilm, SYNC_WINDOWS)

    whole = float(minilm.encode([FRAMING + FREEZE_QUESTION], query=True)[0] @ page)
    cut = float(minilm.encode([FRAMING + FREEZE_QUESTION])[0] @ page)  # an entry's budget drops the question

    assert whole > DEFAULT.threshold > cut
    assert cut == pytest.approx(float(minilm.encode([FRAMING], query=True)[0] @ page), abs=0.02)  # framing only


def test_entries_are_cut_exactly_where_the_tokenizer_would_cut_them() -> None:
    from tokenizers import Tokenizer

    _, path = MINILM.verified()
    at_budget, at_query = Tokenizer.from_file(str(path)), Tokenizer.from_file(str(path))
    for tokenizer, limit in ((at_budget, MAX_TOKENS), (at_query, QUERY_TOKENS)):
        tokenizer.no_padding()
        tokenizer.enable_truncation(limit)
    texts = ["short", FRAMING, FRAMING * 5, "x " * (MAX_TOKENS - 2), "x " * (MAX_TOKENS - 1)]

    for text in texts:
        assert _clipped(at_query.encode(text).ids, MAX_TOKENS) == at_budget.encode(text).ids


def test_bulk_lanes_give_every_text_the_vector_one_lane_gives_it(minilm: MiniLM) -> None:
    lanes = MiniLM.load(lanes=2)
    texts = [f"entry {n} " + "about deny windows and retries " * (n % 7) for n in range(5 * BATCH + 3)]

    np.testing.assert_allclose(lanes.encode(texts), minilm.encode(texts), atol=1e-6)
    np.testing.assert_allclose(lanes.encode(texts[:2]), minilm.encode(texts[:2]), atol=1e-6)  # one batch: one lane


def test_bulk_lanes_stop_between_batches_when_asked() -> None:
    lanes = MiniLM.load(lanes=2)
    stop = threading.Event()
    stop.set()
    with pytest.raises(EmbeddingStopped):
        lanes.encode([f"text {n}" for n in range(4 * BATCH)], stop=stop)


async def test_the_process_model_loads_minilm_once_and_answers_queries(minilm: MiniLM) -> None:
    loads: list[int] = []

    def load() -> MiniLM:
        loads.append(1)
        return minilm

    model = EmbeddingModel(load)
    assert model.describe().model_dump(exclude_none=True) == {"model": MINILM_ID, "state": "not_loaded"}
    first, second = await asyncio.gather(model.encode_query("a"), model.encode_query("b"))
    assert loads == [1] and model.describe().state == "loaded"
    assert first.shape == second.shape == (384,)
    model.close()


# -- the process-wide resource


async def test_bulk_work_runs_one_job_at_a_time_whoever_asks() -> None:
    encoder = WordEncoder(hold=True)
    model = model_of(encoder)
    await model.ready()
    jobs = [asyncio.ensure_future(model.bulk(lambda e, n=n: e.encode([f"job {n}", "x"]))) for n in range(3)]
    await asyncio.to_thread(encoder.started.wait, 5)
    encoder.released.set()
    await asyncio.gather(*jobs)
    assert encoder.most_running == 1
    assert encoder.texts == ["job 0", "x", "job 1", "x", "job 2", "x"]  # in the order they were queued
    model.close()


async def test_a_query_does_not_queue_behind_bulk_work() -> None:
    encoder = WordEncoder(hold=True)
    model = model_of(encoder)
    bulk = asyncio.ensure_future(model.bulk(lambda e: e.encode(["a long", "site"])))
    await asyncio.to_thread(encoder.started.wait, 5)

    vector = await model.encode_query("while the site embeds")

    assert vector.shape == (encoder.dimensions,) and not bulk.done()
    encoder.released.set()
    await bulk
    model.close()


async def finish_one_and_drop_the_next(
    model: EmbeddingModel, held: WordEncoder, *, stop: threading.Event | None = None
) -> None:
    """A job runs (held) while a second waits for the lane; the second is dropped (its `stop` set first, if
    given), the first released and finished, and the model closed once its lane is idle."""
    running = asyncio.ensure_future(model.bulk(lambda e: e.encode(["first", "job"])))
    await asyncio.to_thread(held.started.wait, 5)
    queued = asyncio.ensure_future(model.bulk(lambda e: e.encode(["never", "run"], stop=stop)))
    await asyncio.sleep(0)
    if stop is not None:
        stop.set()
    queued.cancel()
    with pytest.raises(asyncio.CancelledError):
        await queued  # dropped from the lane's queue before the lane is free to take it (not a race with it)
    held.released.set()
    await running
    await asyncio.to_thread(model.close, wait=True)


async def test_a_cancelled_job_waiting_for_the_lane_never_embeds() -> None:
    encoder = WordEncoder(hold=True)
    model = model_of(encoder)
    await model.ready()
    # The stop event is what the registry sets for a superseded job: it may already have left the queue.
    await finish_one_and_drop_the_next(model, encoder, stop=threading.Event())
    assert "never" not in encoder.texts


async def test_a_model_that_cannot_load_says_why_and_is_not_reloaded() -> None:
    attempts: list[int] = []

    def load() -> Encoder:
        attempts.append(1)
        raise EmbeddingUnavailableError("semantic runtime not installed: onnxruntime")

    model = EmbeddingModel(load, model_id="absent")
    for _ in range(2):
        with pytest.raises(EmbeddingUnavailableError):
            await model.encode_query("q")
    assert attempts == [1]
    assert model.describe().model_dump(exclude_none=True) == {
        "model": "absent",
        "state": "unavailable",
        "reason": "semantic runtime not installed: onnxruntime",
    }


async def test_a_model_that_is_not_the_one_named_is_refused() -> None:
    model = EmbeddingModel(WordEncoder, model_id="another-model")
    with pytest.raises(EmbeddingUnavailableError, match="expected another-model"):
        await model.ready()


class Loads:
    """A bulk encoder factory that counts its loads."""

    def __init__(self, encoder: Encoder | None = None, failure: Exception | None = None) -> None:
        self.encoder = encoder or WordEncoder()
        self.failure = failure
        self.count = 0

    def __call__(self) -> Encoder:
        self.count += 1
        if self.failure is not None:
            raise self.failure
        return self.encoder


async def test_bulk_work_runs_on_its_own_encoder_loaded_for_a_burst_and_released_after_it() -> None:
    queries, bulk = WordEncoder(), WordEncoder(hold=True)
    loads = Loads(bulk)
    model = EmbeddingModel(lambda: queries, model_id=queries.model_id, load_bulk=loads)
    await model.ready()

    jobs = [asyncio.ensure_future(model.bulk(lambda e, n=n: e.encode([f"job {n}", "x"]))) for n in range(3)]
    await asyncio.to_thread(bulk.started.wait, 5)
    await model.encode_query("while the burst runs")
    bulk.released.set()
    await asyncio.gather(*jobs)

    assert loads.count == 1  # one load for the three queued jobs
    assert bulk.texts == ["job 0", "x", "job 1", "x", "job 2", "x"] and queries.texts == []
    assert queries.queries == ["while the burst runs"] and bulk.queries == []
    assert model._bulk_encoder is None  # released once nothing was left to run
    await model.bulk(lambda e: e.encode(["next", "burst"]))
    assert loads.count == 2  # loaded again for the next burst
    model.close(wait=True)


async def test_a_dropped_bulk_job_still_lets_the_bulk_encoder_go() -> None:
    queries, bulk = WordEncoder(), WordEncoder(hold=True)
    model = EmbeddingModel(lambda: queries, model_id=queries.model_id, load_bulk=Loads(bulk))

    await finish_one_and_drop_the_next(model, bulk)

    assert "never" not in bulk.texts and model._pending == 0 and model._bulk_encoder is None


def test_releasing_the_bulk_encoder_hands_memory_back_on_the_lane() -> None:
    trims: list[str] = []
    queries = WordEncoder()
    model = EmbeddingModel(
        lambda: queries,
        model_id=queries.model_id,
        load_bulk=Loads(),
        trim=lambda: trims.append(threading.current_thread().name),
    )

    asyncio.run(model.bulk(lambda e: e.encode(["one", "job"])))
    # The release's trim is queued by the job's done-callback on the lane, which may still be running when the loop
    # returns; `close` would cancel it if still queued. Drain the one-worker lane until it has run (bounded).
    for _ in range(100):
        if len(trims) == 2:
            break
        model._bulk.submit(lambda: None).result()
    model.close(wait=True)

    assert model._bulk_encoder is None
    assert len(trims) == 2 and all(name.startswith("embedding") for name in trims)  # after the job, after release


@pytest.mark.parametrize(
    "loads",
    [Loads(failure=EmbeddingUnavailableError("no room")), Loads(WordEncoder.__new__(WordEncoder))],
    ids=["load fails", "another model"],
)
async def test_bulk_work_falls_back_to_the_query_encoder_when_its_own_cannot_be_had(loads: Loads) -> None:
    if loads.failure is None:
        loads.encoder = WordEncoder()
        loads.encoder.model_id = "another-model"  # type: ignore[misc]
    queries = WordEncoder()
    model = EmbeddingModel(lambda: queries, model_id=queries.model_id, load_bulk=loads)

    await model.bulk(lambda e: e.encode(["still", "embedded"]))

    assert queries.texts == ["still", "embedded"] and loads.count == 1
    model.close(wait=True)


# -- memory handed back after bulk work


def test_bulk_work_hands_its_freed_memory_back_even_when_it_fails() -> None:
    trims: list[str] = []
    encoder = WordEncoder()
    model = EmbeddingModel(
        lambda: encoder, model_id=encoder.model_id, trim=lambda: trims.append(threading.current_thread().name)
    )

    async def scenario() -> None:
        assert await model.bulk(lambda encoder: encoder.model_id) == model.model_id
        with pytest.raises(ZeroDivisionError):
            await model.bulk(lambda encoder: 1 / 0)

    asyncio.run(scenario())
    model.close(wait=True)
    assert len(trims) == 2 and all(name.startswith("embedding") for name in trims)  # on the bulk lane


def test_memory_controls_are_harmless_no_ops_without_glibc() -> None:
    from shared import memory

    memory.tune()
    memory.trim()  # the real glibc calls on this machine
    without = memory.Heap(lambda: None)
    without.tune()
    without.trim()


async def test_waiting_for_the_encoder_holds_no_worker_thread_and_loads_it_once() -> None:
    """A cold instance's two dozen site jobs and its first search all wait for the one load; none of them holds a
    worker thread meanwhile, so index loads (also on worker threads) are not queued behind them."""
    release, loads = threading.Event(), []

    def slow() -> WordEncoder:
        loads.append(1)
        assert release.wait(10)
        return WordEncoder()

    model = EmbeddingModel(slow, model_id=WordEncoder.model_id)
    waits = [asyncio.ensure_future(model.ready()) for _ in range(40)]
    await asyncio.sleep(0)  # every wait has begun

    assert await asyncio.wait_for(asyncio.to_thread(lambda: "a worker is free"), 5) == "a worker is free"
    release.set()
    encoders = await asyncio.gather(*waits)
    assert len(loads) == 1 and all(encoder is encoders[0] for encoder in encoders)
    model.close(wait=True)


async def test_a_load_that_failed_is_tried_again_unless_the_model_is_unavailable() -> None:
    attempts = []

    def flaky() -> WordEncoder:
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("a transient read error")
        return WordEncoder()

    model = EmbeddingModel(flaky, model_id=WordEncoder.model_id)
    with pytest.raises(OSError):
        await model.ready()
    assert isinstance(await model.ready(), WordEncoder) and len(attempts) == 2

    def missing() -> WordEncoder:
        attempts.append(1)
        raise EmbeddingUnavailableError("no model files")

    unavailable = EmbeddingModel(missing, model_id=WordEncoder.model_id)
    for _ in range(2):
        with pytest.raises(EmbeddingUnavailableError):
            await unavailable.ready()
    assert len(attempts) == 3  # remembered: not read again
    model.close(wait=True)
