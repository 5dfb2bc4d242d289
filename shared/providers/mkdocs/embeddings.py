"""A site's stored entry embeddings: found for exactly its entries, or computed on the model's bulk lane and stored.

Stored vectors live under their own name (`shared.cache.vectors_name`: `embeddings/{site}/{model}.json`), so a
site's artifacts never collide with another site's index. The warm-up computes them once per index version for
every instance; an instance that finds none computes them in the background (see `sites.py`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass
from datetime import UTC, datetime

from shared.cache import CachedIndex, IndexStore, vectors_name
from shared.embedding import EmbeddingModel
from shared.errors import StoreError
from shared.providers.mkdocs.index import SiteIndex
from shared.providers.mkdocs.vectors import SiteVectors

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Stored:
    """What the store holds for a site: vectors for exactly this index (`current`), or any to reuse rows from."""

    current: SiteVectors | None
    reusable: SiteVectors | None
    version: str | None


async def read_stored(store: IndexStore, model: EmbeddingModel, site: str, index: SiteIndex) -> Stored:
    """The stored vectors of this model for the site; an unreadable store is the same as none stored."""
    try:
        stored = await store.read(vectors_name(site, model.model_id))
    except StoreError as exc:
        log.info("site %s: stored embeddings unreadable (%s); computing them", site, exc)
        return Stored(None, None, None)
    if stored is None:
        return Stored(None, None, None)
    found = await asyncio.to_thread(SiteVectors.loads, stored.payload, model.model_id)
    if found is not None and await asyncio.to_thread(found.matches, index.entries):
        return Stored(found, found, stored.version)
    return Stored(None, found, stored.version)


async def compute_and_store(
    store: IndexStore,
    model: EmbeddingModel,
    site: str,
    index: SiteIndex,
    *,
    reuse: SiteVectors | None,
    expected_version: str | None,
    stop: threading.Event | None = None,
) -> SiteVectors:
    """Embed the entries `reuse` does not cover (on the bulk lane), then store the result conditionally.

    Raises EmbeddingUnavailableError when the model cannot load; a storage failure only costs the next instance
    a recompute.
    """
    entries = index.entries
    vectors = await model.bulk(lambda encoder: SiteVectors.compute(encoder, entries, reuse=reuse, stop=stop))
    payload = await asyncio.to_thread(vectors.dumps, model.model_id)
    entry = CachedIndex(payload, datetime.now(UTC), entries=len(entries))
    try:
        await store.write(vectors_name(site, model.model_id), entry, expected_version=expected_version)
    except StoreError as exc:
        log.info("site %s: could not store the embeddings (%s)", site, exc)
    return vectors


async def ensure_vectors(
    store: IndexStore, model: EmbeddingModel, site: str, index: SiteIndex, *, reuse: SiteVectors | None = None
) -> tuple[SiteVectors, bool]:
    """The site's vectors for exactly this index, and whether any had to be computed (what the warm-up runs)."""
    stored = await read_stored(store, model, site, index)
    if stored.current is not None:
        return stored.current, False
    vectors = await compute_and_store(
        store, model, site, index, reuse=reuse or stored.reusable, expected_version=stored.version
    )
    return vectors, True
