"""What an encoder is: the contract the embedding model (`shared.embedding.MiniLM`) and its stand-ins meet, and what
a query's embedding carries to the search it is for."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class Encoder(Protocol):
    """Turns texts into unit-length vectors; `encode` is safe to call from several threads."""

    model_id: str
    dimensions: int

    def encode(
        self, texts: Sequence[str], *, stop: threading.Event | None = None, query: bool = False
    ) -> npt.NDArray[np.float32]:
        """One unit row per text; `stop`, checked between batches, ends a long run with EmbeddingStopped.

        `query`: the texts are questions, embedded up to `QUERY_TOKENS` rather than the entries' `MAX_TOKENS`.
        """
        ...


@runtime_checkable
class PieceEncoder(Encoder, Protocol):
    """An encoder that also gives the word-piece states a late-interaction rerank compares
    (`shared.providers.mkdocs.scoring.pieces`), from the same runs as the pooled vectors."""

    def encode_pieces(
        self, texts: Sequence[str], pieces: int, *, stop: threading.Event | None = None
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
        """`encode`'s rows, and each text's first `pieces` word pieces' signs (texts x pieces x dimensions / 8,
        packed: the bit set where a state is positive) with how many word pieces each text has among them."""
        ...

    def encode_query_pieces(self, text: str) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """`encode`'s row of a query, and its word pieces' unit states (pieces x dimensions, [CLS] and [SEP] left
        out), from one run."""
        ...


@dataclass(frozen=True, slots=True)
class QueryEmbedding:
    """A query's vector, and its word pieces' unit states when the encoder gives them (`PieceEncoder`)."""

    vector: npt.NDArray[np.float32]
    pieces: npt.NDArray[np.float32] | None = None
