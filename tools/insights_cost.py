"""What usage insights cost a request and the store: the same searches and reads against two instances over the same
origin, one with insights off and one with them on, paired in one run.

    python tools/insights_cost.py --corpus ../shared/corpus/origin [--searches 1000]

Starts a static origin over `--corpus`, Azurite, and two `python -m shared serve` processes (lexical ranking, so
the model's load does not blur the comparison; both with the index cache in Azurite and two readers' tokens). Each
round sends one search to both instances (in alternating order), then reads the second result of every fourth
search on both, all from one client, so each pair of latencies was measured under the same load. Prints p50, p95
and the mean for each instance and the ratio on/off, then, once the writer has flushed (health's `queued` is 0),
the bytes the insights container holds per 1,000 searches (reads included, as they came).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tools.azurite import Azurite  # noqa: E402
from tools.load import QUERIES, corpus_env, free_port, wait_ready  # noqa: E402
from tools.static_origin import StaticOrigin  # noqa: E402

TOKENS = ("reader-one", "reader-two")
CONTAINER = "docs-insights-cost"
MORE = [
    "argocd application health checks",
    "terraform module for an azure key vault",
    "okta application assignment",
    "aws vpc endpoints",
    "landing zone management groups",
    "rotate the gateway certificate",
    "sso with github",
    "notifications to slack",
]


def percentiles(values: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(values, n=100)
    return {
        "p50_ms": round(cuts[49] * 1000, 2),
        "p95_ms": round(cuts[94] * 1000, 2),
        "mean_ms": round(statistics.fmean(values) * 1000, 2),
    }


async def timed(client: httpx.AsyncClient, path: str, params: dict[str, str], token: str) -> tuple[float, Any]:
    started = time.perf_counter()
    response = await client.get(path, params=params, headers={"Authorization": f"Bearer {token}"})
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    return elapsed, response.json()


async def measure(urls: dict[str, str], searches: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    latency: dict[str, dict[str, list[float]]] = {name: {"search": [], "get": []} for name in urls}
    async with httpx.AsyncClient(timeout=60) as client:
        for url in urls.values():
            ready = httpx.AsyncClient(base_url=url, timeout=60, headers={"Authorization": f"Bearer {TOKENS[0]}"})
            async with ready:
                await wait_ready(ready, 600)
        for number in range(searches):
            query, token = rng.choice(QUERIES + MORE), TOKENS[number % 2]
            order = list(urls) if number % 2 else list(reversed(urls))
            answers = {}
            for name in order:
                seconds, body = await timed(client, urls[name] + "/api/docs/search", {"q": query}, token)
                latency[name]["search"].append(seconds)
                answers[name] = body["results"]
            if number % 4 == 0 and len(answers[order[0]]) >= 2:
                location = answers[order[0]][1]["location"]
                for name in order:
                    seconds, _ = await timed(client, urls[name] + "/api/docs/get", {"location": location}, token)
                    latency[name]["get"].append(seconds)
    return {name: {kind: percentiles(values) for kind, values in kinds.items()} for name, kinds in latency.items()}


async def flushed(url: str, seconds: float = 60) -> dict[str, Any]:
    """Health's insights once nothing is queued (and the last batch is written)."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        deadline = time.monotonic() + seconds
        while True:
            insights: dict[str, Any] = (await client.get("/api/health")).json()["insights"]
            if insights["queued"] == 0 or time.monotonic() > deadline:
                await asyncio.sleep(2)  # the batch taken off the queue last is being appended
                final: dict[str, Any] = (await client.get("/api/health")).json()["insights"]
                return final
            await asyncio.sleep(0.5)


def stored_bytes(connection_string: str) -> tuple[int, int]:
    from azure.storage.blob import BlobServiceClient

    with BlobServiceClient.from_connection_string(connection_string) as service:
        blobs = list(service.get_container_client(CONTAINER).list_blobs(name_starts_with="events/"))
    return sum(blob.size for blob in blobs), len(blobs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="directory of built sites ({dir}/{site}/)")
    parser.add_argument("--searches", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    servers: list[subprocess.Popen[bytes]] = []
    with StaticOrigin(args.corpus) as origin, Azurite() as storage:
        urls = {}
        for name, enabled in (("off", "false"), ("on", "true")):
            port = free_port()
            env = corpus_env(
                origin.url,
                storage=storage.connection_string,
                Search__Semantic="false",
                Inbound__Tokens=",".join(TOKENS),
                Insights__Enabled=enabled,
                Insights__Container=CONTAINER,
                Cache__Container=f"docs-index-cache-{name}",
            )
            command = [sys.executable, "-m", "shared", "serve", "--port", str(port), "--log-level", "warning"]
            servers.append(subprocess.Popen(command, cwd=REPO, env=env))
            urls[name] = f"http://127.0.0.1:{port}"
        try:
            timings = asyncio.run(measure(urls, args.searches, args.seed))
            health = asyncio.run(flushed(urls["on"]))
            size, blobs = stored_bytes(storage.connection_string)
        finally:
            for server in servers:
                server.terminate()
                server.wait(30)
    ratios = {
        kind: {key: round(timings["on"][kind][key] / timings["off"][kind][key], 3) for key in timings["on"][kind]}
        for kind in timings["on"]
    }
    reads = len([1 for number in range(args.searches) if number % 4 == 0])
    print(
        json.dumps(
            {
                "searches": args.searches,
                "reads_at_most": reads,
                "latency": timings,
                "ratio_on_over_off": ratios,
                "insights_health": health,
                "stored_bytes": size,
                "stored_blobs": blobs,
                "bytes_per_1000_searches": round(size * 1000 / args.searches),
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
