"""The encoder's rewritten graph shared through the index store: the first instance to rewrite it shares the recorded
bytes, and the others fetch them into their local cache (`shared.graphs`) before loading the model, so only one
instance pays for the rewrite (`shared.compose` fetches before the query encoder loads and shares after; the warm-up
shares the graph its run loaded). Neither ever raises: without them the model loads all the same, only slower.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

from shared.cache import CopyStore, StoredCopy, graph_name
from shared.embedding import MINILM, ModelRecord
from shared.graphs import LOCAL_GRAPHS, GraphCache, graph_file

log = logging.getLogger(__name__)


async def fetch_graph(store: CopyStore, record: ModelRecord = MINILM, graphs: GraphCache = LOCAL_GRAPHS) -> bool:
    """Put the model's rewritten graph in the local cache from the store, unless the cache has it or the store's
    copy is not the recorded one; True when it was fetched."""
    name = graph_file(record)
    if not name:
        return False
    try:
        if await asyncio.to_thread(graphs.holds, record) is not None:
            return False
        found = await store.read(graph_name(name))
        # `keep` takes only the recorded bytes: checked once, off the event loop.
        return found is not None and await asyncio.to_thread(graphs.keep, record, found.payload)
    except Exception as exc:  # the model loads all the same, only slower
        log.info("the shared model graph was not fetched (%s)", type(exc).__name__)
        return False


async def share_graph(store: CopyStore, record: ModelRecord = MINILM, graphs: GraphCache = LOCAL_GRAPHS) -> bool:
    """Put the local cache's rewritten graph in the store for other instances, unless it has one; True when it was
    written."""
    name = graph_file(record)
    if not name:
        return False
    try:
        if await store.stat(graph_name(name)) is not None:
            return False
        graph = await asyncio.to_thread(graphs.cached, record)
        if graph is None:
            return False
        shared = StoredCopy(graph, fetched_at=datetime.now(UTC))
        return await store.write(graph_name(name), shared, expected_version=None) is not None
    except Exception as exc:
        log.info("the model graph was not shared (%s)", type(exc).__name__)
        return False
