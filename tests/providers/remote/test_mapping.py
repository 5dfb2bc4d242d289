"""The remote answers as this deployment's results, documents and misses (pure: no server needed)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.models import Reason, SiteAnswer
from shared.providers.remote import mapping

RESULT = {
    "location": "guide/install",
    "title": "Install",
    "url": "https://docs.example.com/alpha/guide/install/",
    "site": "alpha",
    "previewText": "Install the agent",
    "score": 1.5,
    "provider": "ai_search",
}
DOCUMENT = {
    "requestedLocation": "guide/install",
    "location": "guide/install/",
    "site": "alpha",
    "url": "https://docs.example.com/alpha/guide/install/",
    "provider": "mkdocs",
    "content": "---\nsource: x\n---\n# Install",
    "resolution": {"requestedLocation": "guide/install", "reason": "resolved", "rule": "exact", "site": "alpha"},
}


def test_results_are_attributed_here_and_say_which_backend_answered_there() -> None:
    found, backend = mapping.search_results({"query": "q", "provider": "ai_search", "results": [RESULT] * 3}, 2)
    results = found.results

    assert backend == "ai_search" and len(results) == 2
    assert {r.provider for r in results} == {"smithy_remote"} and results[0].location == "guide/install"
    assert {r.backend for r in results} == {"ai_search"}  # each result says which backend answered there


def test_the_remotes_freshness_is_kept_and_an_older_remotes_bare_site_states_are_read() -> None:
    indexed = "2026-12-02T10:00:00Z"
    answer = {
        "query": "q",
        "provider": "mkdocs",
        "results": [RESULT | {"indexedAt": indexed}],
        "sites": {
            "alpha": {"state": "searched", "indexedAt": indexed},
            "beta": {"state": "loading", "indexedAt": None},
        },
    }
    found, _ = mapping.search_results(answer, 5)
    assert found.results[0].indexed_at == datetime(2026, 12, 2, 10, tzinfo=UTC)
    assert found.sites is not None and found.sites["alpha"].indexed_at == found.results[0].indexed_at
    assert found.sites["beta"].state is SiteAnswer.LOADING

    older = {"query": "q", "provider": "mkdocs", "results": [RESULT], "sites": {"alpha": "searched"}}
    found, _ = mapping.search_results(older, 5)
    assert found.sites is not None and found.sites["alpha"].state is SiteAnswer.SEARCHED
    assert found.sites["alpha"].indexed_at is None and found.results[0].indexed_at is None


def test_a_document_keeps_everything_but_its_attribution() -> None:
    document, backend = mapping.document(DOCUMENT)

    assert backend == "mkdocs" and document.provider == "smithy_remote" and document.backend == "mkdocs"
    assert (document.location, document.resolution.rule.value) == ("guide/install/", "exact")


@pytest.mark.parametrize(
    "structured",
    [None, {}, {"query": "q", "provider": "x", "results": [{"location": 1}]}, {"results": "none"}],
    ids=["no structured content", "empty", "bad result", "not a list"],
)
def test_an_answer_that_is_not_a_search_response_is_malformed(structured: dict[str, object] | None) -> None:
    with pytest.raises(ValueError):
        mapping.search_results(structured, 5)


def test_an_unresolved_or_empty_document_is_malformed() -> None:
    with pytest.raises(ValueError):
        mapping.document({**DOCUMENT, "content": ""})
    with pytest.raises(ValueError):
        mapping.document({**DOCUMENT, "resolution": {**DOCUMENT["resolution"], "reason": "not_found"}})  # type: ignore[dict-item]


def test_a_resolution_reason_in_a_tool_error_is_a_miss_with_its_candidates() -> None:
    text = (
        "ambiguous: metrics matches pages on several sites\n"
        "The location matches several pages. Call get_doc again with one of the candidates.\n"
        "Candidates: beta-docs/metrics/, gamma-docs/metrics/"
    )

    miss = mapping.miss(text, "metrics")

    assert miss is not None and miss.reason is Reason.AMBIGUOUS and miss.requested_location == "metrics"
    assert miss.candidates == ["beta-docs/metrics/", "gamma-docs/metrics/"]
    assert miss.detail.startswith("the remote deployment: metrics matches")


@pytest.mark.parametrize(
    "text",
    [
        "bad_request: location is too long. Correct the argument and call again.",
        "timeout: no answer within 30 s. Try again.",
        "unavailable: nothing could be searched",
        "resolved: odd",
        "Internal error without a code",
        "",
    ],
)
def test_other_tool_errors_are_failures_not_misses(text: str) -> None:
    assert mapping.miss(text, "x") is None
