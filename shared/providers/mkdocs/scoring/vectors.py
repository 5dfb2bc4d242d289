"""Entry embeddings of a site's index and how they score a query (pure: numpy only, no I/O).

Lexical ranking cannot connect a question to a page that answers it in other words ("block deployments during a
freeze" / "deny sync windows"); sentence embeddings can (`shared.embedding`). How the similarity becomes a page's
credit, and the numbers in it, are in `parameters.py`.

- Every entry is embedded from `page title > section title` and the start of its text: the heading and opening
  sentences say what a section is about, and the cost grows with the length.
- Every page is embedded once more from its *outline*: its title, its section headings and the start of its
  introduction. A section's text sees only that section; the outline sees what the page as a whole is for, which
  is often what a question in the reader's own words is about.
- The cosine is corrected for hubness: an entry close to many others of its site (an overview, an installation
  page, templated reference sections) is close to almost any question about the site too, and lifted big generic
  pages above the specific page a question was about. Cross-domain similarity local scaling (Conneau et al., 2018),
  with the query's own term left out since it does not change a query's order; the mean similarity to the nearest
  entries (`neighbour_similarity`) is computed where vectors are stored and stored beside them.
- Every code block (`code.py`) is embedded once more, from where it sits, the prose before it and its start: code
  search compares a question with it. Its rows come after the outlines, so page search never reads them.
- Each row carries a hash of the text it embeds, so stored vectors apply only to exactly those texts and unchanged
  texts are never embedded twice.

`ENTRY_WORDS`, `OUTLINE_WORDS` and `FORMAT` stay here, not with the ranking parameters: they decide what is embedded
and stored (a change re-embeds or re-stores every site), not how a page ranks.
"""

from __future__ import annotations

import hashlib
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from shared.providers.mkdocs.codeblocks.code import CodeBlock
from shared.providers.mkdocs.indexes.index import IndexEntry, page_groups
from shared.providers.mkdocs.scoring.framing import framed, unframed
from shared.providers.mkdocs.scoring.parameters import DEFAULT
from shared.providers.mkdocs.scoring.pieces import PIECES, Pieces, parts, pieces_at
from shared.providers.mkdocs.scoring.quantized import Quantized, quantize

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from shared.encoders import Encoder

ENTRY_WORDS = 128
"""Words of an entry's text embedded after its heading (the encoder truncates further to its token budget)."""

CODE_WORDS = 16
"""Words of a code block embedded after its heading and the prose before it. Code splits into many word pieces: a
block's row is about 64 of them with these two numbers (the entries' are about 79), which keeps the warm-up's
embedding within 2.5 times what it was before #42 (`tools/embed-cost-latest.txt`); longer rows (48 words of prose,
128 of code) were no better on the code development set."""

CODE_PROSE_WORDS = 8
"""Words of the prose before a code block embedded (its last ones: what is said just before the block)."""

OUTLINE_WORDS = 32
"""Words of a page's introduction embedded in its outline, after its title and section headings."""

FORMAT = 5
"""Version of the stored vectors' layout (`SiteVectors.dumps`); another one is recomputed, never misread (5: each
row's word-piece signs beside it, `pieces.py`)."""

PROGRESS_ENTRIES = 1024
"""Entries embedded between two progress reports of `SiteVectors.compute` (about 20 to 50 s of two cores)."""


def text_key(text: str) -> str:
    """What identifies an embedded text in stored vectors: a short hash, so a row is reused only for the same text."""
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def entry_text(entry: IndexEntry) -> str:
    """What an entry is embedded from: where it sits (page > section) and what it says."""
    heading = entry.page_title if entry.anchor is None else f"{entry.page_title} > {entry.title}"
    return f"{heading}\n{' '.join(entry.text.split()[:ENTRY_WORDS])}"


def page_outline(entries: Sequence[IndexEntry], head: int, sections: Sequence[int]) -> str:
    """What a page's outline is embedded from: its title, its section headings in order, its introduction's start."""
    headings = "; ".join(entries[n].title for n in sections if entries[n].anchor is not None)
    introduction = " ".join(entries[head].text.split()[:OUTLINE_WORDS])
    return f"{entries[head].page_title}: {headings}\n{introduction}"


def code_text(block: CodeBlock) -> str:
    """What a code block is embedded from: where it sits, what the prose before it says it is for, its start."""
    heading = block.page_title if block.anchor is None else f"{block.page_title} > {block.title}"
    prose = " ".join(block.prose.split()[-CODE_PROSE_WORDS:]) if CODE_PROSE_WORDS else ""
    return f"{heading}\n{prose}\n{' '.join(block.code.split()[:CODE_WORDS])}"


def embedded_texts(entries: Sequence[IndexEntry], code: Sequence[CodeBlock] = ()) -> list[str]:
    """Every text embedded for a site, one row each: each entry's in index order, then each page's outline in
    `page_groups` order, then each code block's in index order."""
    outlines = [page_outline(entries, head, sections) for head, sections in page_groups(entries)]
    return [entry_text(entry) for entry in entries] + outlines + [code_text(block) for block in code]


@dataclass(frozen=True, slots=True)
class SiteVectors:
    """One unit vector per embedded text (`embedded_texts`: the entries, the page outlines, the code blocks), in that
    order,
    and the key of the text each was computed from.

    Stored vectors are applied to an index only when every key matches its entries' texts, so they can never
    land on the wrong entries (another index version, another parser); and any stored vectors (of the previous
    index, a partial of this one, or an older layout) lend the rows of unchanged texts to a recompute.
    """

    matrix: npt.NDArray[np.float32]
    keys: tuple[str, ...]
    hubness: npt.NDArray[np.float32] | None = None
    """Each entry row's `neighbour_similarity` over the default parameters' neighbours, stored beside complete
    vectors by whoever computed them (from the float16 rows it stores, so it equals what a loader would compute): an
    instance attaching them skips that all-pairs pass. None: computed on attach."""
    source: str | None = None
    """What the stored copy says it was computed from (the index's digest and the code that turns entries into
    texts: `shared.providers.mkdocs.scoring.embeddings`); a reader holding that very index may skip `matches`."""
    pieces: Pieces | None = None
    """Each row's word-piece signs (`pieces.py`), when the encoder gives them (`shared.embedding.PieceEncoder`)."""

    @classmethod
    def compute(
        cls,
        encoder: Encoder,
        entries: Sequence[IndexEntry],
        *,
        code: Sequence[CodeBlock] = (),
        reuse: SiteVectors | None = None,
        stop: threading.Event | None = None,
        progress: Callable[[Callable[[], SiteVectors]], None] | None = None,
        every: int = PROGRESS_ENTRIES,
    ) -> SiteVectors:
        """Embed every entry and page outline; rows of `reuse` whose text is unchanged are copied, not computed.

        A republished site usually changes a few pages, so a new index version costs milliseconds, not a minute.
        `progress` is called after every `every` embedded entries but the last with a function that
        returns the vectors known so far (only the rows already reused or computed), so a caller can keep the
        work done when a long run is cut short.
        """
        import numpy as np

        texts = embedded_texts(entries, code)
        keys = tuple(text_key(text) for text in texts)
        matrix = np.zeros((len(texts), encoder.dimensions), dtype=np.float32)
        encode_pieces = getattr(encoder, "encode_pieces", None)  # a `PieceEncoder`: its word-piece signs kept too
        pieces = Pieces.empty(len(texts), encoder.dimensions) if encode_pieces is not None else None
        known = {key: row for row, key in enumerate(reuse.keys)} if reuse is not None else {}
        found = [(number, known[key]) for number, key in enumerate(keys) if key in known]
        lent = reuse is not None and reuse.matrix.shape[1] == encoder.dimensions
        if found and reuse is not None and lent and (pieces is None or reuse.pieces is not None):
            numbers, rows = list(zip(*found, strict=True))
            matrix[list(numbers)] = reuse.matrix[list(rows)]
            if pieces is not None and reuse.pieces is not None:
                pieces.signs[list(numbers)] = reuse.pieces.signs[list(rows)]
                pieces.counts[list(numbers)] = reuse.pieces.counts[list(rows)]
        else:
            known = {}
        missing = [number for number, key in enumerate(keys) if key not in known]
        every = every if progress is not None else max(1, len(missing))  # one run when nobody is told
        for start in range(0, len(missing), every):
            chunk = missing[start : start + every]
            chunk_texts = [texts[number] for number in chunk]
            if pieces is not None and encode_pieces is not None:
                matrix[chunk], pieces.signs[chunk], pieces.counts[chunk] = encode_pieces(chunk_texts, PIECES, stop=stop)
            else:
                matrix[chunk] = encoder.encode(chunk_texts, stop=stop)
            if progress is not None and start + len(chunk) < len(missing):
                progress(partial(cls._known, matrix, keys, pieces, frozenset(missing[start + len(chunk) :])))
        return cls(matrix, keys, pieces=pieces)

    @classmethod
    def _known(
        cls, matrix: npt.NDArray[np.float32], keys: tuple[str, ...], pieces: Pieces | None, pending: frozenset[int]
    ) -> SiteVectors:
        """The rows of `matrix` (and `pieces`) other than the `pending` ones, copied."""
        import numpy as np

        rows = [row for row in range(len(keys)) if row not in pending]
        kept = pieces.rows(np.array(rows, dtype=np.intp)) if pieces is not None else None
        return cls(matrix[rows], tuple(keys[row] for row in rows), pieces=kept)

    def matches(self, entries: Sequence[IndexEntry], code: Sequence[CodeBlock] = ()) -> bool:
        """True when these vectors were computed from exactly these entries' texts, outlines and code blocks, in this
        order."""
        texts = embedded_texts(entries, code)
        return len(self.keys) == len(texts) and all(
            key == text_key(text) for key, text in zip(self.keys, texts, strict=True)
        )

    def scan_rows(self, entries: int, source: str) -> ScanRows:
        """What a serving instance needs of these complete vectors (`entries` entry rows, then the outlines), made
        from the float16 rows `dumps` stores, so it equals what an instance attaching those would make."""
        import numpy as np

        rounded = self.matrix.astype(np.float16).astype(np.float32)
        hubness = self.hubness  # loaded with the vectors: computed from these very rows
        if hubness is None or len(hubness) != entries:
            hubness = neighbour_similarity(rounded[:entries], DEFAULT.hub_neighbours)
        pieces = self.pieces.rows(np.arange(entries)) if self.pieces is not None else None  # a copy: entries' only
        return ScanRows(quantize(rounded), hubness, source, pieces)

    def dumps(
        self,
        model_id: str,
        entries: int | None = None,
        *,
        source: str | None = None,
        hubness: npt.NDArray[np.float32] | None = None,
    ) -> bytes:
        """The stored form, binary and loaded without parsing anything but a small header: `_MAGIC`, the header's
        length (uint32, little-endian), the header (JSON: format, model, dimensions, rows, hubness rows, source,
        pieces), each row's key (16 ASCII characters), the rows (float16, little-endian), with `entries` (complete
        vectors: that many entry rows, then the outlines) their hubness (float32), each row's word-piece signs and
        their count (`pieces` a row, none when 0), then the SHA-256 of all that. `hubness`: the same, computed
        already (`scan_rows`), so the all-pairs pass runs once for both."""
        import numpy as np

        rounded = self.matrix.astype(np.float16)
        complete = entries is not None and 0 < entries <= len(self.keys)
        if not complete:
            hubness = np.zeros(0, np.float32)
        elif hubness is None or len(hubness) != entries:
            hubness = neighbour_similarity(rounded.astype(np.float32)[:entries], DEFAULT.hub_neighbours)
        header = {
            "format": FORMAT,
            "model": model_id,
            "dimensions": int(self.matrix.shape[1]),
            "rows": len(self.keys),
            "hubness": len(hubness),
            "source": source,
            "pieces": PIECES if self.pieces is not None else 0,
        }
        keys = "".join(self.keys).encode("ascii")
        return framed(
            _MAGIC, header, keys, rounded.astype("<f2").tobytes(), hubness.astype("<f4").tobytes(), *parts(self.pieces)
        )

    @classmethod
    def loads(cls, payload: bytes, model_id: str) -> SiteVectors | None:
        """Stored vectors this model computed in this layout (for any index), or None when unusable: a payload
        that fails its checksum, names another layout or model, or whose parts do not add up is never read."""
        import numpy as np

        try:
            frame = unframed(payload, _MAGIC, FORMAT, model_id, "rows", "dimensions", "hubness", "pieces")
            if frame is None:
                return None
            (rows, dimensions, hubs, kept), source, body, start = frame
            if dimensions < 1 or rows < 0 or not 0 <= hubs <= rows or not isinstance(source, str | None):
                return None
            keys_end = start + rows * _KEY_CHARS
            matrix_end = keys_end + rows * dimensions * 2
            hubness_end = matrix_end + hubs * 4
            pieces = pieces_at(body, hubness_end, rows, dimensions, kept)
            if pieces is None:
                return None
            text = bytes(body[start:keys_end]).decode("ascii")
            keys = tuple(text[n : n + _KEY_CHARS] for n in range(0, len(text), _KEY_CHARS))
            matrix = np.frombuffer(body, dtype="<f2", count=rows * dimensions, offset=keys_end).astype(np.float32)
            hubness = np.frombuffer(body, dtype="<f4", count=hubs, offset=matrix_end).astype(np.float32)
        except (ValueError, TypeError, AttributeError, struct.error, RecursionError):
            return None
        usable = hubs > 0 and bool(np.isfinite(hubness).all())
        found = pieces if kept else None
        return cls(matrix.reshape(rows, dimensions), keys, hubness if usable else None, source, found)


@dataclass(frozen=True, slots=True)
class ScanRows:
    """What a serving instance attaches of a site's complete vectors: the rows rounded as the scan holds them and
    each entry's neighbour similarity, for the index copy and code `source` names. Stored on their own beside the
    vectors (`dumps`: a third of their bytes), so a cold instance downloads only what it serves, neither the float16
    rows nor the keys, which only computing vectors again needs."""

    quantized: Quantized
    hubness: npt.NDArray[np.float32]
    """Each entry row's `neighbour_similarity` over the default parameters' neighbours."""
    source: str
    """What the vectors were computed from (`SiteVectors.source`): these rows apply to that index copy only."""
    pieces: Pieces | None = None
    """Each entry's word-piece signs (`pieces.py`), when the vectors have them: held here, stored in a blob of their
    own (`pieces_dumps`), which a cold instance reads after the rows, not before its first search."""

    def __len__(self) -> int:
        return int(self.quantized.columns.shape[1])

    def dumps(self, model_id: str) -> bytes:
        """The stored form: `_SCAN_MAGIC`, the header's length (uint32, little-endian), the header (JSON: format,
        model, dimensions, rows, entries, source), the int8 columns (dimensions x rows), each row's largest magnitude
        (float32, little-endian), each entry's hubness (float32), then the SHA-256 of all that."""
        import numpy as np

        columns, largest = self.quantized
        header = {
            "format": SCAN_FORMAT,
            "model": model_id,
            "dimensions": int(columns.shape[0]),
            "rows": int(columns.shape[1]),
            "entries": len(self.hubness),
            "source": self.source,
        }
        return framed(
            _SCAN_MAGIC,
            header,
            columns.astype(np.int8).tobytes(),
            largest.astype("<f4").tobytes(),
            self.hubness.astype("<f4").tobytes(),
        )

    @classmethod
    def loads(cls, payload: bytes, model_id: str) -> ScanRows | None:
        """Stored scan rows of this model in this layout, or None when unusable (a failed checksum, another layout
        or model, parts that do not add up, a scale or similarity that is not a finite number). The int8 columns
        stay views of `payload` until the scan copies them."""
        import numpy as np

        try:
            frame = unframed(payload, _SCAN_MAGIC, SCAN_FORMAT, model_id, "rows", "dimensions", "entries")
            if frame is None:
                return None
            (rows, dimensions, entries), source, body, start = frame
            if dimensions < 1 or not 0 < entries <= rows or not isinstance(source, str):
                return None
            columns_end = start + rows * dimensions
            largest_end = columns_end + rows * 4
            if len(body) != largest_end + entries * 4:
                return None
            columns = np.frombuffer(body, dtype=np.int8, count=rows * dimensions, offset=start)
            largest = np.frombuffer(body, dtype="<f4", count=rows, offset=columns_end).astype(np.float32)
            hubness = np.frombuffer(body, dtype="<f4", count=entries, offset=largest_end).astype(np.float32)
        except (ValueError, TypeError, AttributeError, struct.error, RecursionError):
            return None
        if not (np.isfinite(largest).all() and (largest >= 0).all() and np.isfinite(hubness).all()):
            return None
        return cls(Quantized(columns.reshape(dimensions, rows), largest), hubness, source)


SCAN_FORMAT = 1
"""Version of the stored scan rows' layout (`ScanRows.dumps`); another one is never read (the vectors are)."""
_SCAN_MAGIC = b"docs-scan-rows\n"

_MAGIC = b"docs-vectors\n"
_KEY_CHARS = 16
"""Characters of a `text_key` (8 bytes, hex)."""


def neighbour_similarity(matrix: npt.NDArray[np.float32], neighbours: int) -> npt.NDArray[np.float32]:
    """Each row's mean cosine with its `neighbours` most similar other rows (unit rows; zeros when alone).

    Computed in blocks of rows (a block's products are rows x all rows), once per attached index: about 0.3 s for
    the four corpus sites together.
    """
    import numpy as np

    count = len(matrix)
    taken = min(neighbours, count - 1)
    out = np.zeros(count, dtype=np.float32)
    if taken < 1:
        return out
    for start in range(0, count, _BLOCK):
        block = matrix[start : start + _BLOCK] @ matrix.T
        rows = np.arange(len(block))
        block[rows, rows + start] = -np.inf  # not its own neighbour
        out[start : start + len(block)] = np.partition(block, count - taken, axis=1)[:, count - taken :].mean(axis=1)
    return out


_BLOCK = 512
"""Rows per block of `neighbour_similarity` (512 x 4,000 entries: 8 MB of products at a time)."""
