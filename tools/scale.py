"""The cost curve: the sample corpus at 1x and at N times (copies of its directory-published sites under new names),
each warmed into Azurite, then a fresh `python -m shared serve` over the warm storage, measured black-box.

    python tools/scale.py --corpus ../shared/corpus/origin [--sizes 1,8] [--requests 2000]

Per size: the warm-up's time (`python -m shared warm`: fetch, build, prebuilt rankers, embeddings), the cold first
search on a fresh process over warm storage and whether it was ranked semantically, the time until every site
ranks semantically, resident memory after start-up and after `--requests` mixed requests (search, get, list; 50
clients), HTTP p50 of searches ranked by meaning (hybrid) and, in a second fresh process with
`Search__Semantic=false`, lexically; then the growth ratios between the smallest and the largest size. Copies are
byte-for-byte the same pages under another site name: nothing here may rely on that (each copy is its own index,
prebuilt ranker and vectors).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tools.azurite import Azurite  # noqa: E402
from tools.load import QUERIES, corpus_env, free_port, memory_mb, run  # noqa: E402
from tools.static_origin import StaticOrigin  # noqa: E402

SEQUENTIAL = 200
"""Searches sent one at a time after the load, for p50s that measure the work rather than the queue."""
DIRECTORY_SITES = ("forge", "iac-azure-modules", "iac-okta-modules")
ROOTED = {"cloud-foundations": "/search/search_index.json"}


def origin_at(corpus: Path, size: int, scratch: Path) -> tuple[Path, list[str]]:
    """The corpus with `size - 1` more copies of each directory-published site; the sites it serves."""
    root = scratch / f"origin-{size}x"
    shutil.copytree(corpus, root, symlinks=True)
    sites = [*DIRECTORY_SITES, *ROOTED]
    for copy in range(2, size + 1):
        for site in DIRECTORY_SITES:
            name = f"{site}-{copy}"
            shutil.copytree(corpus / site, root / name)
            sites.append(name)
    return root, sites


def environment(origin: str, storage: str, sites: list[str], **settings: str) -> dict[str, str]:
    return corpus_env(
        origin, sites=",".join(sites), overrides=json.dumps(ROOTED), storage=storage, DefaultSite="forge", **settings
    )


async def cold(base: str, pid: int, sites: int, requests: int, semantic: bool) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=50, max_keepalive_connections=50, keepalive_expiry=1.0)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        while True:  # the process is up when health answers; nothing is loaded by it
            try:
                if (await client.get("/api/health")).status_code in (200, 503):
                    break
            except httpx.HTTPError:
                await asyncio.sleep(0.05)
        started = time.perf_counter()
        first = await client.get("/api/docs/search", params={"q": "how do I configure the ingress controller"})
        first_seconds = time.perf_counter() - started
        health = (await client.get("/api/health")).json()["providers"]["mkdocs"]["sites"]
        loaded = {name: state for name, state in health.items() if state["state"] == "loaded"}
        first_semantic = bool(loaded) and all(state.get("ranking") == "semantic" for state in loaded.values())
        prebuilt = sum(1 for state in loaded.values() if state.get("ranker") == "prebuilt")
        until_semantic = None
        while semantic:
            health = (await client.get("/api/health")).json()["providers"]["mkdocs"]["sites"]
            states = [state for state in health.values() if state["state"] != "failed"]
            if (
                states
                and all(state["state"] == "loaded" for state in states)
                and all(state.get("ranking") == "semantic" for state in states)
            ):
                until_semantic = round(time.perf_counter() - started, 2)
                break
            if time.perf_counter() - started > 600:
                break
            await client.get("/api/docs/search", params={"q": "*"})
            await asyncio.sleep(0.1)
        before = memory_mb(pid)
        summary: dict[str, Any] = await run(client, requests, 50, 7)
        after = memory_mb(pid)
        alone = []  # one client: what a request costs, not how long it queued behind 49 others
        for number in range(SEQUENTIAL):
            started = time.perf_counter()
            await client.get("/api/docs/search", params={"q": QUERIES[number % len(QUERIES)]})
            alone.append(time.perf_counter() - started)
    return {
        "first_search_seconds": round(first_seconds, 3),
        "first_search_status": first.status_code,
        "first_search_semantic": first_semantic,
        "sites_loaded_at_first_search": len(loaded),
        "prebuilt_rankers": prebuilt,
        "seconds_until_every_site_semantic": until_semantic,
        "rss_mb_after_start": before["VmRSS"],
        "rss_mb_after_requests": after["VmRSS"],
        "peak_mb": after["VmHWM"],
        "search_p50_ms_one_client": round(statistics.median(alone) * 1000, 1),
        "search_p50_ms": _p50(summary, "search"),
        "get_p50_ms": _p50(summary, "get"),
        "errors": {key: summary[key] for key in ("5xx", "errors") if summary.get(key)},
    }


def _p50(summary: dict[str, Any], kind: str) -> float | None:
    measured = summary.get(kind)
    return measured.get("p50_ms") if isinstance(measured, dict) else None


def serve(env: dict[str, str], sites: int, requests: int, semantic: bool) -> dict[str, Any]:
    port = free_port()
    command = [sys.executable, "-m", "shared", "serve", "--port", str(port), "--log-level", "warning"]
    # A fresh instance: nothing in its local temporary directory (the model graph comes from the store, if at all).
    with tempfile.TemporaryDirectory(prefix="instance-") as fresh:
        server = subprocess.Popen(command, cwd=REPO, env=env | {"TMPDIR": fresh})
        try:
            return asyncio.run(cold(f"http://127.0.0.1:{port}", server.pid, sites, requests, semantic))
        finally:
            server.terminate()
            server.wait(30)


def measure_size(corpus: Path, size: int, requests: int, scratch: Path) -> dict[str, Any]:
    root, sites = origin_at(corpus, size, scratch)
    pages = sum(1 for _ in root.rglob("index.html"))
    with StaticOrigin(root) as origin, Azurite(memory_limit_mb=4096) as azurite:
        env = environment(origin.url, azurite.connection_string, sites)
        started = time.monotonic()
        warm = subprocess.run(
            [sys.executable, "-m", "shared", "warm"], cwd=REPO, env=env, capture_output=True, text=True
        )
        warm_seconds = round(time.monotonic() - started, 1)
        if warm.returncode not in (0, 1):
            raise SystemExit(f"warm-up failed: {warm.stderr[-2000:]}")
        hybrid = serve(env, len(sites), requests, semantic=True)
        lexical = serve(
            environment(origin.url, azurite.connection_string, sites, Search__Semantic="false"),
            len(sites),
            requests,
            semantic=False,
        )
    shutil.rmtree(root)
    return {
        "size": size,
        "sites": len(sites),
        "html_pages": pages,
        "warm_seconds": warm_seconds,
        "hybrid": hybrid,
        "lexical": lexical,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="directory of built sites ({dir}/{site}/)")
    parser.add_argument("--sizes", default="1,8", help="comma-separated multiples of the directory-published sites")
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="scale-") as scratch:
        runs = [measure_size(args.corpus, size, args.requests, Path(scratch)) for size in sizes]
    small, large = runs[0], runs[-1]

    def ratio(path: tuple[str, ...]) -> float | None:
        a: Any = small
        b: Any = large
        for key in path:
            a, b = a.get(key), b.get(key)
        return round(b / a, 2) if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a else None

    growth = {
        "warm_seconds": ratio(("warm_seconds",)),
        "first_search_seconds": ratio(("hybrid", "first_search_seconds")),
        "hybrid_http_p50_one_client": ratio(("hybrid", "search_p50_ms_one_client")),
        "lexical_http_p50_one_client": ratio(("lexical", "search_p50_ms_one_client")),
        "hybrid_http_p50_50_clients": ratio(("hybrid", "search_p50_ms")),
        "rss_after_requests": ratio(("hybrid", "rss_mb_after_requests")),
    }
    report: dict[str, Any] = {"measured_at": datetime.now().astimezone().isoformat(timespec="seconds"), "runs": runs}
    report["growth_" + f"{large['size']}x_over_{small['size']}x"] = growth
    added = large["html_pages"] - small["html_pages"]
    if added > 0:
        grown = large["hybrid"]["rss_mb_after_requests"] - small["hybrid"]["rss_mb_after_requests"]
        report["rss_kb_per_added_page_semantic"] = round(grown * 1024 / added, 1)
        grown = large["lexical"]["rss_mb_after_requests"] - small["lexical"]["rss_mb_after_requests"]
        report["rss_kb_per_added_page_lexical"] = round(grown * 1024 / added, 1)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
