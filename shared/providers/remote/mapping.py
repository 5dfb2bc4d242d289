"""Turn the other deployment's tool answers into this one's results, documents and misses (pure: no I/O).

The other deployment is this same service, so its structured content is exactly the REST JSON (`SearchResponse`,
`Document`) and is validated against those models: anything else is malformed. What it returns is kept as it is
(its locations, sites, urls, scores, previews, resolution) except for `provider`, which becomes `smithy_remote`:
attribution names the link of this chain that answered. Which backend answered on the other side is the remote
answer's own `provider`, kept in each result's and the document's `backend` (and in health's last answer).

A tool error is read as `shared.error_body` decodes it (the REST error body, which the API encodes there). A
resolution reason becomes a `Resolution` (with the candidates an `ambiguous` lists), so the chain can rank the
remote miss against local ones; every other code (`bad_request`, `timeout`, `unavailable`, ...) is not a miss but a
failure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from shared.error_body import decode
from shared.models import Document, Found, Reason, Resolution, SearchResponse

PROVIDER = "smithy_remote"
NO_PAGE = "the remote deployment has no page here"
MISSES = frozenset(reason for reason in Reason if reason is not Reason.RESOLVED)


def search_results(structured: Mapping[str, Any] | None, limit: int) -> tuple[Found, str]:
    """Up to `limit` results attributed to this provider (with how the remote's sites stood), and the remote
    answer's own `provider`."""
    response = SearchResponse.model_validate(_required(structured))
    results = [
        result.model_copy(update={"provider": PROVIDER, "backend": result.backend or result.provider})
        for result in response.results[:limit]
    ]
    return Found(results, sites=response.sites), response.provider


def document(structured: Mapping[str, Any] | None) -> tuple[Document, str]:
    """The remote page attributed to this provider, and the remote answer's own `provider`."""
    remote = Document.model_validate(_required(structured))
    if remote.resolution.reason is not Reason.RESOLVED or not remote.content:
        raise ValueError("a document must be resolved and carry content")
    return remote.model_copy(
        update={"provider": PROVIDER, "backend": remote.backend or remote.provider}
    ), remote.provider


LEGACY_CUT = "[The page is longer than this tool returns"
"""How a deployment from before reads in parts marked a page it cut: such an answer is a part, never a page.
Compatibility until 2027-06-30 (docs/development.md#compatibility-with-older-deployments), like `legacy_document`."""


def whole_document(
    parts: Sequence[Mapping[str, Any] | None], outline: Mapping[str, Any] | None = None
) -> tuple[Document, str]:
    """The page the parts (read one after another with `nextOffset`) join to, with the outline when one was read.

    The parts must follow on from each other, come from one version of the page (one `contentHash`, the outline's
    too) and add up to `totalChars`; anything else is malformed, so the chain falls through to another provider.
    """
    read = [Document.model_validate(_required(part)) for part in parts]
    first = read[0]
    if first.resolution.reason is not Reason.RESOLVED or first.offset != 0 or first.total_chars is None:
        raise ValueError("a page's first part must be resolved and start at offset 0")
    for before, after in pairwise(read):
        if before.next_offset != after.offset or after.content_hash != first.content_hash:
            raise ValueError("the parts do not follow on from one version of the page")
    content = "".join(part.content for part in read)
    if read[-1].next_offset is not None or len(content) != first.total_chars or not content:
        raise ValueError("the parts do not add up to the whole page")
    headings = None
    if outline is not None:
        described = Document.model_validate(_required(outline))
        if described.content_hash != first.content_hash or described.outline is None:
            raise ValueError("the outline is not of the version of the page that was read")
        headings = described.outline
    whole = first.model_copy(
        update={
            "content": content,
            "provider": PROVIDER,
            "backend": first.backend or first.provider,
            "outline": headings,
            "total_chars": None,
            "next_offset": None,
            "content_hash": None,
        }
    )
    return whole, first.provider


def legacy_document(structured: Mapping[str, Any] | None) -> tuple[Document, str]:
    """A page from a deployment that reads pages only whole: ValueError when it cut the page. Compatibility until
    2027-06-30."""
    remote, backend = document(structured)
    if LEGACY_CUT in remote.content:
        raise ValueError("the remote deployment answered only part of the page")
    return remote, backend


def error_code(structured: Mapping[str, Any] | None, text: str) -> str:
    """A tool error's reason code: from its structured content (`error.code`), else from its text."""
    return decode(structured, text).code


def miss(text: str, location: str, structured: Mapping[str, Any] | None = None) -> Resolution | None:
    """The Resolution a `get_doc` tool error reports, or None when its code is not a resolution reason."""
    failure = decode(structured, text)
    if failure.code not in {reason.value for reason in MISSES}:
        return None
    return Resolution(
        requested_location=location,
        reason=Reason(failure.code),
        detail=f"the remote deployment: {failure.message}" if failure.message else NO_PAGE,
        candidates=list(failure.candidates),
    )


def _required(structured: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if not isinstance(structured, Mapping):
        raise ValueError("the tool answered without structured content")
    return structured
