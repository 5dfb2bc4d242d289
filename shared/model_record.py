"""The embedding model's record: where its files are, the SHA-256 each must have, and the id of the vectors it
computes (`data/model.json`, read once per process).
"""

from __future__ import annotations

import hashlib
import importlib
import json
from dataclasses import dataclass
from pathlib import Path

from shared.errors import EmbeddingUnavailableError
from shared.model_graph import REWRITE

RECORD = Path(__file__).parent / "data" / "model.json"
MAX_TOKENS = 128
"""Word pieces embedded per index entry, special tokens included: a heading plus its opening paragraph. 128 ranks
better than 64 (hit@1 0.601 -> 0.614, hit@5 0.856 -> 0.861 over the 770 development questions, `tools/tune.py`;
256 adds nothing) for about 1.6-1.9x the warm-up's embedding time (`tools/embed_cost.py`)."""


@dataclass(frozen=True, slots=True)
class ModelRecord:
    """What `data/model.json` says about the model: where its files are and the SHA-256 each must have."""

    name: str
    dimensions: int
    package: str
    """The installed package whose directory holds the weights file."""
    file: str
    sha256: str
    size: int
    tokenizer: Path
    tokenizer_sha256: str
    graph_sha256: str = ""
    """The SHA-256 of the rewritten graph (`shared.model_graph`) of this model; empty: never cached."""
    graph_size: int = 0

    @classmethod
    def read(cls, path: Path = RECORD) -> ModelRecord:
        document = json.loads(path.read_text(encoding="utf-8"))
        weights, tokenizer = document["weights"], document["tokenizer"]
        graph = document.get("graph") or {}
        return cls(
            document["name"],
            int(document["dimensions"]),
            weights["package"],
            weights["file"],
            weights["sha256"],
            int(weights["size"]),
            path.parent / tokenizer["file"],
            tokenizer["sha256"],
            graph.get("sha256", "") if graph.get("rewrite") == REWRITE else "",
            int(graph.get("size", 0)),
        )

    @property
    def model_id(self) -> str:
        """Names the vectors this model computes: vectors of another file, graph rewrite or token budget are never
        mixed with its own."""
        return f"{self.name}-{self.sha256[:8]}-q8r{REWRITE}-t{MAX_TOKENS}"

    def verified(self) -> tuple[bytes, Path]:
        """The weights' bytes and the tokenizer's path, both checked against the record."""
        return self.weights(), self.checked_tokenizer()

    def weights(self) -> bytes:
        """The installed weights' bytes, checked against the record (read only when the graph must be rewritten:
        a cached recorded graph is exactly what they would make)."""
        package = importlib.import_module(self.package)
        content = (Path(package.__file__ or ".").parent / self.file).read_bytes()
        if len(content) != self.size or hashlib.sha256(content).hexdigest() != self.sha256:
            raise EmbeddingUnavailableError(
                f"the installed {self.file} does not have the size and SHA-256 in data/model.json"
            )
        return content

    def checked_tokenizer(self) -> Path:
        """The tokenizer's path, its file checked against the record."""
        if hashlib.sha256(self.tokenizer.read_bytes()).hexdigest() != self.tokenizer_sha256:
            raise EmbeddingUnavailableError("the tokenizer does not have the SHA-256 in data/model.json")
        return self.tokenizer


MINILM = ModelRecord.read()
MINILM_ID = MINILM.model_id
