"""What the service tells operators: provider attribution, the spec's production signals, safe query shapes.

Attribution rides the current OpenTelemetry span and structured logs (here); the counters, result-set tags and
provider-call spans are in `signals`; exporting them to Azure Monitor, which only a host sets up, is in `export`.
Queries and locations are free text that can carry tokens or signed URLs: only their lengths and term counts
are ever recorded, never the text.
"""

from __future__ import annotations

import logging

from opentelemetry import trace

from shared.telemetry.signals import fetched, operation, provider_call, searched, use, used

__all__ = [
    "FETCH_PROVIDER",
    "PROVIDER",
    "SEARCH_PROVIDER",
    "attribute",
    "fetched",
    "operation",
    "provider_call",
    "query_shape",
    "searched",
    "use",
    "used",
]

log = logging.getLogger(__name__)

SEARCH_PROVIDER = "docs.search.provider"
FETCH_PROVIDER = "docs.fetch.provider"
PROVIDER = "docs.provider"


def attribute(operation_tag: str, provider: str) -> None:
    """Set the split tag and the legacy `docs.provider` tag to the winning provider (or `none`)."""
    span = trace.get_current_span()
    span.set_attribute(operation_tag, provider)
    span.set_attribute(PROVIDER, provider)
    log.debug("docs attribution %s=%s", operation_tag, provider, extra={operation_tag: provider, PROVIDER: provider})


def query_shape(text: str) -> dict[str, int]:
    """What may be logged about a query or location: its length and term count."""
    return {"length": len(text), "terms": len(text.split())}
