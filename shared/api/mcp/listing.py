"""What the server's lists and handshake claim, adjusted to what this server does and to who asks: no `prompts`
capability (the SDK claims one for every server), and a tool list whose `site` arguments name only the sites the
caller may read (`SiteAudiences`).

No `from __future__ import annotations`, as in the server it serves.
"""

from collections.abc import Sequence
from typing import Any

from mcp.server.context import HandlerResult
from pydantic import BaseModel


def without_prompts(answered: HandlerResult) -> HandlerResult:
    """An initialize or discover result claiming no `prompts` capability (the SDK claims one for every server)."""
    if isinstance(answered, dict):
        claimed = answered.get("capabilities")
        if isinstance(claimed, dict) and "prompts" in claimed:
            return {**answered, "capabilities": {key: value for key, value in claimed.items() if key != "prompts"}}
        return answered
    capabilities = getattr(answered, "capabilities", None)
    if not isinstance(answered, BaseModel) or capabilities is None or getattr(capabilities, "prompts", None) is None:
        return answered
    return answered.model_copy(update={"capabilities": capabilities.model_copy(update={"prompts": None})})


def within_ceiling(answered: HandlerResult, sites: Sequence[str]) -> HandlerResult:
    """A tools/list answer whose `site` arguments list only `sites`, those the caller may read (the tools were
    built naming every site)."""

    def narrowed(schema: dict[str, Any]) -> dict[str, Any]:
        site = schema.get("properties", {}).get("site")
        if not isinstance(site, dict):
            return schema
        if "enum" in site:
            site = {**site, "enum": list(sites)}
        elif "anyOf" in site:
            site = {**site, "anyOf": [{**o, "enum": list(sites)} if "enum" in o else o for o in site["anyOf"]]}
        return {**schema, "properties": {**schema["properties"], "site": site}}

    if isinstance(answered, dict):
        tools = [{**tool, "inputSchema": narrowed(tool.get("inputSchema", {}))} for tool in answered.get("tools", [])]
        return {**answered, "tools": tools}
    listed = getattr(answered, "tools", None)
    if not isinstance(answered, BaseModel) or listed is None:
        return answered
    tools = [tool.model_copy(update={"input_schema": narrowed(tool.input_schema)}) for tool in listed]
    return answered.model_copy(update={"tools": tools})
