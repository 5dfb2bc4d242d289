"""The encoder's rewritten graph kept on local disk: the next process on this machine loads the recorded bytes
instead of importing onnx and rewriting the weights again (`shared.model_graph`), which is what a cold start pays for.

A graph is kept only when it is exactly the one `data/model.json` records (`ModelRecord.graph_sha256`), and read back
only when it still is: whatever else the cache holds is never loaded, and is replaced. Instances share the graph
through the index store too (`shared.graph_sharing`), by the same file name (`graph_file`).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from shared.model_graph import int8_compute

if TYPE_CHECKING:
    from shared.model_record import ModelRecord

log = logging.getLogger(__name__)

GRAPH_CACHE = Path(tempfile.gettempdir()) / "docs-retrieval-graphs"
"""Where a process keeps the rewritten graph for the next one on this machine (any writable directory will do)."""


def graph_file(record: ModelRecord) -> str:
    """The rewritten graph's file name, in the local cache and the store alike; empty when it is not recorded."""
    return f"{record.model_id}-{record.graph_sha256[:16]}.onnx" if record.graph_sha256 else ""


def is_graph(record: ModelRecord, graph: bytes) -> bool:
    """Whether these are exactly the recorded graph's bytes."""
    return (
        bool(record.graph_sha256)
        and len(graph) == record.graph_size
        and hashlib.sha256(graph).hexdigest() == record.graph_sha256
    )


Signature = tuple[int, int, int]
"""A file's size, modification time (ns) and inode: a file this process checked, while these stay the same."""


@dataclass(frozen=True, slots=True)
class GraphCache:
    """A directory of rewritten graphs, and the rewrite that makes a graph it does not hold."""

    directory: Path = GRAPH_CACHE
    rewrite: Callable[[bytes], bytes] = int8_compute
    checked: dict[str, Signature] = field(default_factory=dict, compare=False, repr=False)
    """The graph files this process wrote or read back as the recorded bytes: not hashed again while unchanged (a
    cold instance fetches the graph, keeps it and loads it: one check, not three)."""

    def graph(self, record: ModelRecord, weights: Callable[[], bytes]) -> str | bytes:
        """What a session loads: the cached file's path when it holds the recorded graph, else the `weights` (read,
        and checked against the record, only then) rewritten, kept for the next process when they are the recorded
        graph (and then loaded from there too). A path, not the bytes, wherever it can be: onnxruntime keeps the
        bytes it is given for the session's lifetime (22 MB for MiniLM, on every instance), a file it reads and
        lets go."""
        path = self.holds(record)
        if path is not None:
            return path
        graph = self.rewrite(weights())
        if self.keep(record, graph):
            return str(self.directory / graph_file(record))
        if record.graph_sha256:
            log.warning("the rewritten model graph differs from data/model.json: it is used, never cached")
        return graph

    def holds(self, record: ModelRecord) -> str | None:
        """The cached file's path when it holds the recorded graph (read and hashed only when this process has not
        checked it as it is), else None."""
        name = graph_file(record)
        if not name:
            return None
        path = self.directory / name
        try:
            if self.checked.get(name) == _signature(os.stat(path)):
                return str(path)
        except OSError:
            return None
        return str(path) if self.cached(record) is not None else None

    def cached(self, record: ModelRecord) -> bytes | None:
        """The recorded graph from the cache, or None (absent, unreadable or not exactly the recorded bytes)."""
        name = graph_file(record)
        if not name:
            return None
        try:
            with (self.directory / name).open("rb") as file:
                graph = file.read()
                signature = _signature(os.fstat(file.fileno()))
        except OSError:
            return None
        if not is_graph(record, graph):
            return None
        self.checked[name] = signature
        return graph

    def keep(self, record: ModelRecord, graph: bytes) -> bool:
        """Put the recorded graph in the cache for the next process (written whole, then renamed); False when these
        are not its bytes or the cache cannot be written (the service works the same, only starts slower)."""
        if not is_graph(record, graph):
            return False
        name = graph_file(record)
        part = self.directory / f"{name}.{os.getpid()}.{threading.get_ident()}.part"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with part.open("wb") as file:
                file.write(graph)
                file.flush()
                signature = _signature(os.fstat(file.fileno()))
            os.replace(part, self.directory / name)  # a rename keeps the inode and the times
        except OSError as exc:
            log.info("the model graph was not cached (%s)", type(exc).__name__)
            with contextlib.suppress(OSError):
                part.unlink()
            return False
        self.checked[name] = signature
        return True


def _signature(stat: os.stat_result) -> Signature:
    return stat.st_size, stat.st_mtime_ns, stat.st_ino


LOCAL_GRAPHS = GraphCache()
"""The process's cache (`GRAPH_CACHE`, rewritten with `int8_compute`)."""
