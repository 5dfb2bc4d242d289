"""The error body on the wire: what a REST failure answers and an MCP tool error carries, written and read here.

The API writes it (`encode`, with the reason code `shared.api.errors` chose for the error) and the remote provider
reads another deployment's back (`decode`), so the two sides cannot drift apart. Programs read fields: `error.code`,
and for a miss the `resolution`, whose candidates are a list.

A tool error's text is for agents. It starts with the same code (`not_found: ...`) and lists a miss's candidates on
one line (`candidates_line`); `decode` reads it only where the body lacks a field, as from a deployment from before
tool errors carried the body (compatibility until 2027-06-30). That text cannot tell a comma inside a candidate
from one between candidates; the body can.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from shared.models import OutlineEntry, Resolution

CANDIDATES = "Candidates: "


class ErrorDetail(BaseModel):
    code: str = Field(description="The reason code: `bad_request`, a resolution reason, `unavailable`, `timeout`...")
    message: str


class ErrorBody(BaseModel):
    """Every failure's body: the error, plus the resolution for `get` and each provider's failure when nothing
    could be searched."""

    error: ErrorDetail
    resolution: Resolution | None = None
    providers: dict[str, dict[str, str]] | None = None
    sections: list[OutlineEntry] | None = Field(
        default=None, description="With a `section` the page does not have: the page's sections to choose from."
    )


def encode(
    code: str,
    message: str,
    *,
    resolution: Resolution | None = None,
    providers: Mapping[str, Mapping[str, str]] | None = None,
    sections: Sequence[OutlineEntry] | None = None,
) -> dict[str, Any]:
    """The body (`ErrorBody`) as JSON, with only the fields given."""
    body: dict[str, Any] = {"error": {"code": code, "message": message}}
    if resolution is not None:
        body["resolution"] = resolution.model_dump(mode="json", by_alias=True)
    if providers is not None:
        body["providers"] = {name: dict(details) for name, details in providers.items()}
    if sections is not None:
        body["sections"] = [entry.model_dump(mode="json", by_alias=True) for entry in sections]
    return body


def candidates_line(candidates: Sequence[str]) -> str:
    """The line of a tool error's text that lists a miss's candidates."""
    return CANDIDATES + ", ".join(candidates)


@dataclass(frozen=True, slots=True)
class ToolFailure:
    """What a tool error tells a program: its reason code ("" when it has none), its message, and for a miss the
    candidates and the resolution's detail."""

    code: str
    message: str
    candidates: tuple[str, ...] = ()


def decode(structured: Mapping[str, Any] | None, text: str = "") -> ToolFailure:
    """A tool error from its structured content (the body), with its text filling in what the body lacks.

    A `resolution` that is not one raises ValueError (pydantic's ValidationError)."""
    body = structured if isinstance(structured, Mapping) else {}
    error = body.get("error")
    code, message = (error.get("code"), error.get("message")) if isinstance(error, Mapping) else (None, None)
    head, listed = _read_text(text)
    code = code if isinstance(code, str) and code else reason_code(text)
    given = body.get("resolution")
    if isinstance(given, Mapping):
        resolution = Resolution.model_validate(given)
        return ToolFailure(code, resolution.detail, tuple(resolution.candidates))
    return ToolFailure(code, message if isinstance(message, str) else head, listed)


def reason_code(text: str) -> str:
    """The code a tool error's text starts with (`not_found`, `bad_request`, ...), or "" when it has none."""
    head, separator, _ = text.partition(":")
    code = head.strip()
    return code if separator and code.replace("_", "").isalpha() and code.islower() else ""


def _read_text(text: str) -> tuple[str, tuple[str, ...]]:
    """The first line's message (after the code) and the candidates the text lists."""
    lines = text.splitlines()
    head = lines[0].partition(":")[2].strip() if lines else ""
    listed = tuple(
        candidate.strip()
        for line in lines
        if line.startswith(CANDIDATES)
        for candidate in line[len(CANDIDATES) :].split(",")
        if candidate.strip()
    )
    return head, listed
