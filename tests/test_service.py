"""The provider chain and its rules: order, first non-empty answer wins, input checked once (`site` against every
provider's sites), failures fall through, the most specific miss, cancellation, attribution, the cap; and the
composition root that builds it, with fakes passed through the same seams."""

from __future__ import annotations

import asyncio
import logging

import pytest
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan

from shared.cache import MemoryStore
from shared.compose import compose
from shared.errors import InvalidRequestError, OriginError, ProviderDeclinedError, ProviderError, ResolutionError
from shared.models import Reason
from shared.providers.base import ProviderHealth, Status, roll_up
from shared.requests import ReadRequest, SearchRequest
from shared.service import DocumentationService, InChain
from shared.settings import load_settings
from tests.support.providers import FakeProvider
from tests.support.sites import ROOTED_OVERRIDE, fixture_settings
from tools.static_origin import StaticOrigin

SECRET_QUERY = "token=sk-live-SECRET123 how to"


def service(*providers: FakeProvider) -> DocumentationService:
    return DocumentationService(list(providers), origin="https://docs.example.com")


class RecordingSpan(NonRecordingSpan):
    def __init__(self) -> None:
        super().__init__(trace.INVALID_SPAN_CONTEXT)
        self.attributes: dict[str, object] = {}

    def set_attribute(self, key: str, value: object) -> None:  # type: ignore[override]
        self.attributes[key] = value

    def is_recording(self) -> bool:
        return True


async def test_providers_run_in_ascending_order_and_the_first_non_empty_answer_wins() -> None:
    late, empty, first = (
        FakeProvider("late", 200, results=3),
        FakeProvider("empty", 0),
        FakeProvider("mid", 100, results=2),
    )
    response = await service(late, first, empty).search(SearchRequest("q"))
    assert response.provider == "mid"
    assert [r.location for r in response.results] == ["mid-0", "mid-1"]
    assert empty.calls and not late.calls


async def test_a_provider_that_raises_is_skipped(caplog: pytest.LogCaptureFixture) -> None:
    broken, working = FakeProvider("broken", 0, error=RuntimeError("boom")), FakeProvider("working", 1, results=1)
    with caplog.at_level(logging.WARNING):
        response = await service(broken, working).search(SearchRequest("q"))
    assert response.provider == "working"
    assert "broken" in caplog.text


async def test_cancellation_propagates() -> None:
    cancelled, working = FakeProvider("c", 0, error=asyncio.CancelledError()), FakeProvider("w", 1, results=1)
    with pytest.raises(asyncio.CancelledError):
        await service(cancelled, working).search(SearchRequest("q"))
    assert not working.calls


async def test_no_result_is_an_empty_list_attributed_to_none() -> None:
    response = await service(FakeProvider("empty", 0)).search(SearchRequest("q"))
    assert (response.provider, response.results) == ("none", [])


async def test_search_is_capped_at_25_and_limit_validated() -> None:
    many = FakeProvider("many", 0, results=40)
    response = await service(many).search(SearchRequest("q", limit=50))
    assert len(response.results) == 25 and many.calls == [("q", 25)]
    with pytest.raises(InvalidRequestError):
        await service(many).search(SearchRequest("q", limit=51))


async def test_fetch_skips_search_only_providers_and_misses_then_wins() -> None:
    search_only = FakeProvider("ai", 0, supports_fetch=False, document=True)
    missing = FakeProvider("remote", 1, miss=Reason.NOT_FOUND)
    mkdocs = FakeProvider("mkdocs", 100, document=True)
    document = await service(search_only, missing, mkdocs).get(ReadRequest("faq/"))
    assert document.provider == "mkdocs"
    assert document.requested_location == "faq/"
    assert not search_only.calls


@pytest.mark.parametrize(
    ("misses", "reported"),
    [
        ((Reason.NOT_FOUND, Reason.AMBIGUOUS), ("b", Reason.AMBIGUOUS)),
        ((Reason.AMBIGUOUS, Reason.NOT_FOUND), ("a", Reason.AMBIGUOUS)),
        ((Reason.NOT_FOUND, Reason.FETCH_FAILED, Reason.SITE_UNAVAILABLE), ("b", Reason.FETCH_FAILED)),
        ((Reason.UNKNOWN_SITE, Reason.SITE_UNAVAILABLE), ("b", Reason.SITE_UNAVAILABLE)),
        ((Reason.NOT_FOUND, Reason.UNKNOWN_SITE), ("b", Reason.UNKNOWN_SITE)),
        ((Reason.NOT_FOUND, Reason.NOT_FOUND), ("a", Reason.NOT_FOUND)),
    ],
    ids=["ambiguous last", "ambiguous first", "fetch_failed", "site_unavailable", "unknown_site", "a tie"],
)
async def test_when_every_provider_misses_the_most_specific_miss_is_reported(
    misses: tuple[Reason, ...], reported: tuple[str, Reason]
) -> None:
    providers = [FakeProvider(name, n, miss=reason) for n, (name, reason) in enumerate(zip("abc", misses))]
    with pytest.raises(ResolutionError) as caught:
        await service(*providers).get(ReadRequest("x"))
    assert (caught.value.resolution.detail, caught.value.resolution.reason) == reported
    assert caught.value.resolution.requested_location == "x"


async def test_when_no_provider_could_answer_at_all_the_miss_says_so() -> None:
    with pytest.raises(ResolutionError) as caught:
        await service(FakeProvider("broken", 0, error=RuntimeError())).get(ReadRequest("x"))
    assert caught.value.resolution.reason is Reason.NOT_FOUND
    assert caught.value.resolution.detail == "no provider could answer for this location"


@pytest.mark.parametrize(
    "error",
    [
        ProviderDeclinedError("not configured"),
        OriginError("unreachable", unreachable=True),
        InvalidRequestError("a provider's own refusal is its failure, not the caller's"),
        TimeoutError(),
        ValueError("malformed answer"),
    ],
    ids=["declined", "unreachable", "provider's invalid request", "timeout", "unexpected"],
)
async def test_any_provider_failure_falls_through_to_the_next(error: Exception) -> None:
    failing, working = FakeProvider("failing", 0, error=error), FakeProvider("working", 1, results=1, document=True)
    assert (await service(failing, working).search(SearchRequest("q"))).provider == "working"
    assert (await service(failing, working).get(ReadRequest("page"))).provider == "working"


async def test_the_services_own_input_checks_stop_the_chain_before_any_provider() -> None:
    provider = FakeProvider("p", 0, results=1, document=True)
    docs = service(provider)
    for call in (
        docs.search(SearchRequest("   ")),
        docs.search(SearchRequest("q", limit=0)),
        docs.search(SearchRequest("q", site="nowhere")),
        docs.get(ReadRequest("../etc/passwd")),
        docs.get(ReadRequest("https://elsewhere.example.com/forge/page")),
    ):
        with pytest.raises(InvalidRequestError):
            await call
    assert provider.calls == []


async def test_a_refused_version_falls_through_and_is_the_answer_only_when_every_provider_refused_it() -> None:
    refusal = InvalidRequestError("version '9' is not a version of vdocs: 2.1", argument="version")
    refusing = FakeProvider("refusing", 0, error=refusal, supports_versions=True)
    having = FakeProvider("having", 1, results=2, document=True, supports_versions=True)
    empty = FakeProvider("empty", 1, supports_versions=True)
    unversioned = FakeProvider("unversioned", 2, results=2, document=True)

    assert (await service(refusing, having).search(SearchRequest("q", version="9"))).provider == "having"
    assert (await service(refusing, having).get(ReadRequest("page", version="9"))).provider == "having"
    assert (
        await service(refusing, empty).search(SearchRequest("q", version="9"))
    ).results == []  # searched with it: no match
    with pytest.raises(InvalidRequestError) as refused:
        await service(refusing, unversioned).search(SearchRequest("q", version="9"))
    with pytest.raises(InvalidRequestError):
        await service(refusing, unversioned).get(ReadRequest("page", version="9"))
    assert refused.value is refusal and not unversioned.calls  # a provider without versions is never asked


async def test_site_is_checked_against_every_providers_sites_and_passed_only_to_those_that_serve_it() -> None:
    remote = FakeProvider("remote", 0, results=1, sites=("Forge", "Partner-Docs"))
    local = FakeProvider("local", 1, results=1, sites=("forge", "handbook"))
    docs = service(remote, local)
    assert docs.sites == ("Forge", "Partner-Docs", "handbook")

    assert (await docs.search(SearchRequest("q", site="HANDBOOK"))).provider == "local"
    assert remote.sites_asked == [] and local.sites_asked == ["handbook"]  # the provider's own spelling

    assert (await docs.search(SearchRequest("q", site="partner-docs"))).provider == "remote"
    assert remote.sites_asked == ["Partner-Docs"]

    assert (await docs.search(SearchRequest("q", site="forge"))).provider == "remote"
    assert (await docs.search(SearchRequest("q"))).provider == "remote"
    assert remote.sites_asked[-2:] == ["Forge", None]
    with pytest.raises(InvalidRequestError, match="site must be one of: Forge, Partner-Docs, handbook"):
        await docs.search(SearchRequest("q", site="elsewhere"))


# -- the composition root


async def test_the_composition_root_adds_given_providers_to_the_chain_and_closes_them() -> None:
    settings = load_settings({"Forge__Documentation__Origin": "http://127.0.0.1:9"})
    first, fallback = FakeProvider("first", 0, results=2), FakeProvider("last", 500, results=1, sites=("extra",))
    async with compose(settings, embedding=None, store=MemoryStore(), providers=[fallback, first]) as composed:
        assert [provider.name for provider in composed.service.providers] == ["first", "mkdocs", "last"]
        assert composed.service.sites == (
            "forge",
            "cloud-foundations",
            "iac-azure-modules",
            "iac-okta-modules",
            "iac-aws-modules",
            "extra",
        )
        assert (await composed.service.search(SearchRequest("q"))).provider == "first"
        health = composed.health()
        assert list(health.providers) == ["first", "mkdocs", "last"]
        assert health.providers["first"] == InChain(order=0, fetch=True, health=ProviderHealth(status=Status.OK))
        assert health.cache.kind == "memory"
        assert health.embedding.model_dump(exclude_none=True) == {"state": "off"}
    assert first.closed and fallback.closed


async def test_attribution_tags_ride_the_current_span_and_the_debug_log(caplog: pytest.LogCaptureFixture) -> None:
    span = RecordingSpan()
    docs = service(FakeProvider("ai", 0, results=1, supports_fetch=False), FakeProvider("mkdocs", 100, document=True))
    with caplog.at_level(logging.DEBUG), trace.use_span(span):
        await docs.search(SearchRequest("q"))
        assert span.attributes == {"docs.search.provider": "ai", "docs.provider": "ai"}
        await docs.get(ReadRequest("faq/"))
    assert span.attributes == {"docs.search.provider": "ai", "docs.fetch.provider": "mkdocs", "docs.provider": "mkdocs"}
    assert "docs.fetch.provider=mkdocs" in caplog.text
    empty = RecordingSpan()
    with trace.use_span(empty):
        await service(FakeProvider("x", 0)).search(SearchRequest("q"))
    assert empty.attributes["docs.search.provider"] == "none"


async def test_raw_queries_and_locations_are_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    docs = service(FakeProvider("broken", 0, error=RuntimeError(SECRET_QUERY)), FakeProvider("empty", 1))
    with caplog.at_level(logging.DEBUG):
        await docs.search(SearchRequest(SECRET_QUERY))
        with pytest.raises(ResolutionError):
            await docs.get(ReadRequest("faq/?sig=SECRET123"))
    assert "SECRET123" not in caplog.text
    assert "length 30" in caplog.text


async def test_a_declining_fetch_provider_is_skipped_quietly(caplog: pytest.LogCaptureFixture) -> None:
    declining, working = (
        FakeProvider("declines", 0, error=ProviderDeclinedError("cooling down")),
        FakeProvider("working", 1, document=True),
    )
    with caplog.at_level(logging.WARNING):
        assert (await service(declining, working).get(ReadRequest("page"))).provider == "working"
    assert "declines" not in caplog.text


async def test_a_fetch_whose_only_provider_timed_out_its_own_way_is_a_timeout() -> None:
    class SlowRemote(ProviderError):
        @property
        def timed_out(self) -> bool:
            return True

    from shared.errors import RequestTimeoutError

    with pytest.raises(RequestTimeoutError):
        await service(FakeProvider("remote", 0, error=SlowRemote("no answer"))).get(ReadRequest("page"))


@pytest.mark.parametrize(("store_status", "status"), [("error", "degraded"), ("unreachable", "degraded"), ("ok", "ok")])
async def test_health_is_degraded_while_the_cache_store_fails(
    static_origin: StaticOrigin, store_status: str, status: str
) -> None:
    settings = fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false")
    async with compose(settings, embedding=None, store=MemoryStore(status=store_status)) as composed:
        report = composed.health()
    assert report.status == status and report.cache.status == store_status


OK, DEGRADED, UNAVAILABLE = Status.OK, Status.DEGRADED, Status.UNAVAILABLE


@pytest.mark.parametrize(
    ("parts", "whole"),
    [
        ((), OK),
        ((OK, OK), OK),
        ((OK, DEGRADED), DEGRADED),
        ((OK, UNAVAILABLE), DEGRADED),  # something still answers
        ((UNAVAILABLE, DEGRADED), UNAVAILABLE),  # nothing answers: a failing cache store does not soften it
        ((UNAVAILABLE,), UNAVAILABLE),
        ((DEGRADED, DEGRADED), DEGRADED),
    ],
)
def test_one_roll_up_turns_parts_statuses_into_the_wholes(parts: tuple[Status, ...], whole: Status) -> None:
    assert roll_up(parts) is whole
