"""`python -m shared` run by an interpreter without the dependencies (a system `python3` outside `.venv`) says in one
line how to get them, instead of a traceback; with them, it is the command line as before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _shared(*flags: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    command = [sys.executable, *flags, "-m", "shared", "--help"]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_without_its_dependencies_it_says_how_to_install_them_in_one_line() -> None:
    ran = _shared("-S", "-E")  # no site-packages: this interpreter's standard library and the checkout only

    assert ran.returncode == 2 and ran.stdout == ""
    lines = ran.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in ran.stderr
    assert "dependencies are not installed" in lines[0] and "no module named '" in lines[0]
    assert "make setup" in lines[0] and ".venv/bin/python -m shared" in lines[0]


def test_with_its_dependencies_it_is_the_command_line() -> None:
    ran = _shared()

    assert ran.returncode == 0 and ran.stdout.startswith("usage: python -m shared")
