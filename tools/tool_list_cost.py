"""What the tool list costs MCP clients: its size, and each official Python client's time per `search_docs` call
(the 1.x client validates every answer's structured content against the tool's output schema).

    python tools/tool_list_cost.py --client /tmp/mcp130/bin/python [--baseline HEAD~1] [--calls 40]

Serves the MkDocs test fixture origin, starts `python -m shared serve` from this tree (and, with `--baseline`,
from a git worktree of that revision, for a before/after in the same run), and runs each client interpreter given
(`--client`, repeatable; this venv's own client always) against each: `tools/list`'s size, then `--calls`
sequential calls and a 10-wide burst of calls, timed. Prints a table, and with a baseline each client's per-call
time there against this tree's as a ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.sites import build_fixture_origin, fixture_env  # noqa: E402
from tools.load import free_port  # noqa: E402
from tools.static_origin import StaticOrigin  # noqa: E402

CLIENT = r"""
import asyncio, json, statistics, sys, time
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

async def main(url, calls):
    async with streamable_http_client(url) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            listed = await session.list_tools()
            dumped = listed.model_dump(mode="json", by_alias=True, exclude_none=True)
            size = len(json.dumps(dumped, separators=(",", ":")))
            await session.call_tool("search_docs", {"query": "install"})
            sequential = []
            for index in range(calls):
                started = time.perf_counter()
                await session.call_tool("search_docs", {"query": ["install", "backup", "configure"][index % 3]})
                sequential.append(time.perf_counter() - started)
            async def one(query):
                started = time.perf_counter()
                await session.call_tool("search_docs", {"query": query})
                return time.perf_counter() - started
            burst = await asyncio.gather(*(one(q) for q in ["install", "backup", "configure", "api", "faq"] * 2))
    import mcp
    version = getattr(mcp, "__version__", None)
    if version is None:
        from importlib.metadata import version as of
        version = of("mcp")
    print(json.dumps({"mcp": version, "list_chars": size, "p50_ms": statistics.median(sequential) * 1000,
                      "burst_p50_ms": statistics.median(burst) * 1000}))

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


@contextmanager
def service(tree: Path, origin_url: str) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, **fixture_env(origin_url), "PYTHONPATH": str(tree)}
    command = [sys.executable, "-m", "shared", "serve", "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(command, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(url + "/api/docs/search", params={"q": "*"}, timeout=30).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit(f"the service in {tree} did not start")
            time.sleep(0.2)
        yield url + "/api/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def worktree(revision: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="baseline-") as parent:
        path = Path(parent) / "tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(path), revision], cwd=REPO, check=True, capture_output=True
        )
        try:
            yield path
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=REPO, check=False)


def measure(python: str, url: str, calls: int) -> dict[str, float | str]:
    ran = subprocess.run([python, "-c", CLIENT, url, str(calls)], capture_output=True, text=True, check=False)
    if ran.returncode != 0:
        raise SystemExit(f"{python}: {ran.stderr[-2000:]}")
    answer: dict[str, float | str] = json.loads(ran.stdout.strip().splitlines()[-1])
    return answer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--client", action="append", default=[], help="another Python with an `mcp` client")
    parser.add_argument("--baseline", help="a git revision to measure beside this tree")
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args(argv)
    clients = [sys.executable, *args.client]
    rows: list[tuple[str, dict[str, float | str]]] = []
    with StaticOrigin(build_fixture_origin()) as origin, ExitStack() as stack:
        trees = {"this tree": REPO}
        if args.baseline:
            sha = subprocess.run(
                ["git", "rev-parse", "--short", args.baseline], cwd=REPO, capture_output=True, text=True, check=True
            ).stdout.strip()
            trees[f"baseline {sha}"] = stack.enter_context(worktree(args.baseline))
        for label, tree in trees.items():
            with service(tree, origin.url) as url:
                rows.extend((label, measure(python, url, args.calls)) for python in clients)
    print(f"{'service':<22} {'client mcp':<11} {'tools/list chars':>16} {'p50 ms/call':>12} {'burst p50 ms':>13}")
    for label, row in rows:
        sizes = f"{row['list_chars']:>16} {row['p50_ms']:>12.1f} {row['burst_p50_ms']:>13.1f}"
        print(f"{label:<22} {row['mcp']!s:<11} {sizes}")
    if args.baseline:
        print("\nper-call p50, baseline / this tree (same client):")
        ours = {row["mcp"]: row for label, row in rows if label == "this tree"}
        for label, row in rows:
            if label != "this tree" and row["mcp"] in ours:
                mine = ours[row["mcp"]]
                print(
                    f"  mcp {row['mcp']}: sequential {float(row['p50_ms']) / float(mine['p50_ms']):.2f}x, "
                    f"burst {float(row['burst_p50_ms']) / float(mine['burst_p50_ms']):.2f}x"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
