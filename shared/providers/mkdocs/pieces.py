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

from dataclasses import dataclass
from typing import TYPE_CHECKING

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

    @classmethod
    def concatenated(cls, parts: list[Pieces]) -> Pieces:
        import numpy as np

        return cls(np.concatenate([part.signs for part in parts]), np.concatenate([part.counts for part in parts]))
