"""Turn the other deployment's tool answers into this one's results, documents and misses (pure: no I/O).

The other deployment is this same service, so its structured content is exactly the REST JSON (`SearchResponse`,
`Document`) and is validated against those models: anything else is malformed. What it returns is kept as it is
(its locations, sites, urls, scores, previews, resolution) except for `provider`, which becomes `smithy_remote`:
attribution names the link of this chain that answered. Which backend answered on the other side is the remote
answer's own `provider`, kept in each result's and the document's `backend` (and in health's last answer).

A tool error's text starts with the REST API's reason code (`not_found: ...`). A resolution reason becomes a
`Resolution` (with the candidates an `ambiguous` lists), so the chain can rank the remote miss against local ones;
every other code (`bad_request`, `timeout`, `unavailable`, ...) is not a miss but a failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.models import Document, Reason, Resolution, SearchResponse, SearchResult

PROVIDER = "smithy_remote"
CANDIDATES = "Candidates: "
MISSES = frozenset(reason for reason in Reason if reason is not Reason.RESOLVED)


def search_results(structured: Mapping[str, Any] | None, limit: int) -> tuple[list[SearchResult], str]:
    """Up to `limit` results attributed to this provider, and the remote answer's own `provider`."""
    response = SearchResponse.model_validate(_required(structured))
    results = [
        result.model_copy(update={"provider": PROVIDER, "backend": result.backend or result.provider})
        for result in response.results[:limit]
    ]
    return results, response.provider


def document(structured: Mapping[str, Any] | None) -> tuple[Document, str]:
    """The remote page attributed to this provider, and the remote answer's own `provider`."""
    remote = Document.model_validate(_required(structured))
    if remote.resolution.reason is not Reason.RESOLVED or not remote.content:
        raise ValueError("a document must be resolved and carry content")
    return remote.model_copy(
        update={"provider": PROVIDER, "backend": remote.backend or remote.provider}
    ), remote.provider


def reason_code(text: str) -> str:
    """The code a tool error's text starts with (`not_found`, `bad_request`, ...), or "" when it has none."""
    head, separator, _ = text.partition(":")
    code = head.strip()
    return code if separator and code.replace("_", "").isalpha() and code.islower() else ""


def miss(text: str, location: str) -> Resolution | None:
    """The Resolution a `get_doc` tool error reports, or None when its code is not a resolution reason."""
    code = reason_code(text)
    if code not in {reason.value for reason in MISSES}:
        return None
    lines = text.splitlines()
    detail = lines[0].partition(":")[2].strip() if lines else ""
    candidates = [
        candidate.strip()
        for line in lines
        if line.startswith(CANDIDATES)
        for candidate in line[len(CANDIDATES) :].split(",")
        if candidate.strip()
    ]
    return Resolution(
        requested_location=location,
        reason=Reason(code),
        detail=f"the remote deployment: {detail}" if detail else "the remote deployment has no page here",
        candidates=candidates,
    )


def _required(structured: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if not isinstance(structured, Mapping):
        raise ValueError("the tool answered without structured content")
    return structured
