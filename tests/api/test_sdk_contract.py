"""The MCP SDK's surface this server stands on, pinned: an SDK upgrade that moves it fails here, loudly, before an
agent meets a changed answer. The server uses only the SDK's public surface (no attribute of an SDK object whose
name starts with `_`): tools by decorator with their output schemas from the return annotation (`tool_schemas`),
the middleware list for what it answers itself (page reads, no prompts)."""

from __future__ import annotations

import ast
import re
from importlib import metadata
from pathlib import Path

import pytest
from mcp.server.mcpserver import MCPServer

from shared.api.mcp import server as api_mcp
from shared.api.mcp.tool_schemas import DOCUMENT_OUTPUT, SEARCH_OUTPUT, VERSIONS_OUTPUT
from tests.api.test_mcp_revisions import LEGACY, MODERN, call, result_of
from tests.support.uvicorn_server import UvicornServer

ROOT = Path(__file__).resolve().parents[2]
PINNED = re.search(r"^mcp==(\S+)$", (ROOT / "requirements.txt").read_text(), re.MULTILINE)


def test_the_installed_sdk_is_the_pinned_one() -> None:
    assert PINNED is not None and metadata.version("mcp") == PINNED.group(1)


def test_the_api_touches_no_private_attribute_of_an_sdk_object() -> None:
    own = {"self", "cls", "server", "exc"}
    reached = []
    for path in (ROOT / "shared" / "api").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                owner = node.value
                if isinstance(owner, ast.Attribute) or (isinstance(owner, ast.Name) and owner.id not in own):
                    reached.append(f"{path.name}:{node.lineno} .{node.attr}")
                elif isinstance(owner, ast.Name) and owner.id == "server":
                    reached.append(f"{path.name}:{node.lineno} server.{node.attr}")
    sdk_private = {name for name in vars(MCPServer(name="probe")) if name.startswith("_")}
    for path in (ROOT / "shared" / "api").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in sdk_private:
                reached.append(f"{path.name}:{node.lineno} .{node.attr} (the SDK server's own)")
    assert sdk_private and reached == []


@pytest.mark.parametrize("era", [MODERN, LEGACY])
def test_the_tool_list_carries_the_advertised_schemas_and_no_prompts(server: UvicornServer, era: str) -> None:
    listed = {tool["name"]: tool["outputSchema"] for tool in result_of(call(server.url, era, "tools/list"))["tools"]}
    expected = {
        "search_docs": SEARCH_OUTPUT.model_json_schema(),
        "get_doc": DOCUMENT_OUTPUT.model_json_schema(),
        "list_versions": VERSIONS_OUTPUT.model_json_schema(),
    }
    assert listed == expected
    prompts = call(server.url, era, "prompts/list").json()
    assert prompts["error"]["code"] == -32601
    assert {"prompts/list", "prompts/get"} == api_mcp.PROMPT_METHODS
