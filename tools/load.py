"""A bounded load run: the service under uvicorn over a documentation origin, hit by concurrent clients.

    python tools/load.py --corpus ../shared/corpus/origin [--requests 2000] [--clients 50] [--lexical | --both]
                         [--republish] [--azurite]

Starts a static origin over `--corpus` and `python -m shared serve` in its own process (no storage: the cache
lives in memory; `--azurite`: in a fresh Azurite), waits until every site is loaded and, with semantic matching on,
embedded (so what is measured is the steady state, not the first minute), then sends a fixed number of mixed
requests (50% search, 25% get of a location a search returned, 8% `*` listings, 17% code searches, `kind=code`, half
of them naming a language) from concurrent clients. Prints
throughput, p50/p99 per kind, the number of 5xx answers and transport errors, and the server's resident memory
before and after (VmRSS, and VmHWM, its peak). Exits 1 when any answer was a 5xx or failed.

`--republish` publishes every site again with every entry's text changed and calls the publish hook for all of
them just before the requests are sent, so the instance re-embeds every site while it answers them from the old
indexes (a newer index waits for its vectors before it is swapped in); the peak is read once every site serves its
new index with vectors (`republish_seconds` after the hook): the most one instance holds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import socket
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
from tools.static_origin import StaticOrigin  # noqa: E402

SITES = "forge,cloud-foundations,iac-azure-modules,iac-okta-modules,iac-aws-modules"
OVERRIDES = '{"cloud-foundations": "/search/search_index.json"}'
QUERIES = [
    "sync windows",
    "how do I restrict when applications can sync",
    "rbac policy for a project",
    "ingress with TLS",
    "helm values override",
    "webhook configuration for git",
    "okta group rule",
    "dns records for a zone",
    "azure virtual network peering",
    "metrics and monitoring",
    "troubleshooting a failed sync",
    "Error: sync failed\n  caused by: permission denied",
]


CODE_QUERIES = [
    ("applicationset with a git directory generator", None),
    ("terraform okta oauth app with client credentials", "terraform"),
    ("add a cluster with the argocd cli", "bash"),
    ("external-dns deployment manifest for route53", "yaml"),
    ("deploy the hub networking module with azure cli", None),
    ("helm values for ingress tls", "yaml"),
]
"""Code searches (`kind=code`) and the language each asks for, if any."""


def memory_mb(pid: int) -> dict[str, int]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {key: int(fields[key].split()[0]) // 1024 for key in ("VmRSS", "VmHWM")}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_ready(client: httpx.AsyncClient, seconds: float) -> None:
    """Every site loaded (a listing loads them) and none with embeddings pending, polled against a deadline."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            await client.get("/api/docs/search", params={"q": "*", "limit": 25})
            health = (await client.get("/api/health")).json()
            # Builds before the composition root reported `sites` at the top: kept so old builds can be compared.
            sites = health.get("providers", {}).get("mkdocs", {}).get("sites") or health["sites"]
            if all(state.get("semantic") != "pending" and state["state"] != "not_loaded" for state in sites.values()):
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"the service was not ready within {seconds:g} s")
        await asyncio.sleep(0.5)


async def run(client: httpx.AsyncClient, requests: int, clients: int, seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    plan = rng.choices(["search", "get", "list", "code"], weights=[6, 3, 1, 2], k=requests)
    locations: list[str] = []
    latencies: dict[str, list[float]] = {"search": [], "get": [], "list": [], "code": []}
    outcome = {"5xx": 0, "errors": 0, "4xx": 0}
    kinds: dict[str, int] = {}
    """Transport errors by exception type, so a failed run says what failed."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    for kind in plan:
        queue.put_nowait(kind)

    async def one(kind: str) -> None:
        if kind == "get" and not locations:
            kind = "search"
        if kind == "get":
            params = {"location": rng.choice(locations)}
            path = "/api/docs/get"
        elif kind == "code":
            query, language = rng.choice(CODE_QUERIES)
            params = {"q": query, "kind": "code", **({"language": language} if language else {})}
            path = "/api/docs/search"
        else:
            params = {"q": "*" if kind == "list" else rng.choice(QUERIES), "limit": "25" if kind == "list" else "10"}
            path = "/api/docs/search"
        started = time.perf_counter()
        try:
            response = await client.get(path, params=params)
        except httpx.HTTPError as exc:
            outcome["errors"] += 1
            kinds[type(exc).__name__] = kinds.get(type(exc).__name__, 0) + 1
            return
        latencies[kind].append(time.perf_counter() - started)
        if response.status_code >= 500:
            outcome["5xx"] += 1
        elif response.status_code >= 400:
            outcome["4xx"] += 1
        elif kind == "search":
            locations.extend(hit["location"] for hit in response.json()["results"][:5])

    async def worker() -> None:
        while not queue.empty():
            await one(queue.get_nowait())

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    elapsed = time.perf_counter() - started
    summary: dict[str, object] = {"requests": requests, "clients": clients, "seconds": round(elapsed, 2)}
    summary["throughput_rps"] = round(requests / elapsed, 1)
    for kind, values in latencies.items():
        if values:
            cuts = statistics.quantiles(values, n=100)
            summary[kind] = {"n": len(values), "p50_ms": round(cuts[49] * 1000, 1), "p99_ms": round(cuts[98] * 1000, 1)}
    return summary | outcome | ({"error_types": kinds} if kinds else {})


HOOK_TOKEN = "load-republish"


def republish(origin: StaticOrigin, corpus: Path) -> int:
    """Serve every site's index with each entry's text changed (so none of its vectors can be reused); the
    number of entries changed."""
    changed = 0
    for index in sorted(corpus.glob("**/search/search_index.json")):
        document = json.loads(index.read_bytes())
        for entry in document.get("docs", []):
            entry["text"] = f"{entry.get('text', '')} Republished."
            changed += 1
        origin.respond("/" + index.relative_to(corpus).as_posix(), body=json.dumps(document))
    return changed


async def wait_republished(client: httpx.AsyncClient, before: dict[str, str], seconds: float) -> None:
    """Every site serving an index fetched after `before` (site: fetchedAt), with its vectors, nothing updating."""
    deadline = time.monotonic() + seconds
    while True:
        sites = (await client.get("/api/health")).json()["providers"]["mkdocs"]["sites"]
        loaded = {site: state for site, state in sites.items() if state["state"] == "loaded"}
        if all(
            state["fetchedAt"] != before.get(site) and state.get("semantic") == "ready" and not state.get("updating")
            for site, state in loaded.items()
        ):
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"the sites were not re-embedded within {seconds:g} s")
        await asyncio.sleep(0.5)


async def start_republish(client: httpx.AsyncClient, origin: StaticOrigin, corpus: Path) -> dict[str, Any]:
    """Publish every site anew and call the hook without waiting for it; what `finish_republish` needs."""
    sites = (await client.get("/api/health")).json()["providers"]["mkdocs"]["sites"]
    before = {site: state["fetchedAt"] for site, state in sites.items() if state["state"] == "loaded"}
    changed = republish(origin, corpus)
    headers = {"Authorization": f"Bearer {HOOK_TOKEN}", "Prefer": "respond-async"}
    (await client.post("/api/admin/refresh", headers=headers)).raise_for_status()
    return {"before": before, "changed": changed, "started": time.monotonic()}


async def finish_republish(
    client: httpx.AsyncClient, started: dict[str, Any], pid: int, seconds: float
) -> dict[str, object]:
    await wait_republished(client, started["before"], seconds)
    return {
        "republished_entries": started["changed"],
        "republish_seconds": round(time.monotonic() - started["started"], 1),
        "republish_peak_mb": memory_mb(pid)["VmHWM"],
    }


async def measure(
    args: argparse.Namespace, base: str, pid: int, origin: StaticOrigin | None = None
) -> dict[str, object]:
    # Idle connections expire on the client first: uvicorn drops a connection idle for 5 s, httpx's default
    # expiry is the same 5 s, and a request sent on a connection the server is closing ends in a ReadError.
    limits = httpx.Limits(max_connections=args.clients, max_keepalive_connections=args.clients, keepalive_expiry=1.0)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:
        await wait_ready(client, args.ready_timeout)
        before = memory_mb(pid)
        republishing = (
            await start_republish(client, origin, args.corpus) if origin is not None and args.republish else None
        )
        summary = await run(client, args.requests, args.clients, args.seed)
        after = memory_mb(pid)
        again = (
            await finish_republish(client, republishing, pid, args.ready_timeout) if republishing is not None else {}
        )
    measured = {"rss_mb_before": before["VmRSS"], "rss_mb_after": after["VmRSS"], "peak_mb": after["VmHWM"]}
    return summary | measured | again


def corpus_env(
    origin_url: str, *, sites: str = SITES, overrides: str = OVERRIDES, storage: str | None = None, **settings: str
) -> dict[str, str]:
    """The environment for `python -m shared serve` over a corpus origin: the caller's, without its app settings,
    plus the corpus's sites (or `sites`, with their `overrides`), `storage` as `AzureWebJobsStorage`, and
    `settings` (`Search__Semantic="false"` -> `Forge__Documentation__Search__...`)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.lower().startswith(("forge__documentation__", "azurewebjobsstorage"))
    }
    env |= {
        "Forge__Documentation__Origin": origin_url,
        "Forge__Documentation__Sites": sites,
        "Forge__Documentation__SearchIndexOverrides": overrides,
    }
    if storage is not None:
        env["AzureWebJobsStorage"] = storage
    return env | {f"Forge__Documentation__{key}": value for key, value in settings.items()}


def serve_and_measure(args: argparse.Namespace, corpus: Path, lexical: bool) -> dict[str, Any]:
    port = free_port()
    with StaticOrigin(corpus) as origin, contextlib.ExitStack() as stack:
        storage = stack.enter_context(Azurite()).connection_string if args.azurite else None
        semantic = "false" if lexical else "true"
        env = corpus_env(origin.url, storage=storage, Search__Semantic=semantic, Refresh__Tokens=HOOK_TOKEN)
        command = [sys.executable, "-m", "shared", "serve", "--port", str(port), "--log-level", "warning"]
        server = subprocess.Popen(command, cwd=REPO, env=env)
        try:
            summary = asyncio.run(measure(args, f"http://127.0.0.1:{port}", server.pid, origin))
        finally:
            server.terminate()
            server.wait(30)
    return {"mode": "lexical" if lexical else "semantic", "storage": "azurite" if args.azurite else "memory"} | summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="directory of built sites ({dir}/{site}/)")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--lexical", action="store_true", help="Search__Semantic=false")
    parser.add_argument("--both", action="store_true", help="semantic, then lexical, and the ratios between them")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--azurite", action="store_true", help="the cache in a fresh Azurite (a publish refresh then embeds and stores)"
    )
    parser.add_argument(
        "--republish", action="store_true", help="then re-embed every site (a publish changing every entry's text)"
    )
    parser.add_argument("--ready-timeout", type=float, default=900.0)
    args = parser.parse_args(argv)
    modes = [False, True] if args.both else [args.lexical]
    runs = [serve_and_measure(args, args.corpus, lexical) for lexical in modes]
    for summary in runs:
        print(json.dumps(summary, indent=2))
    if args.both:
        semantic, lexical = runs
        print(
            f"semantic against lexical: resident after {semantic['rss_mb_after']} / {lexical['rss_mb_after']} MB "
            f"(x{int(semantic['rss_mb_after']) / int(lexical['rss_mb_after']):.2f}), throughput "
            f"x{float(semantic['throughput_rps']) / float(lexical['throughput_rps']):.2f}"
        )
    return 1 if any(summary["5xx"] or summary["errors"] for summary in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
