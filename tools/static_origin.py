"""A real static HTTP server over a directory: the local documentation origin for `make run` and the tests.

It behaves like the static hosts that serve MkDocs output: directory URLs map to `index.html` (and a directory
without its trailing slash redirects), `.md` is `text/markdown`, and every file carries an `ETag` and
`Last-Modified` and honours `If-None-Match` / `If-Modified-Since` with `304`. On top of that it records every
request and lets a test replace the answer for one path:

    with StaticOrigin(built_origin) as origin:
        origin.fail("/alpha/faq.md", 500)                    # or 404, once with times=1
        origin.respond("/alpha/faq.md", body=b"<html>...", content_type="text/html")
        origin.redirect("/alpha/faq.md", outside.url_for("/faq.md"))
        ...
        assert origin.requests_for("/alpha/search/search_index.json")[0].header("If-None-Match") is None
        origin.stop(); ...; origin.restart()                  # origin down, then back on the same port

A second instance with no directory (`StaticOrigin()`) answers 404 to everything and proves, through its empty
request log, that nothing was fetched from outside the origin.
"""

from __future__ import annotations

import contextlib
import hashlib
import mimetypes
import posixpath
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import formatdate, parsedate_to_datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from urllib.parse import unquote, urlsplit

CONTENT_TYPES = {
    ".md": "text/markdown; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".json": "application/json",
    ".xml": "application/xml",
    ".txt": "text/plain; charset=utf-8",
}


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the origin saw it, and the status it answered with."""

    method: str
    target: str
    path: str
    headers: Mapping[str, str]
    status: int

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass
class _Override:
    status: int
    body: bytes
    headers: dict[str, str]
    delay: float
    remaining: int | None
    conditional: bool = False


class StaticOrigin:
    """A threaded static file server on 127.0.0.1 with a request log and per-path failure injection."""

    def __init__(self, root: Path | str | None = None, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.root = Path(root).resolve() if root is not None else None
        self._host = host
        self._port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._log: list[RecordedRequest] = []
        self._overrides: dict[str, _Override] = {}
        self._stopping = threading.Event()

    # -- lifecycle

    def start(self) -> StaticOrigin:
        if self._server is not None:
            raise RuntimeError("StaticOrigin is already running")
        self._stopping.clear()
        server = _Server((self._host, self._port), _Handler)
        server.origin = self
        self._port = server.server_address[1]  # kept, so restart() binds the same port
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.05,), name=f"static-origin-{self._port}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and drop open connections, so clients see the origin go down; safe to call twice."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.close_connections()
        server.server_close()
        if thread is not None:
            thread.join()

    def restart(self) -> StaticOrigin:
        """Stop if running, then serve again on the same port."""
        self.stop()
        return self.start()

    def __enter__(self) -> StaticOrigin:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def port(self) -> int:
        if not self._port:
            raise RuntimeError("StaticOrigin has not been started")
        return self._port

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT`, without a trailing slash: the form the Origin setting takes."""
        return f"http://{self._host}:{self.port}"

    def url_for(self, path: str) -> str:
        return self.url + "/" + path.lstrip("/")

    # -- request log

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._log)

    def paths(self) -> list[str]:
        return [request.path for request in self.requests]

    def requests_for(self, path: str) -> list[RecordedRequest]:
        return [request for request in self.requests if request.path == path]

    def clear_requests(self) -> None:
        with self._lock:
            self._log.clear()

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._log.append(request)

    # -- failure injection

    def respond(
        self,
        path: str,
        *,
        status: int = 200,
        body: bytes | str = b"",
        content_type: str | None = None,
        headers: Mapping[str, str] | None = None,
        delay: float = 0.0,
        times: int | None = None,
    ) -> None:
        """Answer `path` with this response instead of the file, `times` times (None: until `reset`).

        A 200 answer gets an ETag derived from its body and honours conditional requests like a file does.
        `delay` holds the response back (for client timeouts); stopping the origin cuts it short.
        """
        payload = body.encode() if isinstance(body, str) else body
        merged = dict(headers or {})
        if content_type is not None:
            merged["Content-Type"] = content_type
        override = _Override(status, payload, merged, delay, times, conditional=status == 200)
        with self._lock:
            self._overrides[_normalize(path)] = override

    def fail(self, path: str, status: int = 500, *, times: int | None = None) -> None:
        self.respond(path, status=status, body=f"{status} {HTTPStatus(status).phrase}\n", times=times)

    def redirect(self, path: str, location: str, status: int = 302, *, times: int | None = None) -> None:
        self.respond(path, status=status, headers={"Location": location}, times=times)

    def reset(self) -> None:
        """Forget every override; files are served again."""
        with self._lock:
            self._overrides.clear()

    def _take_override(self, path: str) -> _Override | None:
        with self._lock:
            override = self._overrides.get(path)
            if override is None:
                return None
            if override.remaining is not None:
                override.remaining -= 1
                if override.remaining <= 0:
                    del self._overrides[path]
            return override


def _normalize(path: str) -> str:
    return "/" + unquote(urlsplit(path).path).lstrip("/")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    origin: StaticOrigin

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, handler)

    def track(self, connection: socket.socket, *, add: bool) -> None:
        with self._connections_lock:
            (self._connections.add if add else self._connections.discard)(connection)

    def close_connections(self) -> None:
        # Keep-alive connections would otherwise stay served by their handler threads after stop().
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client hanging up mid-response is normal in failure tests; the request log says what happened


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 30

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, add=True)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.track(self.connection, add=False)

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._serve(send_body=True)

    def do_HEAD(self) -> None:
        self._serve(send_body=False)

    def _serve(self, *, send_body: bool) -> None:
        origin = self.server.origin
        path = _normalize(self.path)
        override = origin._take_override(path)
        if override is not None:
            status, body, headers = self._from_override(override)
        else:
            status, body, headers = self._from_files(origin.root, path)
        recorded = {name.lower(): value for name, value in self.headers.items()}
        origin._record(RecordedRequest(self.command, self.path, path, recorded, status))
        if override is not None and override.delay and origin._stopping.wait(override.delay):
            self.close_connection = True
            return
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if status != 304:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body and body:
            self.wfile.write(body)

    def _from_override(self, override: _Override) -> tuple[int, bytes, dict[str, str]]:
        headers = {"Content-Type": "application/octet-stream", **override.headers}
        if not override.conditional:
            return override.status, override.body, headers
        etag = '"' + hashlib.sha256(override.body).hexdigest()[:32] + '"'
        headers.setdefault("ETag", etag)
        if _etag_matches(self.headers.get("If-None-Match"), headers["ETag"]):
            return 304, b"", {"ETag": headers["ETag"]}
        return override.status, override.body, headers

    def _from_files(self, root: Path | None, path: str) -> tuple[int, bytes, dict[str, str]]:
        target = _locate(root, path)
        if target is None:
            return 404, b"<h1>404 Not Found</h1>\n", {"Content-Type": "text/html; charset=utf-8"}
        if target.is_dir():
            if not path.endswith("/"):
                return 301, b"", {"Location": path + "/"}
            target = target / "index.html"
            if not target.is_file():
                return 404, b"<h1>404 Not Found</h1>\n", {"Content-Type": "text/html; charset=utf-8"}
        stat = target.stat()
        validators = {
            "ETag": f'"{stat.st_mtime_ns:x}-{stat.st_size:x}"',
            "Last-Modified": formatdate(stat.st_mtime, usegmt=True),
        }
        if self._not_modified(validators, stat.st_mtime):
            return 304, b"", validators
        content_type = CONTENT_TYPES.get(target.suffix.lower()) or (
            mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        )
        return 200, target.read_bytes(), {"Content-Type": content_type, **validators}

    def _not_modified(self, validators: Mapping[str, str], mtime: float) -> bool:
        if_none_match = self.headers.get("If-None-Match")
        if if_none_match is not None:  # RFC 9110: If-None-Match wins over If-Modified-Since
            return _etag_matches(if_none_match, validators["ETag"])
        if_modified_since = self.headers.get("If-Modified-Since")
        if if_modified_since is None:
            return False
        try:
            since = parsedate_to_datetime(if_modified_since).timestamp()
        except (TypeError, ValueError):
            return False
        return int(mtime) <= since


def _etag_matches(header: str | None, etag: str) -> bool:
    if header is None:
        return False
    candidates = {part.strip().removeprefix("W/") for part in header.split(",")}
    return "*" in candidates or etag.removeprefix("W/") in candidates


def _locate(root: Path | None, path: str) -> Path | None:
    """The file or directory under `root` for a URL path, never escaping it."""
    if root is None:
        return None
    relative = posixpath.normpath(path).lstrip("/")
    if relative in ("", "."):
        return root
    target = (root / relative).resolve()
    if not target.is_relative_to(root) or not target.exists():
        return None
    return target
