"""A local stand-in for Azure AI Search that speaks its REST protocol, for the real SDK client to talk to.

    with AiSearchServer(api_key="k") as server:
        server.respond(hits=[{"metadata_storage_path": "...", "@search.score": 1.2}])
        ...  # SearchClient(server.url, "saif-docs", AzureKeyCredential("k"))
        server.requests[0].body["queryType"] == "semantic"

It answers `POST /indexes('NAME')/docs/search.post.search?api-version=...` (what `SearchClient.search` sends) with
`{"value": hits[:top]}` when the `api-key` header matches, `403` otherwise, and records every request: path,
query parameters, headers and JSON body. `respond` scripts the next answers: another status, a raw body, or a
delay (the handler waits on an event that `stop` sets, so nothing outlives the server). It binds port 0 and
listens before `start` returns: there is nothing to wait for.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

SEARCH_PATH = re.compile(r"^/indexes\('(?P<index>[^']+)'\)/docs/search\.post\.search$")


@dataclass
class Recorded:
    """One request as the server received it."""

    method: str
    path: str
    params: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class Script:
    """How the server answers searches until told otherwise."""

    hits: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    raw: bytes | None = None
    delay: float = 0.0


class AiSearchServer:
    """The search endpoint of one service with one index, on 127.0.0.1 and a port the OS picks."""

    def __init__(self, *, index: str = "saif-docs", api_key: str = "local-test-key") -> None:
        self.index = index
        self.api_key = api_key
        self.requests: list[Recorded] = []
        self.script = Script()
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("AiSearchServer is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def respond(
        self,
        hits: list[dict[str, Any]] | None = None,
        *,
        status: int = 200,
        raw: bytes | None = None,
        delay: float = 0.0,
    ) -> None:
        """Answer later searches with `hits` (as `value`), or `raw` bytes, with `status`, after `delay` seconds."""
        with self._lock:
            self.script = Script(hits=list(hits or []), status=status, raw=raw, delay=delay)

    def app_settings(self, **extra: str) -> dict[str, str]:
        """`AiSearch__*` settings (without the `Forge__Documentation__` prefix) that point the provider here."""
        values = {"Endpoint": self.url, "ApiKey": self.api_key, **extra}
        return {f"AiSearch__{key}": value for key, value in values.items()}

    def searches(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if SEARCH_PATH.match(r.path)]

    def start(self) -> AiSearchServer:
        self._released.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="ai-search-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        self._released.set()
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=10)

    def __enter__(self) -> AiSearchServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    def _answer(self, recorded: Recorded) -> tuple[int, bytes]:
        with self._lock:
            self.requests.append(recorded)
            script = self.script
        match = SEARCH_PATH.match(recorded.path)
        if recorded.method != "POST" or match is None or "api-version" not in recorded.params:
            return 404, _error("NotFound", "no such resource")
        if match["index"] != self.index:
            return 404, _error("NotFound", f"The index '{match['index']}' was not found.")
        if recorded.headers.get("api-key") != self.api_key:
            return 403, _error("Forbidden", "Authorization failed.")
        if script.delay:
            self._released.wait(script.delay)
        if script.raw is not None:
            return script.status, script.raw
        if script.status != 200:
            return script.status, _error("InternalServerError", "scripted failure")
        top = recorded.body.get("top") if isinstance(recorded.body, dict) else None
        hits = script.hits[:top] if isinstance(top, int) else script.hits
        context = f"{self.url}/indexes('{self.index}')/$metadata#docs(*)"
        return 200, json.dumps({"@odata.context": context, "value": hits}).encode()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self._handle("POST")

            def do_GET(self) -> None:
                self._handle("GET")

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                parts = urlsplit(self.path)
                recorded = Recorded(
                    method=method,
                    path=parts.path,
                    params=parse_qs(parts.query),
                    headers={name.lower(): value for name, value in self.headers.items()},
                    body=body,
                )
                status, payload = owner._answer(recorded)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json; odata.metadata=minimal")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def _error(code: str, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message}}).encode()
