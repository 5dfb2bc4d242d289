"""A server that accepts connections and never answers: what a hung endpoint looks like to a client.

    with SilentServer() as silent:
        httpx.get(silent.url, timeout=1)   # connects, then times out

The operating system picks the port. Connections are accepted and held open, unread and unanswered, until the
server stops; `accepted` counts them.
"""

from __future__ import annotations

import socket
import threading
from types import TracebackType


class SilentServer:
    """A listening socket whose connections are held and never answered."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._listener = socket.create_server((host, 0))
        self._listener.settimeout(0.1)
        self._held: list[socket.socket] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="silent-server", daemon=True)
        self.host = host

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self._listener.getsockname()[1]}"

    @property
    def accepted(self) -> int:
        return len(self._held)

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._held.append(connection)

    def __enter__(self) -> SilentServer:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stopping.set()
        self._thread.join(5)
        self._listener.close()
        for connection in self._held:
            connection.close()
