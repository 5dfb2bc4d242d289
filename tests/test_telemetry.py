"""The production signals, read back through the OpenTelemetry SDK's in-memory metric reader and span exporter: the
spec's counters and their dimensions, the result-set tags, one span per provider call with its outcome; and the
Azure Monitor export, skipped without a connection string and otherwise built on the managed identity's credential.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.core.credentials import AccessToken
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from shared import telemetry
from shared.errors import ProviderDeclinedError, ResolutionError
from shared.models import Found, Reason
from shared.requests import ReadRequest, SearchRequest
from shared.service import DocumentationService
from shared.settings import load_settings
from shared.telemetry.export import azure_monitor, configure, managed_identity
from shared.telemetry.signals import visible_chars
from tests.support.providers import FakeProvider

ROOT = Path(__file__).resolve().parent.parent
CONNECTION_STRING = (
    "InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=https://127.0.0.1:9/;"
    "LiveEndpoint=https://127.0.0.1:9/"
)


class Signals:
    def __init__(self) -> None:
        self.reader = InMemoryMetricReader()
        self.spans = InMemorySpanExporter()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))

    def counts(self, name: str) -> dict[tuple[str, str], int]:
        """Each (source, outcome) of a counter with its value."""
        data = self.reader.get_metrics_data()
        found: dict[tuple[str, str], int] = {}
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                assert scope.scope.name == "smithy"
                for metric in scope.metrics:
                    if metric.name == name:
                        for point in metric.data.data_points:
                            attributes = point.attributes or {}
                            key = (str(attributes["smithy.docs.source"]), str(attributes["smithy.docs.outcome"]))
                            found[key] = int(point.value)
        return found

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans.get_finished_spans() if span.name == name]


@pytest.fixture
def signals() -> Iterator[Signals]:
    recorded = Signals()
    telemetry.use(meter_provider=recorded.meter_provider, tracer_provider=recorded.tracer_provider)
    try:
        yield recorded
    finally:
        telemetry.use()
        recorded.meter_provider.shutdown()
        recorded.tracer_provider.shutdown()


def service(*providers: FakeProvider) -> DocumentationService:
    return DocumentationService(list(providers), origin="https://docs.example.com")


class PreviewProvider(FakeProvider):
    """Answers with results carrying the given previews."""

    def __init__(self, name: str, order: int, previews: list[str]) -> None:
        super().__init__(name, order, results=len(previews))
        self.previews = previews

    async def search(self, request: SearchRequest) -> Found:
        found = await super().search(request)
        return Found([hit.model_copy(update={"preview_text": text}) for hit, text in zip(found.results, self.previews)])


class SlowProvider(FakeProvider):
    async def search(self, request: SearchRequest) -> Found:
        await asyncio.sleep(10)
        raise AssertionError("the deadline should have passed")


async def test_searches_are_counted_by_winning_provider_and_outcome(signals: Signals) -> None:
    docs = service(FakeProvider("ai_search", 0), FakeProvider("mkdocs", 100, results=2))
    await docs.search(SearchRequest("sync windows"))
    await docs.search(SearchRequest("sync windows"))
    await service(FakeProvider("mkdocs", 100)).search(SearchRequest("nothing like it"))
    assert signals.counts("smithy.docs.searches") == {("mkdocs", "ok"): 2, ("none", "empty"): 1}


async def test_a_search_nothing_could_run_and_invalid_input_are_not_counted(signals: Signals) -> None:
    from shared.errors import InvalidRequestError, ServiceUnavailableError

    with pytest.raises(ServiceUnavailableError):
        await service(FakeProvider("broken", 0, error=RuntimeError())).search(SearchRequest("q"))
    with pytest.raises(InvalidRequestError):
        await service(FakeProvider("mkdocs", 0, results=1)).search(SearchRequest("  "))
    assert signals.counts("smithy.docs.searches") == {}


async def test_fetches_count_ok_and_every_fetch_without_a_document_as_not_found(signals: Signals) -> None:
    await service(FakeProvider("remote", 0, miss=Reason.NOT_FOUND), FakeProvider("mkdocs", 1, document=True)).get(
        ReadRequest("a")
    )
    for providers in (
        [FakeProvider("mkdocs", 0, miss=Reason.AMBIGUOUS)],
        [FakeProvider("mkdocs", 0, error=RuntimeError("down"))],
    ):
        with pytest.raises(ResolutionError):
            await service(*providers).get(ReadRequest("a"))
    assert signals.counts("smithy.docs.fetches") == {("mkdocs", "ok"): 1, ("none", "not_found"): 2}


async def test_a_search_span_carries_the_result_count_the_thinnest_preview_and_attribution(signals: Signals) -> None:
    previews = ["...a   long\n\npreview of the page...", "short  one...", "...\u00e9t\u00e9 \U0001f680"]
    await service(PreviewProvider("mkdocs", 0, previews)).search(SearchRequest("q", limit=2))
    (search,) = signals.named("docs.search")
    assert search.attributes is not None
    assert search.attributes["smithy.docs.result_count"] == 2  # the answer's results, after the limit
    assert search.attributes["smithy.docs.min_preview_chars"] == len("short one")
    assert search.attributes["docs.search.provider"] == "mkdocs"
    assert search.attributes["docs.provider"] == "mkdocs"


async def test_an_empty_search_has_a_zero_count_and_no_preview_tag(signals: Signals) -> None:
    await service(FakeProvider("mkdocs", 0)).search(SearchRequest("q"))
    (search,) = signals.named("docs.search")
    assert search.attributes is not None
    assert search.attributes["smithy.docs.result_count"] == 0
    assert "smithy.docs.min_preview_chars" not in search.attributes
    assert search.attributes["docs.search.provider"] == "none"


async def test_the_tags_ride_the_callers_span_when_one_is_recording(signals: Signals) -> None:
    tracer = signals.tracer_provider.get_tracer("host")
    with tracer.start_as_current_span("request"):
        await service(PreviewProvider("mkdocs", 0, ["one two"])).search(SearchRequest("q"))
        await service(FakeProvider("mkdocs", 0, document=True)).get(ReadRequest("faq/"))
    (request,) = signals.named("request")
    assert not signals.named("docs.search") and not signals.named("docs.get")
    assert request.attributes is not None
    assert request.attributes["smithy.docs.result_count"] == 1
    assert request.attributes["smithy.docs.min_preview_chars"] == 7
    assert request.attributes["docs.search.provider"] == "mkdocs"
    assert request.attributes["docs.fetch.provider"] == "mkdocs"
    (call,) = signals.named("docs.provider.search")
    assert call.parent is not None and call.parent.span_id == request.context.span_id


def outcomes(spans: list[ReadableSpan]) -> list[dict[str, Any]]:
    return [dict(span.attributes or {}) for span in spans]


async def test_each_provider_call_is_a_span_with_its_name_and_outcome(signals: Signals) -> None:
    from shared.deadline import budget
    from shared.errors import RequestTimeoutError

    declined = FakeProvider("ai_search", 0, error=ProviderDeclinedError("no site field"))
    broken = FakeProvider("remote", 1, error=ConnectionResetError("token=SECRET"))
    empty, winner, unasked = FakeProvider("empty", 2), FakeProvider("mkdocs", 3, results=1), FakeProvider("last", 4)
    await service(declined, broken, empty, winner, unasked).search(SearchRequest("token=SECRET"))
    spans = signals.named("docs.provider.search")
    assert outcomes(spans) == [
        {"smithy.docs.provider.name": "ai_search", "smithy.docs.provider.outcome": "declined"},
        {
            "smithy.docs.provider.name": "remote",
            "smithy.docs.provider.outcome": "failed",
            "error.type": "ConnectionResetError",
        },
        {"smithy.docs.provider.name": "empty", "smithy.docs.provider.outcome": "empty", "smithy.docs.result_count": 0},
        {"smithy.docs.provider.name": "mkdocs", "smithy.docs.provider.outcome": "ok", "smithy.docs.result_count": 1},
    ]
    assert spans[1].status.status_code is StatusCode.ERROR and not spans[1].events  # no exception, no message
    (search,) = signals.named("docs.search")
    assert all(span.parent is not None and span.parent.span_id == search.context.span_id for span in spans)

    with budget(0.05), pytest.raises(RequestTimeoutError):
        await service(SlowProvider("slow", 0)).search(SearchRequest("q"))
    slow = signals.named("docs.provider.search")[-1]
    assert slow.attributes == {
        "smithy.docs.provider.name": "slow",
        "smithy.docs.provider.outcome": "timeout",
        "error.type": "TimeoutError",
    }


async def test_each_fetch_call_is_a_span_with_a_miss_and_its_reason(signals: Signals) -> None:
    await service(
        FakeProvider("remote", 0, miss=Reason.SITE_UNAVAILABLE), FakeProvider("mkdocs", 1, document=True)
    ).get(ReadRequest("a"))
    assert outcomes(signals.named("docs.provider.get")) == [
        {
            "smithy.docs.provider.name": "remote",
            "smithy.docs.provider.outcome": "miss",
            "smithy.docs.provider.reason": "site_unavailable",
        },
        {"smithy.docs.provider.name": "mkdocs", "smithy.docs.provider.outcome": "ok"},
    ]


async def test_no_span_carries_the_query_or_location(signals: Signals) -> None:
    secret = "sig=SECRET123"
    await service(FakeProvider("broken", 0, error=RuntimeError(secret)), FakeProvider("mkdocs", 1)).search(
        SearchRequest(secret)
    )
    with pytest.raises(ResolutionError):
        await service(FakeProvider("mkdocs", 0, miss=Reason.NOT_FOUND)).get(ReadRequest(f"faq/?{secret}"))
    spans = signals.spans.get_finished_spans()
    assert spans and "SECRET123" not in repr([(s.name, s.attributes, s.events, s.status) for s in spans])


@pytest.mark.parametrize(
    ("preview", "visible"),
    [("plain", 5), ("...cut both  ends...", 13), ("  many \t\n spaces  ", 11), ("... \U0001f680 ...", 2), ("...", 0)],
)
def test_visible_preview_length_collapses_whitespace_drops_ellipses_and_counts_utf16(
    preview: str, visible: int
) -> None:
    assert visible_chars(preview) == visible


def test_the_connection_string_is_a_host_owned_secret() -> None:
    from shared.settings import HOST_OWNED

    settings = load_settings({"APPLICATIONINSIGHTS_CONNECTION_STRING": f" {CONNECTION_STRING} "})
    assert settings.applicationinsights_connection_string is not None
    assert settings.applicationinsights_connection_string.get_secret_value() == CONNECTION_STRING
    assert "InstrumentationKey" not in repr(settings)
    assert load_settings({"APPLICATIONINSIGHTS_CONNECTION_STRING": " "}).applicationinsights_connection_string is None
    assert "APPLICATIONINSIGHTS_CONNECTION_STRING" in HOST_OWNED


def test_without_a_connection_string_nothing_is_exported_or_imported() -> None:
    """The Functions host imported in a fresh interpreter: no SDK, no exporter, the API's no-op providers."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(("APPLICATIONINSIGHTS_", "FORGE__"))}
    env["Forge__Documentation__Origin"] = "http://127.0.0.1:9"
    check = (
        "import sys, function_app\n"
        "from opentelemetry import metrics, trace\n"
        "loaded = [m for m in sys.modules if m.startswith(('azure.monitor', 'opentelemetry.sdk'))]\n"
        "assert not loaded, loaded\n"
        "assert type(trace.get_tracer_provider()).__name__ == 'ProxyTracerProvider'\n"
        "assert type(metrics.get_meter_provider()).__name__ == '_ProxyMeterProvider'\n"
    )
    done = subprocess.run([sys.executable, "-c", check], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert configure(load_settings({})) is None


class FakeCredential:
    """A synchronous token credential that is never asked: building the exporters must not want a token."""

    def __init__(self) -> None:
        self.asked = 0

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        self.asked += 1
        return AccessToken("fake", 0)


NETWORK_EVENTS = ("socket.connect", "socket.getaddrinfo")
"""The audit events of every connection (`connect` and `connect_ex`, blocking or not) and every name lookup."""
_refusing: list[list[object]] = []
"""The attempts recorded by the test running under `no_network`, if one is (the audit hook refuses only then)."""


def _refuse_network(event: str, args: tuple[Any, ...]) -> None:
    if _refusing and event in NETWORK_EVENTS:
        _refusing[-1].append(args[1:2] or args[:1])  # the address connected to, or the port looked up
        raise OSError("no network in this test")


@pytest.fixture(scope="session")
def network_audit() -> None:
    """The audit hook that refuses the network under `no_network`: installed once, as hooks stay for the process."""
    sys.addaudithook(_refuse_network)


@pytest.fixture
def no_network(network_audit: None) -> Iterator[list[object]]:
    """Every connection or name lookup in this process fails, on any thread, and is recorded."""
    attempts: list[object] = []
    _refusing.append(attempts)
    try:
        yield attempts
    finally:
        _refusing.remove(attempts)


def test_with_a_connection_string_the_exporters_use_the_managed_identity(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_network: list[object]
) -> None:
    # The SDK's own background calls home (usage statistics, remote feature flags) are off here; the exporters'
    # offline queue goes to this test's directory.
    monkeypatch.setenv("APPLICATIONINSIGHTS_STATSBEAT_DISABLED_ALL", "true")
    monkeypatch.setenv("APPLICATIONINSIGHTS_CONTROLPLANE_DISABLED", "true")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    credential = FakeCredential()
    settings = load_settings({"APPLICATIONINSIGHTS_CONNECTION_STRING": CONNECTION_STRING})
    providers = azure_monitor(settings, credential=credential)
    assert providers is not None
    try:
        exporters = providers.exporters
        assert [type(e).__name__ for e in exporters] == ["AzureMonitorMetricExporter", "AzureMonitorTraceExporter"]
        # Private to the exporter: it only shows which credential it holds by sending with it.
        assert all(exporter._credential is credential for exporter in exporters)
        assert all(exporter._endpoint == "https://127.0.0.1:9/" for exporter in exporters)
        resource = providers.tracer_provider.resource.attributes
        assert resource["service.name"] == "smithy-docs"
        assert no_network == [] and credential.asked == 0
    finally:
        providers.meter_provider.shutdown()
        providers.tracer_provider.shutdown()
    assert no_network == [] and credential.asked == 0  # shutting down had nothing to send


def test_the_default_credential_is_a_synchronous_one_for_the_exporters_threads() -> None:
    import inspect

    from azure.identity import DefaultAzureCredential

    for env in ({}, {"Forge__Documentation__Identity__ClientId": "00000000-0000-0000-0000-000000000001"}):
        credential = managed_identity(load_settings(env))
        assert isinstance(credential, DefaultAzureCredential)
        assert not inspect.iscoroutinefunction(credential.get_token)
