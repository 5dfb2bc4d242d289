"""A prebuilt ranker's stored parts: the warm-up stores the page ranker and its code part for each index version
(`store_prebuilt`); a cold instance loads the page ranker (`loading.load_prebuilt`), and a site's first code search
reads the code part (`read_code_part`), so code blocks are held only where code is searched.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from shared import memory
from shared.cache import CopyStat, CopyStore, StoredCopy, code_ranking_name, index_name, ranking_name
from shared.errors import SiteUnavailableError, StoreError
from shared.providers.mkdocs.codeblocks import prebuilt
from shared.providers.mkdocs.codeblocks.code import CodeColumns
from shared.providers.mkdocs.indexes.index import parse_index
from shared.providers.mkdocs.indexes.kinds import PathWeights
from shared.providers.mkdocs.lifecycle.loading import RANKING_CODE, LoadedSite, Prebuilt, built_from, try_parse
from shared.providers.mkdocs.scoring import artifact
from shared.providers.mkdocs.scoring.ranking import Ranker
from shared.settings import IndexPolicy

log = logging.getLogger(__name__)


async def store_prebuilt(
    store: CopyStore,
    site: str,
    stat: CopyStat,
    read: Callable[[], Awaitable[StoredCopy | None]],
    weights: PathWeights,
) -> Prebuilt:
    """Build and store the ranker of the stored index version `stat` unless one for this version and code is there
    (decided from properties alone): built, current, or changed when `read` (the index's download) is no
    longer that version. Raises StoreError and IndexFormatError."""
    name, code_name = ranking_name(site), code_ranking_name(site)
    existing, code_existing = await asyncio.gather(store.stat(name), store.stat(code_name))
    made_from = built_from(stat)
    if (
        existing is not None
        and code_existing is not None
        and existing.built_from == code_existing.built_from == made_from
    ):
        return Prebuilt.CURRENT
    cached = await read()
    if cached is None or stat.digest is None or cached.digest != stat.digest:
        return Prebuilt.CHANGED
    digest, payload = stat.digest, cached.payload

    def prebuild() -> tuple[bytes, bytes]:
        parsed = parse_index(site, payload)
        ranker = artifact.dumps(Ranker.build(parsed, weights), parsed, index_digest=digest, code=RANKING_CODE)
        return ranker, prebuilt.code_dumps(parsed, index_digest=digest, code=RANKING_CODE)

    built, code_part = await asyncio.to_thread(prebuild)
    memory.trim()
    # The code part first: a page ranker of this version is never there without it.
    part = StoredCopy.derived(code_part, stat.fetched_at, built_from=made_from)
    await store.write(code_name, part, expected_version=code_existing.version if code_existing else None)
    entry = StoredCopy.derived(built, stat.fetched_at, built_from=made_from)
    written = await store.write(name, entry, expected_version=existing.version if existing else None)
    return Prebuilt.BUILT if written is not None else Prebuilt.CURRENT


async def read_code_part(store: CopyStore, loaded: LoadedSite, policy: IndexPolicy) -> None:
    """Fill a prebuilt site's code blocks (`CodeColumns`) if they are not read yet: from its stored code part for
    exactly this index version and code, else from the stored index copy it was built from, parsed again (a part
    missing or refused). Raises SiteUnavailableError when neither is there: the caller's code search goes on
    without the site's blocks, and a later one reads again."""
    columns = loaded.index.code
    if not isinstance(columns, CodeColumns) or columns.read:
        return
    site, digest, made_from = loaded.index.site, loaded.digest, f"{loaded.digest}/{RANKING_CODE}"
    try:
        kept = await store.read(code_ranking_name(site))
    except StoreError as exc:
        log.info("site %s: the code part is unreadable (%s)", site, type(exc).__name__)
        kept = None
    if kept is not None and kept.built_from == made_from:
        try:
            blocks, view = await asyncio.to_thread(
                prebuilt.code_loads, kept.payload, site=site, index_digest=digest, code=RANKING_CODE, count=len(columns)
            )
        except artifact.ArtifactError as exc:
            log.warning("site %s: the stored code part was refused (%s); reading the index", site, exc)
        else:
            if not columns.read:  # another search may have read them meanwhile
                columns.fill(blocks, view)
            return
    try:
        cached = await store.read(index_name(policy.file_name_template, site))
    except StoreError as exc:
        raise SiteUnavailableError(site, f"its code blocks could not be read ({type(exc).__name__})") from None
    parsed = await try_parse(site, cached, policy) if cached is not None and cached.digest == digest else None
    if parsed is None or len(parsed.code) != len(columns):
        raise SiteUnavailableError(site, "its code blocks could not be read (the index copy changed)")
    if not columns.read:
        columns.fill(parsed.code)
