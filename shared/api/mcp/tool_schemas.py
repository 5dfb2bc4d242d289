"""The output schemas the tool list advertises: each answer's fields, which are required and each one's JSON type,
nested models as plain objects and arrays, and the error body a tool error carries (the REST reference documents
every field). A client that validates every call's structured content against them (the Python 1.x client checks
the schema itself each time) pays for their size on every call, so they say no more than that; the answers are
still checked against the full models (`advertised`).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from shared.api.mcp.rendering import SearchAnswer
from shared.models import Document, FeedbackAccepted, VersionListing

M = TypeVar("M", bound=BaseModel)

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
        },
        "resolution": {"type": "object"},
    },
}
"""A tool error's structured content (the REST API's error body) as far as a client checks it."""


def advertised(model: type[M]) -> type[M]:
    """`model`, advertising the tool list's shallow schema (`_with_errors`) instead of its own. The SDK derives a
    tool's output schema from its return annotation (`Annotated[CallToolResult, advertised(Model)]`) and checks a
    non-error answer against the model: this says what the schema is through pydantic's public schema hook, and
    leaves the check to the model itself."""
    schema = _with_errors(model.model_json_schema(by_alias=True, mode="serialization"))

    def hook(cls: type[M], core_schema: Any, handler: Any) -> dict[str, Any] | None:
        return schema

    return type(model.__name__, (model,), {"__get_pydantic_json_schema__": classmethod(hook), "__module__": __name__})


def _with_errors(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """The tool's output schema as the tool list carries it: the answer's fields, which are required, and each one's
    JSON type, nested models as plain objects and arrays (the REST reference documents every field), also admitting
    the error body a tool error carries (the TypeScript client validates structured content even on a tool error).
    A client that validates every call's structured content against it (the Python 1.x client checks the schema
    itself each time) pays for its size on every call, so it says no more than that."""
    if schema is None:
        return None
    fields = {name: _shallow(field, schema.get("$defs", {})) for name, field in schema["properties"].items()}
    answer = {"type": "object", "required": schema.get("required", []), "properties": fields}
    return {"type": "object", "anyOf": [answer, ERROR_SCHEMA]}


def _shallow(field: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    """A field's JSON type(s), a model or enum it refers to as what it is (`object`, `string`), arrays of them too."""
    if "$ref" in field:
        target = definitions.get(field["$ref"].rsplit("/", 1)[-1], {})
        return {"type": target.get("type", "object")}
    if "anyOf" in field:
        types: list[str] = []
        for option in field["anyOf"]:
            kind = _shallow(option, definitions)["type"]
            types.extend(kind if isinstance(kind, list) else [kind])
        unique = list(dict.fromkeys(types))
        return {"type": unique[0] if len(unique) == 1 else unique}
    if field.get("type") == "array":
        return {"type": "array", "items": _shallow(field.get("items", {}), definitions)}
    return {"type": field.get("type", "object")} if "type" in field or "properties" in field else {}


SEARCH_OUTPUT = advertised(SearchAnswer)
DOCUMENT_OUTPUT = advertised(Document)
VERSIONS_OUTPUT = advertised(VersionListing)
FEEDBACK_OUTPUT = advertised(FeedbackAccepted)
"""What each tool's answer is checked against, advertising the shallow schema (`advertised`)."""
