"""Refreshes asked for by a publish (the hook, the queue): the warm-up's own per-site refresh, coalesced.

A publish must never be dropped, and a burst of publishes must not become a burst of refreshes. Per site there is
at most one refresh running and at most one queued behind it:

    request ──> queued run exists?  ── yes ──> join it
                      │ no
                      └──> queue one; its driver starts it once the running one is done
                           and MIN_GAP seconds have passed since that one started

A request joins the run that starts after it arrived, never one already under way (that one may have fetched the
origin before the publish landed): concurrent requests share one refresh, requests during a refresh share one
trailing refresh. Each run is `warm.warm_site`, exactly what the timer runs (conditional fetch, validation,
conditional write, page check, embeddings), and then this instance checks its store at once instead of at its
next interval; other instances see the new version within `Cache__CheckIntervalSeconds`.

An index uploaded before its pages (a publish still copying files) would have those pages recorded as missing and
hidden from searches until the next warm-up: after a refresh that changed the index and found pages missing, the
missing ones are checked again after `RECHECKS` seconds, until none is missing or the rechecks run out.

A run that outlasts the caller's wait is kept (`Runs`) and, once done, written to the store, so its outcome can be
read from any instance behind the same storage.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import unquote, urlsplit

from pydantic import ValidationError

from shared.cache import CopyStore, StoredCopy, refresh_run_name
from shared.embedding import EmbeddingModel
from shared.errors import StoreError
from shared.fetch import OriginClient
from shared.providers.mkdocs.fetching.unserved_check import page_check
from shared.providers.mkdocs.fetching.unserved_store import read_record
from shared.providers.mkdocs.lifecycle.loading import ZENSICAL_INDEX_PATH
from shared.providers.mkdocs.lifecycle.outcomes import Outcome, RunReport, RunState, SiteOutcome, Step
from shared.providers.mkdocs.lifecycle.sites import SiteRegistry
from shared.providers.mkdocs.lifecycle.versions import VERSIONS_PATH
from shared.providers.mkdocs.lifecycle.warm import warm_pages, warm_site, warmed_versions
from shared.settings import DocumentationSettings
from shared.site_key import SiteKey
from shared.validation import VERSION

log = logging.getLogger(__name__)

MIN_GAP = 5.0
"""Seconds between the starts of two refreshes of one site: a publish hook called right after a refresh waits this
long, so a pipeline calling once per uploaded file costs one refresh, not hundreds."""
RECHECKS = (30.0, 90.0, 270.0)
"""Seconds after a changed refresh at which pages it found missing are checked again (a publish still uploading)."""
KEPT_RUNS = 256
"""Runs kept in memory for their outcome; older ones are read from the store."""


@dataclass(slots=True)
class _Site:
    queued: asyncio.Future[SiteOutcome] | None = None
    driver: asyncio.Task[None] | None = None
    last_start: float = float("-inf")
    rechecks: asyncio.Task[None] | None = None


@dataclass(slots=True)
class Run:
    """One request's refresh of some sites: each site's outcome as its run finishes."""

    id: str
    started: datetime
    outcomes: dict[str, asyncio.Future[SiteOutcome]]
    kept: bool = False
    """Its outcome is written to the store once done (the caller was told to read it later)."""
    saved: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def done(self) -> bool:
        return all(future.done() for future in self.outcomes.values())

    def report(self) -> RunReport:
        """Each site's outcome so far, a site still refreshing as `running`."""
        return RunReport(
            run=self.id,
            status=RunState.DONE if self.done else RunState.RUNNING,
            started_at=self.started,
            sites={site: _outcome(future) for site, future in self.outcomes.items()},
        )


def _outcome(future: asyncio.Future[SiteOutcome]) -> SiteOutcome:
    if not future.done():
        return SiteOutcome(outcome=Outcome.RUNNING)
    if future.cancelled():
        return SiteOutcome(outcome=Outcome.FAILED, reason="the refresh was stopped (the instance shut down)")
    return future.result()


@dataclass(frozen=True, slots=True, kw_only=True)
class Warming:
    """What a refresh runs for one site, bound by the composition root to the warm-up's settings, origin client,
    store and model (`warm.warming`): the same steps as the warm-up timer's."""

    site: Callable[[str], Awaitable[SiteOutcome]]
    """The site's (or a version's) index brought up to date in the store: `warm.warm_site`."""
    versions: Callable[[str], Awaitable[list[str]]]
    """A versioned site's warm versions' keys: `warm.warmed_versions`."""
    pages: Callable[[str], Awaitable[Step]]
    """The stored index's pages checked against the origin again: `warm.warm_pages`."""


def warming(
    settings: DocumentationSettings, client: OriginClient, store: CopyStore, embedding: EmbeddingModel | None
) -> Warming:
    """The warm-up's steps for one site, bound to what this app serves from (`Warming`)."""

    async def site(name: str) -> SiteOutcome:
        check = page_check(client, settings)
        return await warm_site(client, settings, store, name, embedding=embedding, check=check)

    async def versions(name: str) -> list[str]:
        return await warmed_versions(client, settings, name)

    async def pages(name: str) -> Step:
        return await warm_pages(settings, store, name, page_check(client, settings))

    return Warming(site=site, versions=versions, pages=pages)


class Refresher:
    """Coalesced refreshes of this app's sites, on the store the app serves from."""

    def __init__(
        self,
        store: CopyStore,
        registry: SiteRegistry,
        *,
        sites: Sequence[str],
        site_wait: float,
        warming: Warming,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rechecks: Sequence[float] = RECHECKS,
    ) -> None:
        self._site_wait = site_wait
        """`Search__SiteWaitSeconds`: how long a refresh waits for this instance to serve the new copy."""
        self._warming = warming
        self._store = store
        self._registry = registry
        self._clock = clock
        self._sleep = sleep
        self._rechecks = tuple(rechecks)
        self._sites = {site: _Site() for site in sites}
        self._runs: OrderedDict[str, Run] = OrderedDict()
        self.started = 0
        """Refreshes started (tests and tools read it)."""

    def request(self, sites: Iterable[str]) -> Run:
        """Queue (or join) a refresh of each site; the run's outcomes complete as they finish. Sites must be
        configured ones (the caller checked them)."""
        outcomes = {site: self._queue(site) for site in dict.fromkeys(sites)}
        run = Run(uuid.uuid4().hex, datetime.now(UTC), outcomes)
        self._runs[run.id] = run
        while len(self._runs) > KEPT_RUNS:
            self._runs.popitem(last=False)
        return run

    def keep(self, run: Run) -> None:
        """The caller was answered before the run finished: write its outcome to the store once it has one."""
        if run.kept:
            return
        run.kept = True
        run.saved = asyncio.create_task(self._save(run), name=f"refresh run {run.id}")

    async def outcome(self, run_id: str) -> RunReport | None:
        """A run's report: from this instance while it keeps it, else as the store recorded it; None if unknown."""
        run = self._runs.get(run_id)
        if run is not None:
            return run.report()
        try:
            stored = await self._store.read(refresh_run_name(run_id))
        except StoreError as exc:
            log.info("refresh run outcome unreadable (%s)", type(exc).__name__)
            return None
        if stored is None:
            return None
        try:
            report = RunReport.model_validate_json(stored.payload)
        except ValidationError:
            return None
        return report.model_copy(update={"recorded": True})

    async def _save(self, run: Run) -> None:
        await asyncio.gather(*run.outcomes.values(), return_exceptions=True)
        payload = json.dumps(run.report().model_dump(mode="json", by_alias=True), sort_keys=True).encode()
        entry = StoredCopy(payload=payload, fetched_at=datetime.now(UTC))
        try:
            await self._store.write(refresh_run_name(run.id), entry, expected_version=None)
        except StoreError as exc:
            log.warning("could not record the outcome of a refresh run (%s)", type(exc).__name__)

    def _queue(self, site: str) -> asyncio.Future[SiteOutcome]:
        state = self._sites.setdefault(site, _Site())  # a versioned site's version (`site@version`) on first use
        if state.queued is None:
            state.queued = asyncio.get_running_loop().create_future()
        queued = state.queued
        if state.driver is None or state.driver.done():
            state.driver = asyncio.create_task(self._drive(site, state), name=f"refresh {site}")
        return queued

    async def _drive(self, site: str, state: _Site) -> None:
        """Start the site's queued refreshes one after another, MIN_GAP apart, until none is queued."""
        while state.queued is not None:
            wait = state.last_start + MIN_GAP - self._clock()
            if wait > 0:
                await self._sleep(wait)
            future, state.queued = state.queued, None
            state.last_start = self._clock()
            self.started += 1
            if state.rechecks is not None:
                state.rechecks.cancel()  # this refresh checks every page again
                state.rechecks = None
            try:
                outcome = await self._refresh(site)
            except asyncio.CancelledError:
                future.cancel()
                raise
            except Exception as exc:  # one site's refresh must never end the driver with callers waiting
                log.exception("refresh %s failed", site)
                outcome = SiteOutcome(outcome=Outcome.FAILED, reason=f"the refresh failed ({type(exc).__name__})")
            if not future.done():
                future.set_result(outcome)
            if outcome.outcome is Outcome.CHANGED and self._rechecks:
                state.rechecks = asyncio.create_task(self._recheck(site), name=f"recheck {site}")

    async def _refresh(self, site: str) -> SiteOutcome:
        outcome = await self._warming.site(site)
        if outcome.failed and outcome.status in (404, 410) and SiteKey.parse(site).version is None:
            # A versioned site has no index of its own: its warm versions are refreshed, the default's outcome kept.
            keys = await self._warming.versions(site)
            if keys:
                versions = [await self._refresh(key) for key in keys]
                said = ", ".join(
                    f"{SiteKey.parse(key).version} {each.outcome}" for key, each in zip(keys, versions, strict=True)
                )
                return versions[0].model_copy(update={"detail": f"versions: {said}"})
        if SiteKey.parse(site).version is not None:
            self._registry.add_version(site)
        if not outcome.failed:
            # This instance serves the new version before the refresh is reported done, so the caller's next search
            # here finds it (not at the next check interval); a check slower than the per-site wait finishes in the
            # background, as any request's would.
            self._registry.check_soon(site)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._registry.checked(site), self._site_wait)
        log.info("refresh %s: %s", site, outcome.outcome)
        return outcome

    async def _recheck(self, site: str) -> None:
        """Check the pages the changed index's record hides again, until none is hidden or the rechecks run out."""
        for delay in self._rechecks:
            try:
                record = (await read_record(self._store, site)).record
            except StoreError:
                record = None
            if record is not None and not record.hidden:
                return
            await self._sleep(delay)
            pages = await self._warming.pages(site)
            log.info("refresh %s: pages checked again: %s", site, pages)
            self._registry.check_soon(site)

    async def idle(self) -> None:
        """Wait until no refresh, recheck or outcome write is running or queued (tests and tools use it)."""
        while True:
            tasks = [t for state in self._sites.values() for t in (state.driver, state.rechecks) if t is not None]
            tasks += [run.saved for run in self._runs.values() if run.saved is not None]
            pending = [task for task in tasks if not task.done()]
            if not pending:
                return
            await asyncio.gather(*pending, return_exceptions=True)

    async def aclose(self) -> None:
        """Stop refreshes still running or queued; their callers are told the instance shut down."""
        tasks = [task for state in self._sites.values() for task in (state.driver, state.rechecks) if task is not None]
        tasks += [run.saved for run in self._runs.values() if run.saved is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for state in self._sites.values():
            if state.queued is not None and not state.queued.done():
                state.queued.cancel()


def published_sites(settings: DocumentationSettings, blob: str) -> list[str]:
    """The sites whose search index a blob written to the docs container is: the blob's path equals the index's
    path under the origin, or ends with it after a `/` (an origin serving a folder of the container); the longest
    match wins, so a site published at the origin's root never claims another site's index."""
    blob = unquote(blob).strip("/")
    root = urlsplit(settings.origin).path.strip("/")
    matches: list[tuple[int, str]] = []
    for site in settings.sites:
        published = [settings.index_url(site)]
        if site not in settings.search_index_overrides:  # a Zensical build of the site publishes this instead
            published.append(settings.base_url(site) + ZENSICAL_INDEX_PATH)
        for url in published:
            path = unquote(urlsplit(url).path).strip("/")
            relative = path[len(root) :].strip("/") if root and path.startswith(root + "/") else path
            for candidate in dict.fromkeys((path, relative)):
                if blob == candidate or blob.endswith("/" + candidate):
                    matches.append((len(candidate), site))
    if not matches:
        return _published_version(settings, blob, root)
    longest = max(length for length, _ in matches)
    return sorted({site for length, site in matches if length == longest})


def _published_version(settings: DocumentationSettings, blob: str, root: str) -> list[str]:
    """A version's index of a versioned site (`{site}/{version}/search/search_index.json`, or Zensical's
    `search.json`) as that version's key; nothing for any other blob."""
    relative = blob[len(root) :].strip("/") if root and blob.startswith(root + "/") else blob
    if relative.endswith(VERSIONS_PATH):  # a new versions.json (a release, a new default): the site's versions
        site = settings.site_named(relative[: -len(VERSIONS_PATH)].strip("/").rpartition("/")[2])
        return [site] if site is not None else []
    for ending in (settings.search_index_path, ZENSICAL_INDEX_PATH):
        if not relative.endswith(ending):
            continue
        head, _, version = relative[: -len(ending)].strip("/").rpartition("/")
        site = settings.site_named(head.rpartition("/")[2]) if head else None
        if site is not None and VERSION.fullmatch(version) and version not in (".", ".."):
            return [SiteKey.of(site, version)]
    return []


BLOB_CREATED = "Microsoft.Storage.BlobCreated"
SUBJECT_BLOB = "/blobs/"


def blob_events(body: bytes | str) -> list[str]:
    """The blob names of the `BlobCreated` events in a queue message Event Grid delivered (one event, or a list;
    Event Grid or CloudEvents schema); anything else is ignored. Raises ValueError when the message is not JSON."""
    events = json.loads(body)
    blobs: list[str] = []
    for event in events if isinstance(events, list) else [events]:
        if not isinstance(event, dict):
            continue
        kind = event.get("eventType") or event.get("type")
        subject = event.get("subject")
        if kind != BLOB_CREATED or not isinstance(subject, str) or SUBJECT_BLOB not in subject:
            continue
        blobs.append(subject.split(SUBJECT_BLOB, 1)[1])
    return blobs
