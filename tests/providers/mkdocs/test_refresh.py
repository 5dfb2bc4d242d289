"""Publish refreshes: coalesced per site, never dropped, the warm-up's own refresh, pages raced by an upload checked
again, outcomes kept for callers who stopped waiting; and the mapping from a written blob to its site.

The coalescing tests replace only the refresh itself with one the test releases by hand (the queueing around it is
what is tested); the others run the real refresh against the fixture origin and Azurite."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from shared.cache import MemoryStore, index_name
from shared.compose import refresher_of, site_registry
from shared.fetch import OriginClient
from shared.providers.mkdocs.fetching.unserved_store import read_record
from shared.providers.mkdocs.lifecycle.outcomes import Outcome, RunState, SiteOutcome
from shared.providers.mkdocs.lifecycle.refresh import MIN_GAP, Refresher, blob_events, published_sites, warming
from shared.providers.mkdocs.lifecycle.sites import SiteRegistry
from shared.settings import DocumentationSettings
from tests.support.clock import Clock
from tests.support.sites import ROOTED_OVERRIDE, fixture_settings
from tests.support.stores import CountingStore
from tools.static_origin import StaticOrigin


class Released(Refresher):
    """A refresher whose refreshes finish when the test says, on a clock the test moves."""

    def __init__(self, settings: DocumentationSettings, client: OriginClient, clock: Clock) -> None:
        store = MemoryStore()
        self.slept: list[float] = []

        async def sleep(seconds: float) -> None:
            self.slept.append(seconds)
            clock.now += seconds

        registry = site_registry(settings, client, store)
        super().__init__(
            store,
            registry,
            sites=settings.sites,
            site_wait=settings.search.site_wait_seconds,
            warming=warming(settings, client, store, None),
            clock=clock,
            sleep=sleep,
            rechecks=(),
        )
        self.calls: list[str] = []
        self.gates: list[asyncio.Future[SiteOutcome]] = []

    async def _refresh(self, site: str) -> SiteOutcome:
        self.calls.append(site)
        gate: asyncio.Future[SiteOutcome] = asyncio.get_running_loop().create_future()
        self.gates.append(gate)
        return await gate


@pytest.fixture
async def released() -> AsyncIterator[tuple[Released, Clock]]:
    settings = fixture_settings("http://127.0.0.1:9")
    clock = Clock()
    async with OriginClient(settings.origin) as client:
        refresher = Released(settings, client, clock)
        yield refresher, clock
        await refresher.aclose()


async def turn() -> None:
    """Let every task that can run, run."""
    for _ in range(5):
        await asyncio.sleep(0)


async def test_concurrent_requests_for_a_site_share_one_refresh(released: tuple[Released, Clock]) -> None:
    refresher, _ = released
    first, second = refresher.request(["alpha"]), refresher.request(["ALPHA".lower(), "alpha"])
    await turn()

    assert refresher.calls == ["alpha"]
    refresher.gates[0].set_result(SiteOutcome(outcome=Outcome.CHANGED))
    await turn()
    assert first.report().sites == second.report().sites == {"alpha": SiteOutcome(outcome=Outcome.CHANGED)}
    assert first.done and first.report().status is RunState.DONE and first.id != second.id


async def test_requests_during_a_refresh_queue_exactly_one_more_which_answers_them(
    released: tuple[Released, Clock],
) -> None:
    refresher, _ = released
    running = refresher.request(["alpha"])
    await turn()
    late = [refresher.request(["alpha"]) for _ in range(3)]  # a publish landing while the first refresh runs
    await turn()
    assert refresher.calls == ["alpha"]  # nothing runs beside the running refresh
    assert late[0].report().sites["alpha"] == SiteOutcome(outcome=Outcome.RUNNING)

    refresher.gates[0].set_result(SiteOutcome(outcome=Outcome.UNCHANGED))  # fetched before the publish landed
    await turn()
    assert running.report().sites["alpha"].outcome == Outcome.UNCHANGED
    assert not any(run.done for run in late)  # they wait for the refresh that started after them
    assert refresher.calls == ["alpha", "alpha"]

    refresher.gates[1].set_result(SiteOutcome(outcome=Outcome.CHANGED))
    await turn()
    assert {run.report().sites["alpha"].outcome for run in late} == {Outcome.CHANGED}
    assert refresher.started == 2  # four publishes, two refreshes, none dropped


async def test_a_request_just_after_a_refresh_waits_out_the_gap(released: tuple[Released, Clock]) -> None:
    refresher, clock = released
    refresher.request(["alpha"])
    await turn()
    clock.now += 1
    refresher.gates[0].set_result(SiteOutcome(outcome=Outcome.CHANGED))
    await turn()

    refresher.request(["alpha"])
    await turn()
    assert refresher.slept == [pytest.approx(MIN_GAP - 1)]
    assert len(refresher.calls) == 2

    refresher.gates[1].set_result(SiteOutcome(outcome=Outcome.UNCHANGED))
    clock.now += 60
    refresher.request(["alpha"])  # long after: at once
    await turn()
    assert len(refresher.slept) == 1 and len(refresher.calls) == 3
    refresher.gates[2].set_result(SiteOutcome(outcome=Outcome.UNCHANGED))


async def test_sites_refresh_independently_and_a_failure_is_that_sites_outcome(
    released: tuple[Released, Clock],
) -> None:
    refresher, _ = released
    run = refresher.request(["alpha", "beta-docs"])
    await turn()
    assert sorted(refresher.calls) == ["alpha", "beta-docs"]
    gates = dict(zip(refresher.calls, refresher.gates, strict=True))
    gates["beta-docs"].set_exception(RuntimeError("boom"))
    await turn()
    assert run.report().sites["beta-docs"] == SiteOutcome(
        outcome=Outcome.FAILED, reason="the refresh failed (RuntimeError)"
    )
    assert run.report().status is RunState.RUNNING  # alpha is still refreshing
    gates["alpha"].set_result(SiteOutcome(outcome=Outcome.UNCHANGED))
    await turn()
    assert run.done

    again = refresher.request(["beta-docs"])  # the failure did not end the site's driver for good
    await turn()
    refresher.gates[-1].set_result(SiteOutcome(outcome=Outcome.CHANGED))
    await turn()
    assert again.report().sites["beta-docs"].outcome == Outcome.CHANGED


async def test_shutting_down_tells_waiting_callers_rather_than_leaving_them_hanging(
    released: tuple[Released, Clock],
) -> None:
    refresher, _ = released
    running = refresher.request(["alpha"])
    await turn()
    queued = refresher.request(["alpha"])
    await refresher.aclose()
    for run in (running, queued):
        assert run.report().sites["alpha"].outcome == Outcome.FAILED
        assert "shut down" in run.report().sites["alpha"].reason


# -- the real refresh: fixture origin, Azurite


SITE = "beta-docs"
INDEX = f"/{SITE}/search/search_index.json"
NEW_PAGE = "release-train/"


def index_with_new_page(built: dict[str, Any]) -> bytes:
    docs = [*built["docs"], {"location": NEW_PAGE, "title": "Release train", "text": "<p>Trains leave weekly.</p>"}]
    return json.dumps({**built, "docs": docs}).encode()


@pytest.fixture
async def live(
    blob_settings: DocumentationSettings, counting_store: CountingStore
) -> AsyncIterator[tuple[Refresher, SiteRegistry]]:
    async with OriginClient(blob_settings.origin, timeout=5, connect_timeout=2) as client:
        registry = site_registry(blob_settings, client, counting_store)
        refresher = refresher_of(blob_settings, client, counting_store, registry, rechecks=(0.0, 0.0))
        try:
            yield refresher, registry
        finally:
            await refresher.aclose()
            await registry.aclose()


async def test_a_refresh_is_the_warm_ups_and_the_instance_serves_the_new_version_at_once(
    live: tuple[Refresher, SiteRegistry],
    static_origin: StaticOrigin,
    built_origin: Any,
    counting_store: CountingStore,
    blob_settings: DocumentationSettings,
) -> None:
    refresher, registry = live
    before = await registry.get(SITE)
    assert before is not None
    published = json.loads((built_origin / SITE / "search" / "search_index.json").read_bytes())
    static_origin.respond(INDEX, body=index_with_new_page(published), content_type="application/json")
    static_origin.respond(f"/{SITE}/{NEW_PAGE}", body="<html><body><h1>Release train</h1></body></html>")

    run = refresher.request([SITE])
    await asyncio.wait(list(run.outcomes.values()))
    outcome = run.report().sites[SITE]
    assert outcome.outcome == Outcome.CHANGED and str(outcome.pages) == "checked: 0 missing"
    stat = await counting_store.inner.stat(index_name(blob_settings.cache_file_name_template, SITE))
    assert stat is not None and outcome.fetched_at == stat.fetched_at.replace(microsecond=0)

    current = registry.current(SITE)  # as the refresh is reported done, before anything else runs
    assert current is not None and current is not before  # not at the next check interval: now
    assert NEW_PAGE in {page.path for page in current.index.pages}


async def test_pages_an_upload_had_not_served_yet_are_checked_again_soon(
    live: tuple[Refresher, SiteRegistry], static_origin: StaticOrigin, built_origin: Any, counting_store: CountingStore
) -> None:
    refresher, _ = live
    published = json.loads((built_origin / SITE / "search" / "search_index.json").read_bytes())
    static_origin.respond(INDEX, body=index_with_new_page(published), content_type="application/json")
    # The index is uploaded; the page is not yet: the origin answers 404 for it.
    run = refresher.request([SITE])
    await asyncio.wait(list(run.outcomes.values()))
    assert str(run.report().sites[SITE].pages) == "checked: 1 missing"
    record = (await read_record(counting_store, SITE)).record
    assert record is not None and record.hidden == {NEW_PAGE}

    static_origin.respond(f"/{SITE}/{NEW_PAGE}", body="<html><body><h1>Release train</h1></body></html>")
    await refresher.idle()  # the rechecks (at 0 s here) ask the origin again

    record = (await read_record(counting_store, SITE)).record
    assert record is not None and not record.hidden


async def test_an_outcome_the_caller_stopped_waiting_for_is_readable_from_another_instance(
    blob_settings: DocumentationSettings, counting_store: CountingStore, live: tuple[Refresher, SiteRegistry]
) -> None:
    refresher, _ = live
    run = refresher.request([SITE])
    refresher.keep(run)
    await refresher.idle()

    async with OriginClient(blob_settings.origin) as client:
        other = refresher_of(
            blob_settings, client, counting_store, site_registry(blob_settings, client, counting_store)
        )
        report = await other.outcome(run.id)
        assert await other.outcome("0" * 32) is None
    assert report is not None and report.recorded and report.status is RunState.DONE
    assert report.model_copy(update={"recorded": False}) == run.report()


# -- which site a written blob is


def test_a_blob_is_the_site_whose_index_path_it_is() -> None:
    settings = fixture_settings("https://docs.example.com", SearchIndexOverrides=ROOTED_OVERRIDE)
    assert published_sites(settings, "alpha/search/search_index.json") == ["alpha"]
    assert published_sites(settings, "/beta-docs/search/search_index.json") == ["beta-docs"]
    assert published_sites(settings, "beta-docs/search/other.json") == []
    assert published_sites(settings, "alpha/guide/index.html") == []
    # A container whose folder the origin serves (docs/ under the container): the index path ends the blob name.
    assert published_sites(settings, "site/alpha/search/search_index.json") == ["alpha"]


def test_a_site_indexed_at_the_origin_root_claims_only_the_root_index() -> None:
    settings = fixture_settings("https://docs.example.com", SearchIndexOverrides=ROOTED_OVERRIDE)
    rooted = json.loads(ROOTED_OVERRIDE)
    (site, path), *_ = rooted.items()
    assert published_sites(settings, path.lstrip("/")) == [site]
    assert site not in published_sites(settings, "alpha/search/search_index.json")


def test_an_origin_with_a_path_maps_blobs_below_it() -> None:
    settings = fixture_settings("https://example.blob.core.windows.net/docs", Sites="forge", DefaultSite="forge")
    assert published_sites(settings, "forge/search/search_index.json") == ["forge"]
    assert published_sites(settings, "docs/forge/search/search_index.json") == ["forge"]


def test_event_grid_messages_name_the_blobs_created() -> None:
    event = {
        "eventType": "Microsoft.Storage.BlobCreated",
        "subject": "/blobServices/default/containers/$web/blobs/forge/search/search_index.json",
        "data": {"url": "https://example.blob.core.windows.net/$web/forge/search/search_index.json"},
    }
    cloud = {"type": "Microsoft.Storage.BlobCreated", "subject": event["subject"].replace("forge", "cloud")}
    deleted = {**event, "eventType": "Microsoft.Storage.BlobDeleted"}
    assert blob_events(json.dumps(event)) == ["forge/search/search_index.json"]
    assert blob_events(json.dumps([event, cloud, deleted, "noise"])) == [
        "forge/search/search_index.json",
        "cloud/search/search_index.json",
    ]
    assert blob_events(b"{}") == []
    with pytest.raises(ValueError):
        blob_events(b"not json")
