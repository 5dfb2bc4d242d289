"""The configuration an agent host needs to reach a deployment's MCP endpoint, for the common hosts (pure):
VS Code, Claude Code, Cursor and GitHub Copilot's coding agent, each with the Functions key, an inbound token or
Entra ID sign-in. `python -m shared client-config --host <host> --url <url> [--auth key|token|entra]` prints it;
docs/agents.md shows each one.

No secret is ever written into a configuration: the key or token is read from the host's own prompt or
environment variable (`DOCS_MCP_KEY`, `DOCS_MCP_TOKEN`; Copilot's `COPILOT_MCP_` secrets). With Entra ID the hosts
sign in themselves through the protected resource metadata the endpoint's `401` points at.
"""

from __future__ import annotations

import json
import shlex
from urllib.parse import urlsplit

HOSTS = ("vscode", "claude-code", "cursor", "copilot")
AUTHS = ("key", "token", "entra")
NAME = "docs"
KEY_HEADER = "x-functions-key"


def mcp_url(url: str) -> str:
    """The MCP endpoint of a deployment given by its base URL or the endpoint itself; ValueError for anything but
    an absolute http(s) URL."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ValueError("--url must be the deployment's https:// address (or its /api/mcp endpoint)")
    path = parts.path.rstrip("/")
    return f"{parts.scheme}://{parts.netloc}{path if path.endswith('/api/mcp') else path + '/api/mcp'}"


def client_config(host: str, url: str, auth: str = "key") -> str:
    """The configuration (JSON) or command (Claude Code) for `host` to reach `url` with `auth`."""
    if host not in HOSTS:
        raise ValueError(f"--host must be one of: {', '.join(HOSTS)}")
    if auth not in AUTHS:
        raise ValueError(f"--auth must be one of: {', '.join(AUTHS)}")
    endpoint = mcp_url(url)
    if host == "claude-code":
        command = ["claude", "mcp", "add", "--transport", "http", NAME, endpoint]
        if auth == "key":
            command += ["--header", f"{KEY_HEADER}: ${{DOCS_MCP_KEY}}"]
        elif auth == "token":
            command += ["--header", "Authorization: Bearer ${DOCS_MCP_TOKEN}"]
        return " ".join(shlex.quote(part) if "$" not in part else f'"{part}"' for part in command)
    if host == "vscode":
        server: dict[str, object] = {"type": "http", "url": endpoint}
        inputs = []
        if auth != "entra":
            secret = "docs-mcp-key" if auth == "key" else "docs-mcp-token"
            value = f"${{input:{secret}}}" if auth == "key" else f"Bearer ${{input:{secret}}}"
            server["headers"] = {KEY_HEADER if auth == "key" else "Authorization": value}
            what = "The documentation app's Functions key" if auth == "key" else "Your documentation read token"
            inputs.append({"type": "promptString", "id": secret, "description": what, "password": True})
        document: dict[str, object] = {"servers": {NAME: server}}
        if inputs:
            document["inputs"] = inputs
        return json.dumps(document, indent=2)
    headers = _headers(auth, "${env:" if host == "cursor" else "$", "}" if host == "cursor" else "")
    if host == "cursor":
        entry: dict[str, object] = {"url": endpoint, **({"headers": headers} if headers else {})}
        return json.dumps({"mcpServers": {NAME: entry}}, indent=2)
    copilot: dict[str, object] = {"type": "http", "url": endpoint, "tools": ["*"]}
    if headers:
        copilot["headers"] = {name: value.replace("$DOCS_MCP", "$COPILOT_MCP_DOCS") for name, value in headers.items()}
    return json.dumps({"mcpServers": {NAME: copilot}}, indent=2)


def _headers(auth: str, opening: str, closing: str) -> dict[str, str]:
    if auth == "key":
        return {KEY_HEADER: f"{opening}DOCS_MCP_KEY{closing}"}
    if auth == "token":
        return {"Authorization": f"Bearer {opening}DOCS_MCP_TOKEN{closing}"}
    return {}
