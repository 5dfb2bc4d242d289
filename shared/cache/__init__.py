"""Where copies of each site's index and its artifacts live between loads: blob storage shared by every instance,
or memory when no storage is configured."""

from shared.cache.configured import open_store
from shared.cache.memory import MemoryStore
from shared.cache.names import (
    code_ranking_name,
    graph_name,
    index_name,
    missing_name,
    pieces_name,
    ranking_name,
    refresh_run_name,
    scan_name,
    vectors_name,
)
from shared.cache.store import CopyStat, CopyStore, StoredCopy, StoreHealth, StoreStatus, store_newest

__all__ = [
    "CopyStat",
    "CopyStore",
    "MemoryStore",
    "StoreHealth",
    "StoreStatus",
    "StoredCopy",
    "code_ranking_name",
    "graph_name",
    "index_name",
    "missing_name",
    "open_store",
    "pieces_name",
    "ranking_name",
    "refresh_run_name",
    "scan_name",
    "store_newest",
    "vectors_name",
]
