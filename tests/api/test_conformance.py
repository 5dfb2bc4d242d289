"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in package.json, run on the Node 22
it needs, also pinned) against the app under uvicorn, over every server scenario that applies to this server.

Run here: `server-initialize`, `ping`, `tools-list`, `resources-list` and `dns-rebinding-protection`.

Left out, with why:
- fixture-only: the `tools-call-*` scenarios (`simple-text`, `image`, `audio`, `embedded-resource`, `mixed-content`,
  `with-logging`, `error`, `with-progress`, `sampling`, `elicitation`), `json-schema-2020-12`, the `elicitation-*`
  scenarios, `resources-read-text`, `resources-read-binary`, `resources-templates-read` and the `prompts-get-*`
  scenarios call tools, resources and prompts the suite's reference server defines (`test_simple_text`,
  `test://static-text`, ...), which a documentation server does not have;
- not offered, so refused as the specification allows: `resources-subscribe` and `resources-unsubscribe` (no
  subscriptions: a stateless instance has nothing to notify), `prompts-list` (no prompts), `logging-set-level` (no
  logging capability) and `completion-complete` (no completions);
- `server-sse-polling` and `server-sse-multiple-streams`: this endpoint answers JSON, never an event stream (the
  Functions HTTP trigger buffers responses), and holds no session.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.api import create_app
from tests.support.sites import ROOTED_OVERRIDE, fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin

ROOT = Path(__file__).resolve().parents[2]
NODE_22 = ROOT / "node_modules" / "node" / "bin" / "node"
SUITE = ROOT / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
SCENARIOS = ("server-initialize", "ping", "tools-list", "resources-list", "dns-rebinding-protection")


@pytest.fixture(scope="module")
def server(built_origin: Path) -> Iterator[UvicornServer]:
    with StaticOrigin(built_origin) as origin:
        settings = fixture_settings(origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false")
        with UvicornServer(create_app(settings, embedding=None)) as running:
            yield running


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_conformance_suite_passes(server: UvicornServer, scenario: str, tmp_path: Path) -> None:
    if not NODE_22.is_file() or not SUITE.is_file():
        pytest.fail("the pinned conformance suite and Node 22 are needed: run `make setup`", pytrace=False)
    command = [str(NODE_22), str(SUITE), "server", "--url", server.url + "/api/mcp", "--scenario", scenario]
    finished = subprocess.run(
        [*command, "--output-dir", str(tmp_path)], capture_output=True, text=True, timeout=120, check=False
    )
    checks = [
        check for report in tmp_path.rglob("checks.json") for check in json.loads(report.read_text(encoding="utf-8"))
    ]
    assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr[-2000:]
    assert checks and all(check["status"] == "SUCCESS" for check in checks), checks
