"""Run an ASGI app under a real uvicorn server in a background thread, on a port the OS picks.

    with UvicornServer(create_app(settings)) as server:
        httpx.get(server.url + "/api/health")

The socket is bound here (port 0) and handed to uvicorn, so the port is known before the server starts and
nothing is guessed. Start-up waits for `server.started` against a deadline; stop asks uvicorn to exit and joins.
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType
from typing import Any

import uvicorn


class UvicornServer:
    """One uvicorn server in a daemon thread; a context manager that always stops what it started."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", log_level: str = "warning", **config: Any) -> None:
        config.setdefault("lifespan", "on")  # "auto" would log a failed start-up and serve anyway
        config.setdefault("proxy_headers", False)  # as `python -m shared serve` runs it: the peer is the connection's
        self._config = uvicorn.Config(app, host=host, port=0, log_level=log_level, **config)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._error: BaseException | None = None

    @property
    def port(self) -> int:
        if self._socket is None:
            raise RuntimeError("UvicornServer is not running")
        return int(self._socket.getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://{self._config.host}:{self.port}"

    @property
    def server(self) -> uvicorn.Server:
        if self._server is None:
            raise RuntimeError("UvicornServer is not running")
        return self._server

    def start(self, timeout: float = 15.0) -> UvicornServer:
        if self._server is not None:
            raise RuntimeError("UvicornServer is already running")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self._config.host, 0))
        self._socket = sock  # only once bound: another thread may be reading `url` (port 0 before the bind)
        self._server = uvicorn.Server(self._config)
        self._error = None
        self._thread = threading.Thread(target=self._run, name=f"uvicorn-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive():
                self.stop()
                raise RuntimeError("uvicorn exited during start-up (see its log above)") from self._error
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"uvicorn did not start within {timeout:g}s")
            time.sleep(0.01)
        return self

    def _run(self) -> None:
        assert self._server is not None and self._socket is not None
        try:
            self._server.run(sockets=[self._socket])
        except BaseException as exc:  # surfaced by start(); a thread has nowhere else to report it
            self._error = exc

    def stop(self, timeout: float = 15.0) -> None:
        """Ask uvicorn to finish (lifespan shutdown included) and join its thread; safe to call twice."""
        server, thread, sock = self._server, self._thread, self._socket
        self._server = self._thread = None
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                server.force_exit = True  # type: ignore[union-attr]
                thread.join(timeout)
        if sock is not None:
            sock.close()
            self._socket = None

    def __enter__(self) -> UvicornServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
