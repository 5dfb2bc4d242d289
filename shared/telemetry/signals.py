"""The spec's production signals: the search and fetch counters, result-set span tags, a span per provider call.

Instruments come from the global OpenTelemetry providers through the API, so nothing is recorded or exported
unless a host installed an SDK (`shared.telemetry.export`); tests hand in their own providers with `use`.
Nothing here ever carries a query or a location: only provider names, outcomes, counts and error types.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from opentelemetry import metrics, trace
from opentelemetry.trace import INVALID_SPAN, Span, Status, StatusCode

from shared.errors import ProviderDeclinedError, ResolutionError
from shared.preview import ELLIPSIS
from shared.validation import split_whitespace

if TYPE_CHECKING:
    from shared.models import SearchResult

NAME = "smithy"
"""The meter and tracer ("the Smithy meter and activity source" of the spec)."""

SEARCHES = "smithy.docs.searches"
FETCHES = "smithy.docs.fetches"
CUT = "smithy.docs.requests.cut"
SOURCE = "smithy.docs.source"
OUTCOME = "smithy.docs.outcome"
RESULT_COUNT = "smithy.docs.result_count"
MIN_PREVIEW_CHARS = "smithy.docs.min_preview_chars"
USAGE_SEARCHES = "smithy.docs.usage.searches"
USAGE_READS = "smithy.docs.usage.reads"
USAGE_FEEDBACK = "smithy.docs.usage.feedback"
USAGE_DROPPED = "smithy.docs.usage.dropped"
SITE = "smithy.docs.site"
VERSION = "smithy.docs.version"
KIND = "smithy.docs.kind"
FEEDBACK_KIND = "smithy.docs.feedback.kind"
REASON = "smithy.docs.reason"
"""The usage counts doc owners' workbook reads (`infra/app/insights-workbook.bicep`): counts by configured site,
version and outcome, never a question or a location."""

PROVIDER_NAME = "smithy.docs.provider.name"
PROVIDER_OUTCOME = "smithy.docs.provider.outcome"
PROVIDER_REASON = "smithy.docs.provider.reason"
ERROR_TYPE = "error.type"
"""Attributes of a provider-call span; `error.type` is OpenTelemetry's own name for a failure's kind."""


class _Instruments:
    def __init__(
        self, meter_provider: metrics.MeterProvider | None, tracer_provider: trace.TracerProvider | None
    ) -> None:
        meter = metrics.get_meter(NAME, meter_provider=meter_provider)
        self.tracer = trace.get_tracer(NAME, tracer_provider=tracer_provider)
        self._tracer_provider = tracer_provider
        self.searches = meter.create_counter(
            SEARCHES, unit="{search}", description="Searches answered, by winning provider and outcome (ok, empty)"
        )
        self.fetches = meter.create_counter(
            FETCHES, unit="{fetch}", description="Fetches answered, by serving provider and outcome (ok, not_found)"
        )
        self.cut = meter.create_counter(
            CUT, unit="{request}", description="Requests cut off before they were whole, by reason (slow_body)"
        )
        self.usage = {
            USAGE_SEARCHES: meter.create_counter(
                USAGE_SEARCHES, unit="{search}", description="Searches kept for usage insights, by site and outcome"
            ),
            USAGE_READS: meter.create_counter(
                USAGE_READS, unit="{read}", description="Page reads kept for usage insights, by site"
            ),
            USAGE_FEEDBACK: meter.create_counter(
                USAGE_FEEDBACK, unit="{feedback}", description="Agents' feedback on pages, by site and kind"
            ),
            USAGE_DROPPED: meter.create_counter(
                USAGE_DROPPED, unit="{event}", description="Usage events not kept, by reason (queue_full, store_failed)"
            ),
        }

    def tracing(self) -> bool:
        """Whether an SDK records spans: without one the service starts none and sets no result-set tags."""
        provider = self._tracer_provider or trace.get_tracer_provider()
        return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


_instruments = _Instruments(None, None)
_operation: ContextVar[Span] = ContextVar("docs_operation", default=INVALID_SPAN)
"""The span of the search or get in progress, which its result-set tags go on."""


def use(
    *, meter_provider: metrics.MeterProvider | None = None, tracer_provider: trace.TracerProvider | None = None
) -> None:
    """Record through these providers instead of the global ones (None: the global one again).

    The global providers can be set once per process; tests pass their own SDK providers here instead.
    """
    global _instruments
    _instruments = _Instruments(meter_provider, tracer_provider)


@contextmanager
def operation(name: str) -> Iterator[Span]:
    """The span a search or get is tagged on: the caller's current span when it records, else a new `docs.<name>`.

    Under a host that traces requests the tags ride the request's span, the spec's "current activity"; a host
    that only exports still gets one span per operation to carry them.
    """
    if not _instruments.tracing():
        yield INVALID_SPAN
        return
    current = trace.get_current_span()
    if current.is_recording():
        with _tagging(current):
            yield current
        return
    with _instruments.tracer.start_as_current_span(f"docs.{name}") as span, _tagging(span):
        yield span


@contextmanager
def _tagging(span: Span) -> Iterator[None]:
    token = _operation.set(span)
    try:
        yield
    finally:
        _operation.reset(token)


def searched(source: str, results: Sequence[SearchResult]) -> None:
    """Count a finished search (`ok` with results, else `empty`) and tag its span with the result set."""
    _instruments.searches.add(1, {SOURCE: source, OUTCOME: "ok" if results else "empty"})
    span = _operation.get()
    span.set_attribute(RESULT_COUNT, len(results))
    if results:
        span.set_attribute(MIN_PREVIEW_CHARS, min(visible_chars(result.preview_text) for result in results))


def fetched(source: str, found: bool) -> None:
    """Count a finished fetch: `ok` when a non-empty document came back, `not_found` for anything else."""
    _instruments.fetches.add(1, {SOURCE: source, OUTCOME: "ok" if found else "not_found"})


def cut(reason: str) -> None:
    """Count a request the service cut off before it was whole (`slow_body`)."""
    _instruments.cut.add(1, {OUTCOME: reason})


def used(name: str, count: int = 1, **attributes: str) -> None:
    """Count usage for the insights workbook: `name` one of the `USAGE_*` counters, `attributes` by their short
    names (`site`, `version`, `outcome`, `kind`, `feedback_kind`, `reason`), all from closed sets."""
    names = {"site": SITE, "version": VERSION, "outcome": OUTCOME, "kind": KIND, "feedback_kind": FEEDBACK_KIND}
    names["reason"] = REASON
    _instruments.usage[name].add(count, {names[key]: value for key, value in attributes.items()})


def visible_chars(preview: str) -> int:
    """A preview's visible length: whitespace collapsed, the `...` of cut ends left out, in UTF-16 code units
    (the unit the preview budget counts)."""
    text = " ".join(split_whitespace(preview)).removeprefix(ELLIPSIS).removesuffix(ELLIPSIS)
    return len(" ".join(split_whitespace(text)).encode("utf-16-le")) // 2


class ProviderCall:
    """The span of one provider call, told what came back; failures are classified as they pass through."""

    def __init__(self, span: Span) -> None:
        self.span = span

    def answered(self, count: int) -> None:
        """A search returned `count` results (`ok`, or `empty` for none)."""
        self.span.set_attribute(PROVIDER_OUTCOME, "ok" if count else "empty")
        self.span.set_attribute(RESULT_COUNT, count)

    def served(self) -> None:
        """A get returned a document."""
        self.span.set_attribute(PROVIDER_OUTCOME, "ok")


@contextmanager
def provider_call(operation: str, provider: str) -> Iterator[ProviderCall]:
    """A `docs.provider.<operation>` span around one provider call, with its name and outcome.

    Outcomes: `ok`, `empty`, `miss` (with the resolution's reason), `declined`, `timeout`, `failed` (with the
    error's type, never its message, which can quote the query) and `cancelled`. Exceptions pass through.
    """
    if not _instruments.tracing():
        yield ProviderCall(INVALID_SPAN)
        return
    with _instruments.tracer.start_as_current_span(
        f"docs.provider.{operation}",
        kind=trace.SpanKind.INTERNAL,
        attributes={PROVIDER_NAME: provider},
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield ProviderCall(span)
        except asyncio.CancelledError:
            span.set_attribute(PROVIDER_OUTCOME, "cancelled")
            raise
        except ResolutionError as exc:
            span.set_attributes({PROVIDER_OUTCOME: "miss", PROVIDER_REASON: exc.resolution.reason.value})
            raise
        except ProviderDeclinedError:
            span.set_attribute(PROVIDER_OUTCOME, "declined")
            raise
        except TimeoutError:
            _failed(span, "timeout", "TimeoutError")
            raise
        except Exception as exc:
            _failed(span, "failed", type(exc).__name__)
            raise


def _failed(span: Span, outcome: str, error_type: str) -> None:
    span.set_attributes({PROVIDER_OUTCOME: outcome, ERROR_TYPE: error_type})
    span.set_status(Status(StatusCode.ERROR))
