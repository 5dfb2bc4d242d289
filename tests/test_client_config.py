"""Setup in one step (`shared.client_config`, `python -m shared client-config`): each host's configuration is valid
JSON (or a command Claude Code takes), names the deployment's MCP endpoint and the credential's header, and never
holds a secret."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import pytest

from shared.client_config import AUTHS, HOSTS, client_config, mcp_url
from tests.support.sites import ROOT

URL = "https://app-docs.azurewebsites.net"
ENDPOINT = URL + "/api/mcp"
HEADER = {"key": "x-functions-key", "token": "Authorization", "entra": None}


@pytest.mark.parametrize("auth", AUTHS)
@pytest.mark.parametrize("host", HOSTS)
def test_each_host_gets_the_endpoint_and_the_credentials_header(host: str, auth: str) -> None:
    written = client_config(host, URL, auth)
    if host == "claude-code":
        words = shlex.split(written)
        assert words[:6] == ["claude", "mcp", "add", "--transport", "http", "docs"] and words[6] == ENDPOINT
        headers = dict(word.split(": ", 1) for word in words[8::2]) if "--header" in words else {}
    else:
        document = json.loads(written)
        servers = document["servers"] if host == "vscode" else document["mcpServers"]
        server = servers["docs"]
        assert server["url"] == ENDPOINT
        assert host not in ("vscode", "copilot") or server["type"] == "http"
        headers = server.get("headers", {})
        if host == "vscode" and auth != "entra":
            (prompt,) = document["inputs"]
            assert prompt["password"] is True and f"${{input:{prompt['id']}}}" in next(iter(headers.values()))
    expected = HEADER[auth]
    assert list(headers) == ([expected] if expected else [])
    for value in headers.values():  # a reference to the host's secret, never a secret
        assert any(name in value for name in ("DOCS_MCP_", "COPILOT_MCP_DOCS_", "${input:docs-mcp-")), value


def test_the_endpoint_is_taken_from_a_base_url_or_the_endpoint_itself_and_nothing_else() -> None:
    assert mcp_url(URL) == mcp_url(URL + "/") == mcp_url(ENDPOINT) == ENDPOINT
    for bad in ("app-docs.azurewebsites.net", "ftp://x/api/mcp", "https://x/api/mcp?code=secret"):
        with pytest.raises(ValueError):
            mcp_url(bad)


def test_the_command_line_prints_it_without_any_settings() -> None:
    printed = subprocess.run(
        [sys.executable, "-m", "shared", "client-config", "--host", "cursor", "--url", URL, "--auth", "token"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout)["mcpServers"]["docs"]["headers"] == {
        "Authorization": "Bearer ${env:DOCS_MCP_TOKEN}"
    }


def test_the_setup_page_shows_what_the_command_prints() -> None:
    page = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    for host in HOSTS:
        for auth in AUTHS:
            assert client_config(host, "https://<your-app>.azurewebsites.net", auth) in page, (host, auth)
