"""tools/run_local.py never points a person at someone else's server: a port already taken is refused before anything
is built or started, and the readiness poll accepts only the process it started."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools.run_local import _wait_until_serving
from tools.static_origin import StaticOrigin

ROOT = Path(__file__).resolve().parents[2]
OURS = "http://127.0.0.1:1"


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A free loopback port, then held by a listening socket (as another `make run` or `func start` would)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def _run_local(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(ROOT / "tools" / "run_local.py"), *args]
    # The timeout only keeps a regression from hanging the suite: a refusal comes before anything starts.
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_a_taken_port_is_refused_before_anything_is_built_or_said_about_the_service(taken_port: int) -> None:
    ran = _run_local("--port", str(taken_port))

    assert ran.returncode != 0
    assert f"port {taken_port} on 127.0.0.1 is already in use" in ran.stderr
    assert "--port N" in ran.stderr and "PORT=N" in ran.stderr
    assert "service:" not in ran.stdout and f":{taken_port}" not in ran.stdout
    assert ran.stdout == ""  # no docs built, no origin served, no Azurite started


def test_a_port_taken_through_the_environment_is_refused_the_same_way(taken_port: int) -> None:
    ran = _run_local(env={**os.environ, "PORT": str(taken_port)})

    assert ran.returncode != 0 and f"port {taken_port} on 127.0.0.1 is already in use" in ran.stderr
    assert ran.stdout == ""


def _health(origin: str) -> str:
    return json.dumps({"status": "ok", "providers": {"mkdocs": {"origin": origin}}})


@pytest.fixture
def waiting_child() -> Iterator[subprocess.Popen[bytes]]:
    """A live process standing in for the service: it runs until its standard input closes."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        yield child
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()


def test_the_poll_refuses_another_server_s_health(
    waiting_child: subprocess.Popen[bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    with StaticOrigin() as other:
        other.respond("/api/health", body=_health("https://docs.example.com"), content_type="application/json")
        ready = _wait_until_serving(waiting_child, other.url_for("/api/health"), 60, origin=OURS)

    assert not ready
    assert "another server answers" in capsys.readouterr().err


def test_the_poll_refuses_an_answer_that_is_not_this_service_s_health(waiting_child: subprocess.Popen[bytes]) -> None:
    with StaticOrigin() as other:
        other.respond("/api/health", body='{"status": "Healthy"}', content_type="application/json")
        assert not _wait_until_serving(waiting_child, other.url_for("/api/health"), 60, origin=OURS)


def test_the_poll_accepts_its_own_service_and_never_one_that_exited(waiting_child: subprocess.Popen[bytes]) -> None:
    exited = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    exited.wait()
    with StaticOrigin() as served:
        served.respond("/api/health", body=_health(OURS), content_type="application/json")
        health = served.url_for("/api/health")
        assert _wait_until_serving(waiting_child, health, 60, origin=OURS)
        assert not _wait_until_serving(exited, health, 60, origin=OURS)
