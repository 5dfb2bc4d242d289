"""Provider attribution and safe query shapes, on the current OpenTelemetry span and in structured logs.

Queries and locations are free text that can carry tokens or signed URLs: only their lengths and term counts
are ever recorded, never the text.
"""

from __future__ import annotations

import logging

from opentelemetry import trace

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
