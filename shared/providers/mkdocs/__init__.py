"""The MkDocs fallback provider: each site's published search index, location resolution and page fetch.

What the rest of the service uses of it is named here; its other modules are its own (`tests/test_architecture.py`).
"""

from shared.providers.mkdocs.fetching.pagecache import PageCache
from shared.providers.mkdocs.indexes.kinds import configured
from shared.providers.mkdocs.lifecycle.refresh import Refresher, blob_events, published_sites, warming
from shared.providers.mkdocs.lifecycle.sites import SiteRegistry
from shared.providers.mkdocs.lifecycle.warm import run_warmup
from shared.providers.mkdocs.provider import MkDocsProvider

__all__ = [
    "MkDocsProvider",
    "PageCache",
    "Refresher",
    "SiteRegistry",
    "blob_events",
    "configured",
    "published_sites",
    "run_warmup",
    "warming",
]
