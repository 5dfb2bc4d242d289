"""What an instance saves when Azure AI Search answers the searches: the same requests against a fresh `python -m
shared serve` over warm storage, once with MkDocs answering and once with an AI Search stand-in (a local server
speaking the service's REST protocol) ahead of it, which leaves MkDocs only resolution and `get`.

    python tools/handover.py --corpus ../shared/corpus/origin [--requests 2000]

Both runs: semantic matching on (the default), the corpus warmed into Azurite first, then `--requests` requests
from 50 clients, two searches to one get of a page a search returned. Printed per run: resident memory after
start-up and after the requests, peak, p50s, and how each site's search structures stood in health (`deferred`
while nothing fell through to MkDocs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
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

from tests.support.ai_search_server import AiSearchServer  # noqa: E402
from tools.azurite import Azurite  # noqa: E402
from tools.load import QUERIES, free_port, memory_mb  # noqa: E402
from tools.scale import environment, origin_at, up  # noqa: E402
from tools.static_origin import StaticOrigin  # noqa: E402

BLOB = "https://docs.blob.core.windows.net/docs"


def hits_for(root: Path, site: str = "forge", count: int = 10) -> list[dict[str, Any]]:
    """AI Search answers naming real pages of the corpus, as its blob indexer would have them."""
    pages = sorted(path.parent.relative_to(root / site) for path in (root / site).rglob("index.html"))[1 : count + 1]
    return [
        {
            "@search.score": 10.0 - number,
            "@search.rerankerScore": 3.0 - number / 10,
            "metadata_storage_path": f"{BLOB}/{site}/{page.as_posix()}/index.html",
            "title": page.name.replace("-", " ").title(),
            "content": f"About {page.name.replace('-', ' ')}.",
        }
        for number, page in enumerate(pages)
    ]


async def drive(base: str, pid: int, requests: int) -> dict[str, Any]:
    rng = random.Random(7)
    limits = httpx.Limits(max_connections=50, max_keepalive_connections=50, keepalive_expiry=1.0)
    latencies: dict[str, list[float]] = {"search": [], "get": []}
    locations: list[str] = []
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        await up(client)
        found = await client.get("/api/docs/search", params={"q": QUERIES[0]})
        locations += [hit["location"] for hit in found.json().get("results", [])]
        await asyncio.sleep(5)  # first loads and stored vectors settle
        before = memory_mb(pid)
        plan = rng.choices(["search", "get"], weights=[2, 1], k=requests)
        queue: asyncio.Queue[str] = asyncio.Queue()
        for kind in plan:
            queue.put_nowait(kind)

        async def worker() -> None:
            while not queue.empty():
                kind = queue.get_nowait()
                started = time.perf_counter()
                if kind == "get" and locations:
                    await client.get("/api/docs/get", params={"location": rng.choice(locations)})
                else:
                    kind = "search"
                    answer = await client.get("/api/docs/search", params={"q": rng.choice(QUERIES)})
                    locations.extend(hit["location"] for hit in answer.json().get("results", [])[:3])
                latencies[kind].append(time.perf_counter() - started)

        await asyncio.gather(*(worker() for _ in range(50)))
        after = memory_mb(pid)
        health = (await client.get("/api/health")).json()
    sites = health["providers"]["mkdocs"]["sites"]
    return {
        "answered_by": found.json().get("provider"),
        "rss_mb_after_start": before["VmRSS"],
        "rss_mb_after_requests": after["VmRSS"],
        "peak_mb": after["VmHWM"],
        "search_p50_ms": round(statistics.median(latencies["search"]) * 1000, 1),
        "get_p50_ms": round(statistics.median(latencies["get"]) * 1000, 1) if latencies["get"] else None,
        "ranker_by_site": {name: state.get("ranker") for name, state in sites.items()},
        "embedding": health.get("embedding", {}).get("state"),
    }


def run_serve(env: dict[str, str], requests: int) -> dict[str, Any]:
    port = free_port()
    command = [sys.executable, "-m", "shared", "serve", "--port", str(port), "--log-level", "warning"]
    server = subprocess.Popen(command, cwd=REPO, env=env)
    try:
        return asyncio.run(drive(f"http://127.0.0.1:{port}", server.pid, requests))
    finally:
        server.terminate()
        server.wait(30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--size", type=int, default=1)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="handover-") as scratch:
        root, sites = origin_at(args.corpus, args.size, Path(scratch))
        with StaticOrigin(root) as origin, Azurite(memory_limit_mb=4096) as azurite, AiSearchServer() as search:
            search.respond(hits_for(root))
            env = environment(origin.url, azurite.connection_string, sites)
            warm = subprocess.run([sys.executable, "-m", "shared", "warm"], cwd=REPO, env=env, capture_output=True)
            if warm.returncode not in (0, 1):
                raise SystemExit("warm-up failed")
            alone = run_serve(env, args.requests)
            ahead_settings = {
                f"Forge__Documentation__{key}": value
                for key, value in search.app_settings(MkDocsSitePrefix="forge").items()
            }
            ahead = run_serve(env | ahead_settings, args.requests)
    saved = alone["rss_mb_after_requests"] - ahead["rss_mb_after_requests"]
    report = {
        "measured_at": datetime.now().astimezone().isoformat(timespec="seconds"),
        "size": args.size,
        "sites": len(sites),
        "mkdocs_answering": alone,
        "ai_search_answering": ahead,
        "rss_mb_saved_after_requests": saved,
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
