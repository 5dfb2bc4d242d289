"""The official TypeScript MCP clients (pinned in package.json) against the app under uvicorn: what works for the
Python client must work for the clients agents' hosts are built on. `@modelcontextprotocol/sdk` 1.x speaks the
2025-11-25 handshake; the v2 `@modelcontextprotocol/client` runs in both of its eras: `legacy` (its default) and
`auto`, which probes with `server/discover` and speaks 2026-07-28 here (as the Inspector does with
`--protocol-era auto`). The clients check every tool answer against the tool's output schema, tool errors
included."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.uvicorn_server import UvicornServer

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "support" / "mcp_client.mjs"
HANDBOOK = "gamma-docs/reference/handbook/"


def run_client(url: str, sdk: str, era: str) -> dict[str, Any]:
    node = shutil.which("node")
    package = "sdk" if sdk == "v1" else "client"
    if node is None or not (ROOT / "node_modules" / "@modelcontextprotocol" / package).is_dir():
        pytest.fail(f"node and the pinned @modelcontextprotocol/{package} are needed: run `make setup`", pytrace=False)
    command = [node, str(SCRIPT), sdk, era, url + "/api/mcp", HANDBOOK, "operations handbook inventory listing"]
    finished = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert finished.returncode == 0, finished.stderr
    report: dict[str, Any] = json.loads(finished.stdout)
    return report


@pytest.mark.parametrize(
    ("sdk", "era", "version"),
    [("v1", "legacy", None), ("v2", "legacy", "2025-11-25"), ("v2", "auto", "2026-07-28")],
    ids=["sdk 1.x", "client 2.x legacy", "client 2.x auto"],
)
def test_the_typescript_client_reads_a_long_page_in_parts_and_as_a_resource(
    server: UvicornServer, sdk: str, era: str, version: str | None
) -> None:
    whole = httpx.get(server.url + "/api/docs/get", params={"location": HANDBOOK}, timeout=30).json()["content"]
    section = httpx.get(
        server.url + "/api/docs/get", params={"location": HANDBOOK, "section": "chapter-5-capacity"}, timeout=30
    ).json()["content"]

    report = run_client(server.url, sdk, era)

    assert report["version"] == version
    skills = {"extensions": {"io.modelcontextprotocol/skills": {}}} if version == "2026-07-28" else {}
    assert report["capabilities"] == {
        "resources": {"subscribe": False, "listChanged": False},
        "tools": {"listChanged": False},
        **skills,  # the Skills extension, declared where the revision has capabilities.extensions
    }
    assert report["tools"] == ["search_docs", "get_doc", "list_versions"]
    assert report["page"]["joined"] == whole and report["page"]["parts"] >= 6
    assert max(report["page"]["sizes"]) <= 24_000
    assert report["section"]["joined"] == section and report["section"]["parts"] >= 2
    assert "chapter-5-capacity" in report["outline"] and "the-retention-setting" in report["outline"]
    assert report["missing"]["isError"] is True
    assert report["missing"]["structured"]["error"]["code"] == "not_found"  # validated, not thrown
    assert report["unknownArgument"]["isError"] is True and "location" in report["unknownArgument"]["text"]
    assert report["link"] == {"uri": "docs://gamma-docs/reference/handbook/", "mimeType": "text/markdown"}
    assert report["resource"]["joined"] == whole and report["resource"]["parts"] >= 6
    assert report["templates"] == ["docs://{site}/{+path}{?offset,maxChars}"]
    assert report["blank"]["isError"] is True and report["blank"]["text"].startswith("bad_request: query is required")
    assert report["unknownTool"] == {"thrown": True, "code": -32602}
    assert report["prompts"]["thrown"] is True  # -32601; the v2 client in the 2026 era reports its HTTP 404
    assert report["search"]["results"] + report["search"]["leftOut"] == 25 and report["search"]["leftOut"] >= 1
    code = report["code"]
    assert code["isError"] is False and code["first"]["code"]["language"] == "terraform"
    assert code["first"]["location"] == "gamma-docs/tutorials/first-steps/#provision-the-pager-receiver"
    assert '```terraform\nresource "gamma_receiver" "pager" {' in code["text"]
    assert report["badKind"]["isError"] is True and "page, code" in report["badKind"]["text"]
