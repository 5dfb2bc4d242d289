"""Run one Azurite service (Blob by default, or Queue) on a free loopback port, in memory, for tests and the local run.

    with Azurite() as azurite:
        BlobServiceClient.from_connection_string(azurite.connection_string)
    with Azurite(service="queue") as queues:
        QueueServiceClient.from_connection_string(queues.connection_string)

Azurite is the npm package pinned in package.json; `npm ci` installs it into node_modules/. The port is chosen
by the operating system (`--blobPort 0`) and read back from Azurite's start-up line, so parallel runs never
collide; readiness is then confirmed with an HTTP request, polled against a deadline.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parents[1]
ACCOUNT_NAME = "devstoreaccount1"
# Azurite's well-known development key (from its source): public, and accepted by no real account.
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
SETUP_HINT = f"run `npm ci` in {ROOT} to install the pinned Azurite into node_modules/"

SERVICES = ("blob", "queue")


def _listening(service: str) -> re.Pattern[str]:
    return re.compile(service.capitalize() + r" service (?:is )?successfully listen(?:s|ing) on (https?://[^\s]+)")


class AzuriteError(RuntimeError):
    """Azurite is not installed, did not start in time, or exited early."""


def find_azurite(root: Path = ROOT, service: str = "blob") -> Path:
    """The one-service Azurite launcher from node_modules (or PATH), else AzuriteError with the set-up command."""
    for name in (f"azurite-{service}", "azurite"):
        candidate = root / "node_modules" / ".bin" / name
        if candidate.exists():
            return candidate
    on_path = shutil.which(f"azurite-{service}")
    if on_path:
        return Path(on_path)
    raise AzuriteError(f"Azurite is not installed: {SETUP_HINT}")


def connection_string(endpoint: str, service: str = "blob") -> str:
    return (
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT_NAME};AccountKey={ACCOUNT_KEY};"
        f"{service.capitalize()}Endpoint={endpoint};"
    )


class Azurite:
    """One Azurite service process; a context manager that always stops what it started."""

    def __init__(
        self,
        *,
        binary: Path | None = None,
        startup_timeout: float = 30.0,
        memory_limit_mb: int = 256,
        service: str = "blob",
    ):
        if service not in SERVICES:
            raise ValueError(f"service must be one of {SERVICES}")
        self.service = service
        self._pattern = _listening(service)
        self._binary = binary
        self._startup_timeout = startup_timeout
        self._memory_limit_mb = memory_limit_mb
        self._process: subprocess.Popen[str] | None = None
        self._workdir: tempfile.TemporaryDirectory[str] | None = None
        self._output: deque[str] = deque(maxlen=200)
        self._listening = threading.Event()
        self._drainer: threading.Thread | None = None
        self._url: str | None = None

    @property
    def endpoint(self) -> str:
        """`http://127.0.0.1:PORT/devstoreaccount1`."""
        if self._url is None:
            raise AzuriteError("Azurite is not running")
        return f"{self._url}/{ACCOUNT_NAME}"

    @property
    def blob_endpoint(self) -> str:
        return self.endpoint

    @property
    def port(self) -> int:
        return int(self.endpoint.rsplit(":", 1)[1].split("/", 1)[0])

    @property
    def connection_string(self) -> str:
        return connection_string(self.endpoint, self.service)

    def start(self) -> Azurite:
        if self._process is not None:
            raise AzuriteError("Azurite is already running")
        binary = self._binary or find_azurite(service=self.service)
        # In-memory persistence refuses --location; the working directory keeps any debug files out of the repo.
        self._workdir = tempfile.TemporaryDirectory(prefix="azurite-")
        command = [str(binary), f"--{self.service}Host", "127.0.0.1", f"--{self.service}Port", "0"]
        command += ["--inMemoryPersistence", "--extentMemoryLimit", str(self._memory_limit_mb)]
        command += ["--silent", "--skipApiVersionCheck", "--loose", "--disableTelemetry"]
        if binary.name == "azurite":  # the all-services launcher: the other services on free ports too
            for other in ("blob", "queue", "table"):
                if other != self.service:
                    command += [f"--{other}Port", "0"]
        self._process = subprocess.Popen(
            command,
            cwd=self._workdir.name,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own process group, so stop() reaches node and anything it spawns
        )
        self._drainer = threading.Thread(target=self._drain, args=(self._process,), name="azurite-output", daemon=True)
        self._drainer.start()
        try:
            self._wait_until_ready(time.monotonic() + self._startup_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _drain(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self._output.append(line.rstrip())
            match = self._pattern.search(line)
            if match and not self._listening.is_set():
                self._url = match.group(1).rstrip("/")
                self._listening.set()
        self._listening.set()  # EOF: the process exited; the waiter checks why

    def _wait_until_ready(self, deadline: float) -> None:
        assert self._process is not None
        if not self._listening.wait(max(0.0, deadline - time.monotonic())) or self._url is None:
            raise AzuriteError(self._failure("did not report its port"))
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise AzuriteError(self._failure(f"exited with code {self._process.returncode}"))
            try:
                urllib.request.urlopen(f"{self.endpoint}?comp=list", timeout=1)
                return
            except urllib.error.HTTPError:
                return  # any HTTP answer (403 without credentials) means the service is serving
            except OSError:
                time.sleep(0.05)
        raise AzuriteError(self._failure("did not answer HTTP in time"))

    def _failure(self, what: str) -> str:
        output = "\n".join(self._output) or "(no output)"
        return f"Azurite {what} within {self._startup_timeout:g}s. Its output:\n{output}"

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Azurite stalled inside the block (SIGSTOP): connections are still accepted by the system, never answered;
        it answers again (SIGCONT) when the block ends, however it ends."""
        process = self._process
        if process is None:
            raise AzuriteError("Azurite is not running")
        _signal_group(process, signal.SIGSTOP)
        try:
            yield
        finally:
            _signal_group(process, signal.SIGCONT)

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate the process group, escalating to SIGKILL after `timeout`; safe to call twice."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            _signal_group(process, signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait(timeout)
        if self._drainer is not None:
            self._drainer.join(timeout)  # the pipe reaches EOF once the process group is gone
            self._drainer = None
        if process is not None and process.stdout is not None:
            process.stdout.close()
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None
        self._url = None
        self._listening.clear()

    def __enter__(self) -> Azurite:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _signal_group(process: subprocess.Popen[str], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)
