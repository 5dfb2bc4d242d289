"""Word-piece signs: what a late-interaction rerank compares a question with, word piece by word piece (pure: numpy).

A pooled vector says what a whole entry is about; a question answered in other words often matches it on a few of
its words only. MaxSim (ColBERT's late interaction) scores that: for each of the question's word pieces, its best
cosine with a word piece of the entry, averaged over the question. The encoder's token states for the entry are
produced anyway when the warm-up embeds it (`shared.embedding.MiniLM.encode_pieces`); storing them as floats would
cost 1.5 KB per piece, so each of an entry's first `PIECES` word pieces keeps only its signs, 48 bytes (the sign of
every dimension, scaled to unit length): on the development sets the signs ranked as well as the floats
(`tools/late_interaction.py`). The question's own pieces stay floats: they are computed per search, never stored.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shared.providers.mkdocs.scoring.framing import framed, unframed

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

PIECES = 32
"""Word pieces of an entry whose signs are kept (after [CLS]: the heading and the start of the text)."""


@dataclass(frozen=True, slots=True)
class Pieces:
    """Each row's first `PIECES` word pieces as packed signs, and how many of them the row has."""

    signs: npt.NDArray[np.uint8]
    """rows x PIECES x dimensions / 8: bit set where the word piece's state is positive (`numpy.packbits` order)."""
    counts: npt.NDArray[np.uint8]
    """How many of each row's `PIECES` are word pieces of its text (the rest are zeros, never read)."""

    def __len__(self) -> int:
        return len(self.counts)

    @property
    def dimensions(self) -> int:
        return int(self.signs.shape[2]) * 8

    def rows(self, numbers: npt.NDArray[np.intp] | slice) -> Pieces:
        """These rows, in this order (a slice: views; numbers: copies)."""
        return Pieces(self.signs[numbers], self.counts[numbers])

    def similarity(self, row: int, asked: npt.NDArray[np.float32]) -> float:
        """MaxSim of the question's unit word-piece states `asked` (pieces x dimensions) with this row's pieces: the
        mean over the question's pieces of the best product with one of the row's (its signs at unit length); 0 when
        either side has none."""
        import numpy as np

        count = int(self.counts[row])
        if count == 0 or len(asked) == 0:
            return 0.0
        signs = np.unpackbits(self.signs[row, :count], axis=-1).astype(np.float32) * 2.0 - 1.0
        products = asked @ signs.T
        return float(products.max(axis=1).mean()) / float(np.sqrt(self.dimensions))

    @classmethod
    def empty(cls, rows: int, dimensions: int) -> Pieces:
        import numpy as np

        return cls(np.zeros((rows, PIECES, dimensions // 8), np.uint8), np.zeros(rows, np.uint8))


class Held:
    """A site's entries' word pieces once they are in: with vectors computed or read whole, at once; with stored scan
    rows, read after them (`stored_vectors.read_pieces`), so a cold instance's first search
    does not wait for them (searches meanwhile are not reranked)."""

    __slots__ = ("value",)

    def __init__(self, value: Pieces | None = None) -> None:
        self.value = value


PIECES_FORMAT = 1
"""Version of the stored word pieces' layout (`pieces_dumps`); another one is never read (the vectors are)."""
_PIECES_MAGIC = b"docs-word-pieces\n"


def pieces_dumps(pieces: Pieces, model_id: str, source: str) -> bytes:
    """A site's entries' word pieces, stored on their own beside the scan rows: `_PIECES_MAGIC`, the header's length
    (uint32, little-endian), the header (JSON: format, model, dimensions, rows, pieces, source), the signs, each
    entry's count, then the SHA-256 of all that."""
    header = {
        "format": PIECES_FORMAT,
        "model": model_id,
        "dimensions": pieces.dimensions,
        "rows": len(pieces),
        "pieces": PIECES,
        "source": source,
    }
    return framed(_PIECES_MAGIC, header, *parts(pieces))


def pieces_loads(payload: bytes, model_id: str) -> tuple[Pieces, str] | None:
    """Stored word pieces of this model in this layout and what they were computed from, or None when unusable (a
    failed checksum, another layout or model, parts that do not add up, a count above `PIECES`)."""
    try:
        frame = unframed(payload, _PIECES_MAGIC, PIECES_FORMAT, model_id, "rows", "dimensions", "pieces")
        if frame is None:
            return None
        (rows, dimensions, kept), source, body, start = frame
        if not isinstance(source, str):
            return None
        if dimensions < 8 or rows < 0 or kept != PIECES:
            return None
        pieces = pieces_at(body, start, rows, dimensions, kept)
    except (ValueError, TypeError, AttributeError, struct.error, RecursionError):
        return None
    return (pieces, source) if pieces is not None else None


def parts(pieces: Pieces | None) -> tuple[bytes, ...]:
    """Word-piece signs as a stored layout ends: the signs, then each row's count; nothing without them."""
    return (pieces.signs.tobytes(), pieces.counts.tobytes()) if pieces is not None else ()


def pieces_at(body: memoryview, start: int, rows: int, dimensions: int, kept: int) -> Pieces | None:
    """The signs `parts` stored from `start` to the end of `body` (empty when `kept` is 0), or None when the parts
    do not add up to the body's end, or name another number of word pieces a row than `PIECES`, or a count above it."""
    import numpy as np

    if kept not in (0, PIECES) or dimensions % 8:
        return None
    width = kept * (dimensions // 8)
    if len(body) != start + rows * width + (rows if kept else 0):
        return None
    if not kept:
        return Pieces.empty(0, dimensions)
    # Copied: a view would keep the whole payload (the vectors' float16 rows among it) while the signs are held.
    signs = np.frombuffer(body, dtype=np.uint8, count=rows * width, offset=start).reshape(rows, kept, dimensions // 8)
    counts = np.frombuffer(body, dtype=np.uint8, count=rows, offset=start + rows * width)
    return Pieces(signs.copy(), counts.copy()) if bool((counts <= kept).all()) else None
