"""A small, deterministic stand-in for the embedding model, passed where the real one would be (no patching).

`WordEncoder` hashes each word of a text into a fixed-size vector, so texts sharing words are close and nothing
is learned. It counts what it is asked, can hold bulk work (more than one text) until a test releases it, and can
fail on demand, which is what the lifecycle tests need; the real model's own behaviour is tested separately.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from shared.embedding import EmbeddingModel
from shared.errors import EmbeddingStopped

HOLD_LIMIT = 30.0
"""Seconds a held encode waits for its release before failing the test (it never should)."""


class WordEncoder:
    model_id = "word-hash-test"
    dimensions = 64

    def __init__(self, *, hold: bool = False) -> None:
        self.released = threading.Event()
        if not hold:
            self.released.set()
        self.fail_bulk: BaseException | None = None
        self.fail_queries: BaseException | None = None
        self.texts: list[str] = []
        """Every text of bulk work, in order."""
        self.queries: list[str] = []
        self.running = 0
        self.most_running = 0
        self.started = threading.Event()
        """Set when bulk work has started (and is possibly held)."""
        self._lock = threading.Lock()

    def encode(
        self, texts: Sequence[str], *, stop: threading.Event | None = None, query: bool = False
    ) -> npt.NDArray[np.float32]:
        if query or (len(texts) == 1 and stop is None):
            self.queries.append(texts[0])
            if self.fail_queries is not None:
                raise self.fail_queries
            return self._vectors(texts)
        with self._lock:
            self.running += 1
            self.most_running = max(self.most_running, self.running)
        try:
            if stop is not None and stop.is_set():  # the real encoder checks before every batch, the first too
                raise EmbeddingStopped
            self.started.set()
            waited = 0.0
            while not self.released.wait(0.01):
                waited += 0.01
                if stop is not None and stop.is_set():
                    raise EmbeddingStopped
                assert waited < HOLD_LIMIT, "the test never released the embedding"
            if self.fail_bulk is not None:
                raise self.fail_bulk
            self.texts += texts
            return self._vectors(texts)
        finally:
            with self._lock:
                self.running -= 1

    def _vectors(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                slot = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big")
                out[row, slot % self.dimensions] += 1.0
            norm = float(np.linalg.norm(out[row]))
            if norm:
                out[row] /= norm
            else:
                out[row, 0] = 1.0
        return out


def model_of(encoder: WordEncoder) -> EmbeddingModel:
    """The process-wide model around a test encoder, as the composition root would build it."""
    return EmbeddingModel(lambda: encoder, model_id=encoder.model_id)


class PieceWords(WordEncoder):
    """The word encoder with word pieces (a `PieceEncoder`): each word of a text is one, its vector's signs kept."""

    model_id = "word-pieces-test"

    def encode_pieces(
        self, texts: Sequence[str], pieces: int, *, stop: threading.Event | None = None
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
        vectors = self.encode(texts, stop=stop)
        signs = np.zeros((len(texts), pieces, self.dimensions // 8), np.uint8)
        counts = np.zeros(len(texts), np.uint8)
        for row, text in enumerate(texts):
            words = text.lower().split()[:pieces]
            counts[row] = len(words)
            if words:
                signs[row, : len(words)] = np.packbits(self._vectors(words) > 0, axis=-1)
        return vectors, signs, counts

    def encode_query_pieces(self, text: str) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        return self.encode([text], query=True)[0], self._vectors(text.lower().split())
