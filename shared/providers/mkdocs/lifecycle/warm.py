"""The scheduled warm-up: refresh every site's cached index from the origin with conditional requests.

Per site: read the stored copy's properties (not its payload), send a conditional GET with the validators the
origin gave last time, and then
    304       record in the metadata that the origin vouched for the copy again (no upload)   -> unchanged
    200       validate (parses, has entries) and write it, conditionally                      -> changed
              (or -> unchanged when the content is the same as the stored copy's)
    failure   leave the stored copy alone                                                      -> failed, reason
Each outcome (`outcomes.SiteOutcome`) but a failure carries `fetchedAt`: when the origin last vouched for the
copy the store now holds.
One site's failure never stops the others. With shared storage, the stored index version's pages are then
checked against the origin unless its missing-pages record is already complete (`pagecheck`: bounded
concurrency, conditional requests, a time budget), and what is found is merged into the record beside the index,
so every instance leaves those pages out of its searches (`pages` in the report: checked, partial, current, or
why not). With semantic matching on (an embedding model given) and shared storage, a site whose stored index
has no embeddings from this model for exactly its entries gets them computed here (only entries whose text
changed since the stored ones, on the process's one bulk embedding lane, shared with the requests' own embedding
work) and stored, so serving instances load them instead of computing them (`semantic` in the report: computed,
current, or why not). With shared storage, the stored index version's code pages have their raw Markdown read
for the languages their fences name (`languages.py`), stored once per index version (`code` in the report).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from datetime import UTC, datetime
from functools import partial

from shared.cache import CopyStore, StoreHealth, index_name, open_store, store_newest
from shared.embedding import MINILM, EmbeddingModel
from shared.errors import EmbeddingUnavailableError, IndexFormatError, OriginError, StoreError, VersionsError
from shared.fetch import OriginClient
from shared.graph_sharing import share_graph
from shared.providers.mkdocs.codeblocks.languages import fences_stored, keep_fences, read_fences
from shared.providers.mkdocs.fetching.pages import raw_markdown_url
from shared.providers.mkdocs.fetching.unserved import MissingRecord, start
from shared.providers.mkdocs.fetching.unserved_check import PageCheck, page_check
from shared.providers.mkdocs.fetching.unserved_store import read_record, save
from shared.providers.mkdocs.indexes.index import parse_index
from shared.providers.mkdocs.indexes.kinds import configured
from shared.providers.mkdocs.lifecycle.loading import Prebuilt, fetch_index
from shared.providers.mkdocs.lifecycle.outcomes import Outcome, SiteOutcome, Step, StepState
from shared.providers.mkdocs.lifecycle.parts import store_prebuilt
from shared.providers.mkdocs.lifecycle.versions import Versions
from shared.providers.mkdocs.scoring.stored_vectors import ensure_vectors, scan_stored
from shared.settings import DocumentationSettings

log = logging.getLogger(__name__)

NO_STORED_INDEX = Step(state=StepState.SKIPPED, detail="no stored index")
CHANGED_MEANWHILE = Step(state=StepState.SKIPPED, detail="the stored index changed meanwhile; checked again next time")


async def warm_site(
    client: OriginClient,
    settings: DocumentationSettings,
    store: CopyStore,
    site: str,
    *,
    embedding: EmbeddingModel | None = None,
    check: PageCheck | None = None,
) -> SiteOutcome:
    """One site's refresh, then its pages and embeddings; never raises for an origin or storage failure, it
    reports them. `check` is the warm-up's page check, shared by its sites (one lane of requests)."""
    outcome = await _warm_index(client, settings, store, site)
    if outcome.failed:
        return outcome
    ranker = await warm_ranker(settings, store, site)
    pages = await warm_pages(settings, store, site, check or page_check(client, settings))
    code = await warm_fences(client, settings, store, site)
    semantic = await warm_vectors(settings, store, site, embedding) if embedding is not None else None
    return outcome.model_copy(update={"ranker": ranker, "pages": pages, "semantic": semantic, "code": code})


async def warm_fences(client: OriginClient, settings: DocumentationSettings, store: CopyStore, site: str) -> Step:
    """Make sure the stored index version's code blocks have their languages from the Markdown's fences stored
    (`languages.py`), so no instance reads every code page itself; read, current, or why not. Never raises; only
    counts are reported."""
    if not store.shared:
        return Step(state=StepState.SKIPPED, detail="no shared storage to keep them in")
    name = index_name(settings.cache_file_name_template, site)
    try:
        stat = await store.stat(name)
        if stat is None or stat.digest is None:
            return NO_STORED_INDEX
        if await fences_stored(store, site, stat.digest):
            return Step(state=StepState.CURRENT)  # decided from properties: nothing downloaded
        cached = await store.read(name)
        if cached is None:
            return NO_STORED_INDEX
        index = await asyncio.to_thread(parse_index, site, cached.payload)
        url = partial(raw_markdown_url, settings.site_map, settings.raw_markdown_url_pattern)
        found, complete = await read_fences(client, url, site, index)
        pages = len({block.page for block in index.code})
        if not complete:
            return Step(state=StepState.PARTIAL, detail=f"{len(found)} of {pages} code pages read; the rest next time")
        await keep_fences(store, site, cached.digest, found)
    except (StoreError, IndexFormatError) as exc:
        return Step(state=StepState.FAILED, detail=str(exc))
    except Exception as exc:  # one site's fences must not cost the other sites their warm-up
        log.exception("warm-up %s: reading its code fences failed", site)
        return Step(state=StepState.FAILED, detail=type(exc).__name__)
    return Step(state=StepState.CHECKED, detail=f"{len(index.code)} code blocks on {pages} pages")


async def warm_ranker(settings: DocumentationSettings, store: CopyStore, site: str) -> Step:
    """Make sure the stored index version has its prebuilt ranker (`artifact`), so cold instances load it instead
    of parsing and building; built, current, or why not. Never raises."""
    if not store.shared:
        return Step(state=StepState.SKIPPED, detail="no shared storage to keep it in")
    name = index_name(settings.cache_file_name_template, site)
    try:
        stat = await store.stat(name)
        if stat is None or not stat.complete:
            return NO_STORED_INDEX
        weights = configured(settings.search.path_weights, tuple(settings.sites))
        built = await store_prebuilt(store, site, stat, lambda: store.read(name), weights)
    except (StoreError, IndexFormatError) as exc:
        return Step(state=StepState.FAILED, detail=str(exc))
    except Exception as exc:  # one site's prebuild must not cost the other sites their warm-up
        log.exception("warm-up %s: prebuilding its ranker failed", site)
        return Step(state=StepState.FAILED, detail=type(exc).__name__)
    if built is Prebuilt.CHANGED:
        return Step(state=StepState.SKIPPED, detail="the stored index changed meanwhile; built next time")
    return Step(state=StepState(built.value))


async def warm_vectors(settings: DocumentationSettings, store: CopyStore, site: str, model: EmbeddingModel) -> Step:
    """Make sure the stored index has stored embeddings; computed, current, or why not. Never raises."""
    if not store.shared:
        return Step(state=StepState.SKIPPED, detail="no shared storage to keep them in")
    try:
        name = index_name(settings.cache_file_name_template, site)
        stat = await store.stat(name)
        if stat is not None and stat.digest is not None and await scan_stored(store, model, site, stat.digest):
            return Step(state=StepState.CURRENT)  # decided from properties: nothing downloaded
        cached = await store.read(name)
        if cached is None:
            return NO_STORED_INDEX
        index = await asyncio.to_thread(parse_index, site, cached.payload)
        _, computed = await ensure_vectors(store, model, site, index, digest=cached.digest)
    except (StoreError, IndexFormatError, EmbeddingUnavailableError) as exc:
        return Step(state=StepState.FAILED, detail=str(exc))
    except Exception as exc:  # one site's embedding must not cost the other sites their warm-up
        log.exception("warm-up %s: embedding failed", site)
        return Step(state=StepState.FAILED, detail=type(exc).__name__)
    return Step(state=StepState.COMPUTED if computed else StepState.CURRENT)


async def warm_pages(settings: DocumentationSettings, store: CopyStore, site: str, check: PageCheck) -> Step:
    """Check the stored index version's pages unless its record is complete (then only the pages it hides, which
    may have come back); what was found, or why not.

    Never raises. Only counts are reported: page paths stay out of reports and logs.
    """
    if not store.shared:
        return Step(state=StepState.SKIPPED, detail="no shared storage to keep the record in")
    name = index_name(settings.cache_file_name_template, site)
    try:
        stat = await store.stat(name)
        previous = (await read_record(store, site)).record
        if stat is not None and previous is not None and previous.index == stat.digest and previous.complete:
            if not previous.hidden:
                return _missing(StepState.CURRENT, previous)
            again = await check.again(site, previous)  # pages it hides may have come back; no index download
            if again == previous:
                return _missing(StepState.CURRENT, previous)
            saved = await save(store, site, again, index_name=name)
            if saved is None:
                return CHANGED_MEANWHILE
            return _missing(StepState.CURRENT, saved.record or again)
        cached = await store.read(name)
        if cached is None:
            return NO_STORED_INDEX
        index = await asyncio.to_thread(parse_index, site, cached.payload)
        checked = await check.site(site, index, start(previous, cached.digest))
        saved = await save(store, site, checked, index_name=name)
    except (StoreError, IndexFormatError) as exc:
        return Step(state=StepState.FAILED, detail=str(exc))
    except Exception as exc:  # one site's check must not cost the other sites their warm-up
        log.exception("warm-up %s: checking its pages failed", site)
        return Step(state=StepState.FAILED, detail=type(exc).__name__)
    if saved is None:
        return CHANGED_MEANWHILE
    return _pages_summary(checked, saved.record or checked, len(index.pages))


def _missing(state: StepState, record: MissingRecord) -> Step:
    return Step(state=state, detail=f"{len(record.hidden)} missing")


def _pages_summary(checked: MissingRecord, stored: MissingRecord, pages: int) -> Step:
    if checked.complete:
        return _missing(StepState.CHECKED, stored)
    decided = len(checked.checked | checked.missing)
    detail = f"{decided} of {pages} pages decided, {len(stored.hidden)} missing; the rest next time"
    return Step(state=StepState.PARTIAL, detail=detail)


async def _warm_index(
    client: OriginClient, settings: DocumentationSettings, store: CopyStore, site: str
) -> SiteOutcome:
    name = index_name(settings.cache_file_name_template, site)
    try:
        stat = await store.stat(name)
    except StoreError as exc:
        return SiteOutcome(outcome=Outcome.FAILED, reason=f"cache storage unavailable: {exc}")
    # Validators are trusted only from a copy this service wrote; anything else is fetched whole and replaced.
    conditional = stat if stat is not None and stat.complete else None
    try:
        fetched = await fetch_index(client, settings.index_policy, site, conditional=conditional)
    except OriginError as exc:
        return SiteOutcome(outcome=Outcome.FAILED, reason=str(exc), status=exc.status or None)
    except IndexFormatError as exc:
        reason = f"the origin's index is invalid ({exc}); the cached copy is kept"
        return SiteOutcome(outcome=Outcome.FAILED, reason=reason)
    try:
        if fetched is None:
            assert stat is not None  # a 304 only answers a conditional request
            now = datetime.now(UTC)
            touched = await store.touch(name, now, expected_version=stat.version)
            if touched:
                return SiteOutcome(
                    outcome=Outcome.UNCHANGED, detail="origin answered 304; metadata refreshed", fetched_at=now
                )
            detail = "another instance refreshed it first"
            return SiteOutcome(outcome=Outcome.UNCHANGED, detail=detail, fetched_at=await _stored_at(store, name))
        written = await store_newest(store, name, fetched.entry, expected_version=stat.version if stat else None)
        entries = fetched.entry.entries
        if written is None:
            return SiteOutcome(
                outcome=Outcome.UNCHANGED,
                detail="another instance wrote a copy at least as new",
                entries=entries,
                fetched_at=await _stored_at(store, name),
            )
    except StoreError as exc:
        return SiteOutcome(outcome=Outcome.FAILED, reason=f"cache write failed: {exc}")
    at = fetched.entry.fetched_at
    if stat is not None and stat.digest == fetched.entry.digest:
        detail = "same content; validators refreshed"
        return SiteOutcome(outcome=Outcome.UNCHANGED, detail=detail, entries=entries, fetched_at=at)
    return SiteOutcome(outcome=Outcome.CHANGED, entries=entries, fetched_at=at)


async def _stored_at(store: CopyStore, name: str) -> datetime | None:
    """When the origin vouched for the copy another instance left in the store."""
    stat = await store.stat(name)
    return stat.fetched_at if stat is not None else None


async def warm_all(
    settings: DocumentationSettings,
    store: CopyStore,
    *,
    embedding: EmbeddingModel | None = None,
    client: OriginClient | None = None,
) -> dict[str, SiteOutcome]:
    """Refresh every configured site concurrently; each outcome is logged and counted."""
    if not store.shared:
        log.warning("warm-up: no storage is configured, so the refreshed copies are not shared with any instance")
    own_client = client is None
    origin = client or OriginClient(settings.origin)
    check = page_check(origin, settings)
    try:
        outcomes = await asyncio.gather(
            *(warm_site(origin, settings, store, site, embedding=embedding, check=check) for site in settings.sites)
        )
        report = dict(zip(settings.sites, outcomes, strict=True))
        # A site without an index of its own may be versioned: its default and newest versions are warmed as sites.
        keys = [
            key
            for site, outcome in report.items()
            if outcome.failed and outcome.status in (404, 410)  # no index of its own, not an outage
            for key in await warmed_versions(origin, settings, site)
        ]
        more = await asyncio.gather(
            *(warm_site(origin, settings, store, key, embedding=embedding, check=check) for key in keys)
        )
        report.update(zip(keys, more, strict=True))
        outcomes = [*outcomes, *more]
    finally:
        if own_client:
            await origin.aclose()
    if embedding is not None and embedding.model_id == MINILM.model_id:
        await share_graph(store)  # the rewritten graph this run loaded, for the instances that serve
    for site, outcome in report.items():
        if outcome.failed:
            log.warning("warm-up %s: failed: %s", site, outcome.reason)
        else:
            log.info("warm-up %s: %s %s", site, outcome.outcome, outcome.detail or "")
        if outcome.pages is not None:
            log.info("warm-up %s: pages %s", site, outcome.pages)
        if outcome.semantic is not None:
            log.info("warm-up %s: embeddings %s", site, outcome.semantic)
        if outcome.code is not None:
            log.info("warm-up %s: code languages %s", site, outcome.code)
    counts = Counter(outcome.outcome for outcome in outcomes)
    log.info(
        "warm-up done: %d changed, %d unchanged, %d failed",
        counts[Outcome.CHANGED],
        counts[Outcome.UNCHANGED],
        counts[Outcome.FAILED],
    )
    return report


async def warmed_versions(client: OriginClient, settings: DocumentationSettings, site: str) -> list[str]:
    """The keys of a versioned site's versions the warm-up keeps warm: its default, then the newest `WarmVersions`
    other visible ones (`versions.json` lists the newest first); none for a plain site or a refused
    `versions.json`."""
    try:
        versions = await Versions(client, sites=settings.site_map, defaults=settings.version_defaults).of(site)
    except VersionsError as exc:
        log.warning("warm-up %s: versions.json refused: %s", site, exc)
        return []
    if versions is None:
        return []
    newest = [version.name for version in versions.visible() if version.name != versions.default]
    return [versions.key(name) for name in (versions.default, *newest[: settings.warm_versions])]


async def run_warmup(
    settings: DocumentationSettings,
    *,
    embedding: EmbeddingModel | None,
    store: CopyStore | None = None,
    client: OriginClient | None = None,
) -> tuple[StoreHealth, dict[str, SiteOutcome]]:
    """One warm-up, as the timer and `python -m shared warm` run it: over the service's own store and origin client
    when given (the timer, beside the running service), else over ones opened for it and closed after.

    `embedding` is the process's model (None: semantic matching is off). Returns the store's description (taken
    after the run, so it reflects reachability) and the per-site report.
    """
    owned = store is None
    if store is None:
        store = open_store(settings)
    try:
        report = await warm_all(settings, store, embedding=embedding, client=client)
        return store.describe(), report
    finally:
        if owned:
            await store.aclose()
