"""The local run command: a documentation origin, Azurite, and the service on http://127.0.0.1:7071.

    python tools/run_local.py                                   # this project's docs as the origin
    python tools/run_local.py --origin-dir ../shared/corpus/origin
    python tools/run_local.py --fixtures                        # the test fixture sites the docs' examples read
    Forge__Documentation__Origin=https://docs.example.com python tools/run_local.py

By default it builds this project's docs (tools/build_origin.py) into build/origin/docs/ and serves build/origin/
on a free loopback port as the origin with one site, `docs`. `--origin-dir` serves another directory of built
sites instead, leaving the site list to the environment. An Origin already set in the environment is used as
it is and nothing is served. Azurite provides the blob cache unless storage is already configured or
`--no-azurite` is given. Every variable in the environment reaches the service; the script only adds the ones
it provides. Ctrl-C or SIGTERM stops everything it started.

A port another program holds (another run, or `func start`, which also takes 7071) is refused before anything is
built or started, and the service's URL is printed only once the process this script started answers for itself.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script, sys.path starts at tools/
    sys.path.insert(0, str(ROOT))

from tools.azurite import Azurite, AzuriteError  # noqa: E402
from tools.build_origin import build_site  # noqa: E402
from tools.static_origin import StaticOrigin  # noqa: E402  the same static host the tests use

PREFIX = "Forge__Documentation__"
STORAGE_KEYS = (
    "AzureWebJobsStorage",
    "AzureWebJobsStorage__blobServiceUri",
    f"{PREFIX}Cache__ConnectionString",
    f"{PREFIX}Cache__BlobServiceUri",
)


def _is_set(env: Mapping[str, str], key: str) -> bool:
    """Whether the service would see `key`: its settings reader matches names case-insensitively."""
    lowered = key.lower()
    return any(name.lower() == lowered and value.strip() for name, value in env.items())


def _set_default(env: dict[str, str], key: str, value: str) -> None:
    if not _is_set(env, key):
        env[key] = value


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--origin-dir", type=Path, help="serve this directory of built sites ({dir}/{site}/)")
    parser.add_argument(
        "--fixtures", action="store_true", help="serve the test fixture sites (what the docs' examples read)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="address the service listens on")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "7071")), help="default: $PORT or 7071")
    parser.add_argument("--no-azurite", action="store_true", help="keep the index cache in the process only")
    parser.add_argument("--startup-timeout", type=float, default=60.0, help="seconds to wait for the service")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    env = dict(os.environ)
    signal.signal(signal.SIGTERM, _interrupt)
    with ExitStack() as stack:
        try:
            _check_port_free(args.host, args.port)
            embedded = _provide_origin(args, env, stack)
            _provide_storage(args, env, stack)
            service = _start_service(args, env, stack)
            base = f"http://{args.host}:{args.port}"
            if not _wait_until_serving(service, f"{base}/api/health", args.startup_timeout, origin=_origin(env)):
                exited = service.poll()
                return exited if exited is not None and exited > 0 else 1
            _print_examples(base, embedded=embedded)
            return service.wait()
        except KeyboardInterrupt:
            print("\nstopping", file=sys.stderr)
            return 130
        except (AzuriteError, RuntimeError) as exc:
            print(f"run_local: {exc}", file=sys.stderr)
            return 1


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _check_port_free(host: str, port: int) -> None:
    """Raises when `host:port` cannot be bound, as the service would bind it (uvicorn: SO_REUSEADDR, so a port left
    in TIME_WAIT by an earlier run is free; one that anything listens on is not)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        if os.name != "nt":  # on Windows the option would let a bind steal a port in use
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                problem = f"port {port} on {host} is already in use (another `make run`, or `func start` on 7071?)"
            else:
                problem = f"cannot listen on {host} port {port} ({exc.strerror or exc})"
            raise RuntimeError(
                f"{problem}; nothing was started. Choose another port: --port N (make run ARGS='--port N') or PORT=N"
            ) from None


def _origin(env: Mapping[str, str]) -> str:
    """The origin the service is given, as its settings normalise it (what its health reports)."""
    key = f"{PREFIX}Origin".lower()
    return next(value for name, value in env.items() if name.lower() == key and value.strip()).strip().rstrip("/")


def _provide_origin(args: argparse.Namespace, env: dict[str, str], stack: ExitStack) -> bool:
    """Serve an origin unless the environment names one; True when it is this project's docs."""
    if _is_set(env, f"{PREFIX}Origin"):
        print("origin:  from Forge__Documentation__Origin (nothing served locally)")
        return False
    if args.fixtures:
        from tests.support.sites import DEFAULT_SITE, ROOTED_OVERRIDE, SITES, build_fixture_origin

        root = build_fixture_origin()
        _set_default(env, f"{PREFIX}Sites", ",".join(SITES))
        _set_default(env, f"{PREFIX}DefaultSite", DEFAULT_SITE)
        _set_default(env, f"{PREFIX}SearchIndexOverrides", ROOTED_OVERRIDE)
    elif args.origin_dir is not None:
        root = args.origin_dir.resolve()
        if not root.is_dir():
            raise RuntimeError(f"--origin-dir {root} is not a directory")
    else:
        root = ROOT / "build" / "origin"
        built = build_site(ROOT / "mkdocs.yml", root / "docs")
        print(f"docs:    {'built' if built else 'up to date'} in {root / 'docs'}")
        _set_default(env, f"{PREFIX}Sites", "docs")
        _set_default(env, f"{PREFIX}DefaultSite", "docs")
    origin = stack.enter_context(StaticOrigin(root))
    env[f"{PREFIX}Origin"] = origin.url
    print(f"origin:  {origin.url} serving {root}")
    return args.origin_dir is None


def _provide_storage(args: argparse.Namespace, env: dict[str, str], stack: ExitStack) -> None:
    if args.no_azurite:
        print("cache:   in process only (--no-azurite)")
        return
    if any(_is_set(env, key) for key in STORAGE_KEYS):
        print("cache:   storage from the environment")
        return
    azurite = stack.enter_context(Azurite())
    env["AzureWebJobsStorage"] = azurite.connection_string
    print(f"cache:   Azurite blob service at {azurite.blob_endpoint}")


def _start_service(args: argparse.Namespace, env: dict[str, str], stack: ExitStack) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "shared", "serve", "--host", args.host, "--port", str(args.port)]
    service = subprocess.Popen(command, cwd=ROOT, env=env)
    stack.callback(_stop, service)
    return service


def _stop(process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    if process.poll() is None:
        process.terminate()  # uvicorn shuts down gracefully on SIGTERM
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_serving(service: subprocess.Popen[bytes], health_url: str, timeout: float, *, origin: str) -> bool:
    """True once the service this script started answers health; False when it exits, when another server answers
    instead (its health names another origin: the one given here is this run's own, on a free port unless the
    environment named it), or at the deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if service.poll() is not None:
            print(f"run_local: the service exited with code {service.returncode}", file=sys.stderr)
            return False
        try:
            with urllib.request.urlopen(health_url, timeout=2) as response:
                answered = _health_origin(response.read()) if response.status == 200 else None
        except (urllib.error.URLError, OSError):
            time.sleep(0.1)
            continue
        if service.poll() is not None:
            continue  # said above: it exited, so whatever answered is not it
        if answered == origin:
            return True
        said = "is not this service's health" if answered is None else f"names origin {answered}, not {origin}"
        print(
            f"run_local: another server answers {health_url} (its answer {said}); choose another port: --port N or "
            "PORT=N",
            file=sys.stderr,
        )
        return False
    print(f"run_local: the service did not answer {health_url} within {timeout:g}s", file=sys.stderr)
    return False


def _health_origin(body: bytes) -> str | None:
    """The MkDocs provider's origin in a health answer, or None when the answer is not this service's health."""
    try:
        origin = json.loads(body)["providers"]["mkdocs"]["origin"]
    except (ValueError, KeyError, TypeError):
        return None
    return origin if isinstance(origin, str) else None


def _print_examples(base: str, *, embedded: bool) -> None:
    location = "how-it-works/location-resolution" if embedded else "<a location from the search results>"
    query = "location+resolution" if embedded else "configuration"
    print(
        f"\nservice: {base}  (Ctrl-C stops everything)\n\n"
        f"  curl '{base}/api/docs/search?q={query}&limit=5'\n"
        f"  curl '{base}/api/docs/get?location={location}'\n"
        f"  curl '{base}/api/health'\n"
        f"  open {base}/api/ui\n",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
