"""The error body is one encoder/decoder pair: what the API writes into a tool error, the remote provider reads back
as it was, candidates with commas, quotes and any script included."""

from __future__ import annotations

import pytest
from mcp.types import CallToolResult, TextContent

from shared.api.errors import ServiceNotStarted
from shared.api.mcp.server import failure
from shared.error_body import ToolFailure, decode, encode
from shared.errors import InvalidRequestError, RequestTimeoutError, ResolutionError
from shared.models import Reason, Resolution
from shared.providers.remote import mapping

AWKWARD = [
    ["alpha/a, b/", "beta/a/"],
    ['alpha/say "hi"/', "alpha/it's/"],
    ["alpha/größe/", "beta/页面/", "gamma/ünïcode, ñ/"],
    ["alpha/,/", "alpha/ , /", "beta/trailing,/"],
]


def ambiguous(candidates: list[str]) -> Resolution:
    return Resolution(
        requested_location="metrics",
        reason=Reason.AMBIGUOUS,
        detail="metrics matches pages on several sites",
        candidates=candidates,
    )


@pytest.mark.parametrize("candidates", AWKWARD)
def test_a_miss_decodes_as_it_was_encoded(candidates: list[str]) -> None:
    resolution = ambiguous(candidates)

    read = decode(encode("ambiguous", resolution.detail, resolution=resolution))

    assert read == ToolFailure("ambiguous", resolution.detail, tuple(candidates))


@pytest.mark.parametrize(
    "error",
    [InvalidRequestError("q is required"), RequestTimeoutError(30), ServiceNotStarted("not yet"), ValueError("x")],
    ids=["bad_request", "timeout", "starting", "internal_error"],
)
def test_every_tool_error_the_api_writes_is_read_back_with_its_code_and_message(error: Exception) -> None:
    result = failure(error)
    body = result.structured_content
    assert body is not None

    read = decode(body, text_of(result))

    assert (read.code, read.message) == (body["error"]["code"], body["error"]["message"]) and not read.candidates
    assert text_of(result).startswith(read.code + ":")  # the text agents read names the same code


@pytest.mark.parametrize("candidates", AWKWARD)
def test_the_apis_tool_error_is_the_remotes_miss_with_the_same_candidates(candidates: list[str]) -> None:
    result = failure(ResolutionError(ambiguous(candidates)))

    miss = mapping.miss(text_of(result), "metrics", result.structured_content)

    assert miss is not None and miss.reason is Reason.AMBIGUOUS
    assert miss.candidates == candidates
    assert miss.detail == "the remote deployment: metrics matches pages on several sites"


def test_a_deployment_from_before_the_body_is_read_from_its_text() -> None:
    text = "ambiguous: metrics matches pages\nCall get_doc again.\nCandidates: beta-docs/metrics/, gamma-docs/metrics/"

    assert decode(None, text) == ToolFailure(
        "ambiguous", "metrics matches pages", ("beta-docs/metrics/", "gamma-docs/metrics/")
    )
    assert decode({"error": {"code": "not_found"}}, "not_found: gone") == ToolFailure("not_found", "gone")
    assert decode({}, "Internal error without a code").code == ""


def test_a_resolution_that_is_not_one_is_refused() -> None:
    with pytest.raises(ValueError):
        decode({"error": {"code": "ambiguous", "message": "m"}, "resolution": {"reason": "no such reason"}})


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))
