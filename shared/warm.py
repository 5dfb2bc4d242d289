"""The scheduled warm-up: refresh every site's cached index from the origin with conditional requests."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from datetime import UTC, datetime

from shared.cache import IndexStore
from shared.errors import OriginError
from shared.fetch import OriginClient
from shared.mkdocs.index import IndexFormatError
from shared.mkdocs.sites import fetch_index
from shared.settings import DocumentationSettings

log = logging.getLogger(__name__)

REFRESHED, UNCHANGED, FAILED = "refreshed", "unchanged", "failed"


async def warm_site(
    client: OriginClient, settings: DocumentationSettings, store: IndexStore, site: str
) -> dict[str, str]:
    """One site's refresh: 304 touches the metadata, 200 is validated and written, anything else fails."""
    try:
        cached = await store.read(site)
    except Exception as exc:
        log.info("warm-up %s: cached copy unreadable (%s)", site, type(exc).__name__)
        cached = None
    try:
        fetched = await fetch_index(client, settings, site, conditional=cached)
    except (OriginError, IndexFormatError) as exc:
        return {"outcome": FAILED, "reason": str(exc)}
    try:
        if fetched is None and cached is not None and cached.version is not None:
            written = await store.touch(site, datetime.now(UTC), expected_version=cached.version)
            return {"outcome": UNCHANGED} if written else {"outcome": UNCHANGED, "note": "another writer was first"}
        assert fetched is not None
        expected = cached.version if cached else None
        written = await store.write(site, replace(fetched.entry), expected_version=expected)
    except Exception as exc:
        return {"outcome": FAILED, "reason": f"cache write failed: {type(exc).__name__}"}
    return {"outcome": REFRESHED} if written else {"outcome": UNCHANGED, "note": "another writer was first"}


async def warm_all(settings: DocumentationSettings, store: IndexStore) -> dict[str, dict[str, str]]:
    """Refresh every configured site concurrently; one site's failure never stops the others."""
    async with OriginClient(settings.origin) as client:
        outcomes = await asyncio.gather(*(warm_site(client, settings, store, site) for site in settings.sites))
    report = dict(zip(settings.sites, outcomes, strict=True))
    for site, outcome in report.items():
        level = logging.WARNING if outcome["outcome"] == FAILED else logging.INFO
        log.log(level, "warm-up %s: %s %s", site, outcome["outcome"], outcome.get("reason", ""))
    counts = {kind: sum(1 for item in outcomes if item["outcome"] == kind) for kind in (REFRESHED, UNCHANGED, FAILED)}
    log.info(
        "warm-up done: %d refreshed, %d unchanged, %d failed", counts[REFRESHED], counts[UNCHANGED], counts[FAILED]
    )
    return report
