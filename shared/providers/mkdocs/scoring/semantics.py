"""A site's entry embeddings as the ranker reads them: int8 rows to scan, the hubness correction, and how much
of its semantic credit a query keeps (pure).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shared.providers.mkdocs.scoring.parameters import DEFAULT, RankingParameters
from shared.providers.mkdocs.scoring.pieces import Held
from shared.providers.mkdocs.scoring.quantized import Quantized, QuantizedRows, QueryParts, quantize
from shared.providers.mkdocs.scoring.text import Query, identifier_share
from shared.providers.mkdocs.scoring.vectors import ScanRows, SiteVectors, neighbour_similarity

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


def length(wanted: Query, parameters: RankingParameters) -> float:
    """`length` of the score `parameters.py` draws: min(1, balance_words / the query's distinct terms)."""
    return min(1.0, parameters.balance_words / max(1, len(wanted.words)))


def semantic_say(query: str, wanted: Query, parameters: RankingParameters) -> float:
    """How much of its semantic credit a query keeps (`parameters.py`: `say` times `length`); the same on every
    site, so a caller searching many works it out once."""
    said = 1.0 - parameters.identifier_scale * identifier_share(query)
    return said * length(wanted, parameters)


def relevance_floor(floor: float, wanted: Query, parameters: RankingParameters, *, by_meaning: bool) -> float:
    """The score a result must reach: `floor` (`Search__MinScore`) as it is for an answer ranked by meaning, whose
    credit holds a long question's pages up; for one ranked by terms alone, `floor` times `length` to the power
    `floor_power`, as its scores fall with the question's length (`parameters.floor_power`)."""
    return floor if by_meaning else floor * length(wanted, parameters) ** parameters.floor_power


@dataclass(frozen=True, slots=True)
class SiteSemantics:
    rows: QuantizedRows
    """The entries' rows, then the page outlines' (`vectors.embedded_texts`), as the scan holds them (int8)."""
    code_rows: CodeRows | None
    """The code blocks' rows (after the outlines'), scanned only by code search."""
    order: npt.NDArray[np.intp]
    """Entry numbers grouped by page, pages in order: one per entry, so its length is where the outlines' rows
    start."""
    starts: npt.NDArray[np.intp]
    """Where each page's entries start in `order`."""
    correction: npt.NDArray[np.float32]
    """Subtracted from each entry's cosine: `hub_weight` times its neighbour similarity less the site's median."""
    parameters: RankingParameters
    pieces: Held = field(default_factory=Held)
    """Each entry's word-piece signs, once they are in (the late-interaction rerank: `pieces.py`)."""

    @classmethod
    def of(
        cls,
        vectors: SiteVectors | ScanRows,
        order: npt.NDArray[np.intp],
        starts: npt.NDArray[np.intp],
        parameters: RankingParameters,
    ) -> SiteSemantics:
        """The site's embeddings ready to score, held as int8 (`quantized`: no float rows are kept; stored scan rows
        are handed over as they are, vectors rounded here); their stored neighbour similarity (over `DEFAULT`'s
        neighbours) is used only when these parameters ask for as many, else it is computed from the float rows
        (from the int8 rows, scaled back, for scan rows)."""
        import numpy as np

        entries = len(order)
        stored = vectors.hubness
        rounded = vectors.quantized if isinstance(vectors, ScanRows) else quantize(vectors.matrix)
        if stored is not None and len(stored) == entries and parameters.hub_neighbours == DEFAULT.hub_neighbours:
            hubness = stored
        else:  # from the float rows, or from the int8 ones scaled back when only those were stored
            floats = rounded.scaled_back(entries) if isinstance(vectors, ScanRows) else vectors.matrix[:entries]
            hubness = neighbour_similarity(floats, parameters.hub_neighbours)
        correction = (parameters.hub_weight * (hubness - np.median(hubness))).astype(np.float32)
        pages = entries + len(starts)  # the code blocks' rows follow the outlines': scanned only by code search
        columns, largest = rounded
        code = None
        if columns.shape[1] > pages and isinstance(vectors, ScanRows):  # stored: read again by a first code search
            code = CodeRows(None)
            rounded = Quantized(columns[:, :pages], largest[:pages])
        elif columns.shape[1] > pages:  # copied: the rows of every kind are freed once the scan has its own copy
            code = CodeRows(Quantized(np.ascontiguousarray(columns[:, pages:]), largest[pages:].copy()))
            rounded = Quantized(columns[:, :pages], largest[:pages])
        # The entries' only, copied when the vectors hold more (outlines, code blocks), so those are not kept with them.
        held = vectors.pieces
        pieces = held if held is None or len(held) == entries else held.rows(np.arange(entries))
        return cls(QuantizedRows(rounded), code, order, starts, correction, parameters, Held(pieces))

    def code_similarities(self, query: QueryParts) -> npt.NDArray[np.float32] | None:
        """Every code block row's cosine with the query (`split_query`); None when the site has no code rows, or
        they are not read (yet)."""
        scanned = self.code_rows.scan() if self.code_rows is not None else None
        return scanned.similarities(query) if scanned is not None else None


class CodeRows:
    """A site's code block rows, made ready to scan by the first code search: a cold instance loading many sites
    neither holds rows a page search never reads nor pays an onnxruntime session per site for them (10 ms for
    forge's 2,150). Rows attached from stored scan rows are not kept at all (`None`): the site's first code search
    reads them from the store again (`fill`: `stored_vectors.read_code_rows`)."""

    __slots__ = ("_lock", "_quantized", "_rows")

    def __init__(self, quantized: Quantized | None) -> None:
        self._quantized = quantized
        self._rows: QuantizedRows | None = None
        self._lock = threading.Lock()

    @property
    def read(self) -> bool:
        return self._quantized is not None or self._rows is not None

    def fill(self, quantized: Quantized) -> None:
        """The rows, read from the store (kept only if none were meanwhile)."""
        with self._lock:
            if not self.read:
                self._quantized = quantized

    def scan(self) -> QuantizedRows | None:
        """The rows ready to scan; None while they are not read."""
        with self._lock:
            if self._rows is None and self._quantized is not None:
                self._rows, self._quantized = QuantizedRows(self._quantized), None  # the session holds its own copy
            return self._rows
