"""The provider chain: order, first non-empty answer wins, failures skipped, cancellation, attribution, the cap."""

from __future__ import annotations

import asyncio
import logging

import pytest
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan

from shared.cache import MemoryIndexStore
from shared.errors import InvalidRequestError, ResolutionError
from shared.models import Document, Reason, Resolution, Rule, SearchResult
from shared.service import DocumentationService
from shared.settings import load_settings

SECRET_QUERY = "token=sk-live-SECRET123 how to"


def result(location: str, provider: str) -> SearchResult:
    return SearchResult(
        location=location, title=location, url="u", site="s", preview_text="p", score=1.0, provider=provider
    )


class FakeProvider:
    def __init__(
        self,
        name: str,
        order: int,
        *,
        results: int = 0,
        error: BaseException | None = None,
        document: bool = False,
        miss: Reason | None = None,
        supports_fetch: bool = True,
    ) -> None:
        self.name, self.order, self.supports_fetch = name, order, supports_fetch
        self._results, self._error, self._document, self._miss = results, error, document, miss
        self.calls: list[tuple[str, int]] = []

    async def search(self, query: str, *, limit: int, site: str | None = None) -> list[SearchResult]:
        self.calls.append((query, limit))
        if self._error:
            raise self._error
        return [result(f"{self.name}-{i}", self.name) for i in range(self._results)]

    async def get(self, location: str) -> Document:
        self.calls.append((location, 0))
        if self._error:
            raise self._error
        resolution = Resolution(
            requested_location=location, reason=self._miss or Reason.RESOLVED, rule=Rule.EXACT, detail=self.name
        )
        if not self._document:
            raise ResolutionError(resolution)
        return Document(
            requested_location="inner",
            location=location,
            site="s",
            url="u",
            provider=self.name,
            content="# Page\n",
            resolution=resolution,
        )

    def health(self) -> dict[str, dict[str, object]]:
        return {}


def service(*providers: FakeProvider) -> DocumentationService:
    return DocumentationService(load_settings({}), list(providers), MemoryIndexStore())


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
    response = await service(late, first, empty).search("q")
    assert response.provider == "mid"
    assert [r.location for r in response.results] == ["mid-0", "mid-1"]
    assert empty.calls and not late.calls


async def test_a_provider_that_raises_is_skipped(caplog: pytest.LogCaptureFixture) -> None:
    broken, working = FakeProvider("broken", 0, error=RuntimeError("boom")), FakeProvider("working", 1, results=1)
    with caplog.at_level(logging.WARNING):
        response = await service(broken, working).search("q")
    assert response.provider == "working"
    assert "broken" in caplog.text


async def test_cancellation_propagates() -> None:
    cancelled, working = FakeProvider("c", 0, error=asyncio.CancelledError()), FakeProvider("w", 1, results=1)
    with pytest.raises(asyncio.CancelledError):
        await service(cancelled, working).search("q")
    assert not working.calls


async def test_no_result_is_an_empty_list_attributed_to_none() -> None:
    response = await service(FakeProvider("empty", 0)).search("q")
    assert (response.provider, response.results) == ("none", [])


async def test_search_is_capped_at_25_and_limit_validated() -> None:
    many = FakeProvider("many", 0, results=40)
    response = await service(many).search("q", limit=50)
    assert len(response.results) == 25 and many.calls == [("q", 25)]
    with pytest.raises(InvalidRequestError):
        await service(many).search("q", limit=51)


async def test_fetch_skips_search_only_providers_and_misses_then_wins() -> None:
    search_only = FakeProvider("ai", 0, supports_fetch=False, document=True)
    missing = FakeProvider("remote", 1, miss=Reason.NOT_FOUND)
    mkdocs = FakeProvider("mkdocs", 100, document=True)
    document = await service(search_only, missing, mkdocs).get("faq/")
    assert document.provider == "mkdocs"
    assert document.requested_location == "faq/"
    assert not search_only.calls


async def test_fetch_failure_reports_the_first_providers_resolution() -> None:
    with pytest.raises(ResolutionError) as caught:
        await service(FakeProvider("a", 0, miss=Reason.AMBIGUOUS), FakeProvider("b", 1, miss=Reason.NOT_FOUND)).get("x")
    assert caught.value.resolution.reason is Reason.AMBIGUOUS
    with pytest.raises(ResolutionError) as caught:
        await service(FakeProvider("broken", 0, error=RuntimeError())).get("x")
    assert caught.value.resolution.reason is Reason.NOT_FOUND


async def test_attribution_tags_ride_the_current_span_and_the_debug_log(caplog: pytest.LogCaptureFixture) -> None:
    span = RecordingSpan()
    docs = service(FakeProvider("ai", 0, results=1, supports_fetch=False), FakeProvider("mkdocs", 100, document=True))
    with caplog.at_level(logging.DEBUG), trace.use_span(span):
        await docs.search("q")
        assert span.attributes == {"docs.search.provider": "ai", "docs.provider": "ai"}
        await docs.get("faq/")
    assert span.attributes == {"docs.search.provider": "ai", "docs.fetch.provider": "mkdocs", "docs.provider": "mkdocs"}
    assert "docs.fetch.provider=mkdocs" in caplog.text
    empty = RecordingSpan()
    with trace.use_span(empty):
        await service(FakeProvider("x", 0)).search("q")
    assert empty.attributes["docs.search.provider"] == "none"


async def test_raw_queries_and_locations_are_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    docs = service(FakeProvider("broken", 0, error=RuntimeError(SECRET_QUERY)), FakeProvider("empty", 1))
    with caplog.at_level(logging.DEBUG):
        await docs.search(SECRET_QUERY)
        with pytest.raises(ResolutionError):
            await docs.get("faq/?sig=SECRET123")
    assert "SECRET123" not in caplog.text
    assert "length 30" in caplog.text
