"""How soon a publish is searchable everywhere: the docs pipeline's hook called on one instance, the page found by
another instance sharing the storage; and what the store checks behind it cost.

    python tools/freshness.py --corpus ../shared/corpus/origin [--rounds 3]

Copies the corpus to a writable directory behind a static origin, starts Azurite, warms the storage once (`python
-m shared warm`, as the timer would have), then starts two `python -m shared serve` instances over that storage
with the default settings (semantic matching on, `Cache__CheckIntervalSeconds` at its default) and a refresh
token. Each round publishes a new page on one site (its HTML, its raw Markdown and the site's index listing it),
calls `POST /api/admin/refresh` on the first instance, and then searches the second until the page is found,
printing the hook's answer time and the time until the second instance serves it (target: at most 60 s).

Last, the storage calls a serving instance makes to stay fresh, counted in process over a simulated hour of
continuous requests (one request a second per site, the clock moved by hand) against the real blob store.
Without `--corpus`, the repository's fixture sites are the origin.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from shared.cache import open_store  # noqa: E402
from shared.compose import site_registry  # noqa: E402
from shared.fetch import OriginClient  # noqa: E402
from shared.settings import load_settings  # noqa: E402
from tools.azurite import Azurite  # noqa: E402
from tools.load import OVERRIDES, SITES, corpus_env, free_port  # noqa: E402
from tools.static_origin import StaticOrigin  # noqa: E402

TOKEN = "freshness-" + uuid.uuid4().hex
TARGET_SECONDS = 60.0


def environment(origin: str, storage: str, corpus_sites: str, overrides: str) -> dict[str, str]:
    first = corpus_sites.split(",", 1)[0]
    return corpus_env(
        origin, sites=corpus_sites, overrides=overrides, storage=storage, DefaultSite=first, Refresh__Tokens=TOKEN
    )


def publish(root: Path, site: str, nonce: str, index_file: Path) -> tuple[str, str]:
    """A new page on `site` as a docs build publishes it (`index_file`: the site's published index); returns its
    path and words only it has."""
    words = f"zephyr{nonce} cadence{nonce}"
    path = f"release-train-{nonce}/"
    page = root / site / path
    page.mkdir(parents=True)
    (page / "index.html").write_text(
        f"<html><body><article><h1>Release train {nonce}</h1><p>The {words} train leaves on Tuesdays.</p>"
        "</article></body></html>",
        encoding="utf-8",
    )
    (root / site / f"release-train-{nonce}.md").write_text(
        f"# Release train {nonce}\n\nThe {words} train leaves on Tuesdays.\n", encoding="utf-8"
    )
    index_path = index_file
    index = json.loads(index_path.read_bytes())
    index["docs"].append({"location": path, "title": f"Release train {nonce}", "text": f"<p>The {words} train.</p>"})
    index_path.write_text(json.dumps(index), encoding="utf-8")
    return path, words


async def ready(client: httpx.AsyncClient, deadline: float) -> list[str]:
    """Wait until every site is loaded with its vectors, or failed (not published); the loaded ones."""
    while True:
        try:
            await client.get("/api/docs/search", params={"q": "*", "limit": 25})
            sites = (await client.get("/api/health")).json()["providers"]["mkdocs"]["sites"]
            settled = [
                state["state"] == "failed" or state.get("semantic") not in (None, "pending") for state in sites.values()
            ]
            if all(settled):
                return [site for site, state in sites.items() if state["state"] == "loaded"]
        except (httpx.HTTPError, KeyError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise SystemExit("the instances were not ready in time")
        await asyncio.sleep(0.5)


async def round_trip(
    first: httpx.AsyncClient, second: httpx.AsyncClient, root: Path, site: str, index_file: Path
) -> dict[str, Any]:
    nonce = uuid.uuid4().hex[:8]
    path, words = publish(root, site, nonce, index_file)
    started = time.monotonic()
    hooked = await first.post(
        "/api/admin/refresh", json={"sites": [site]}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=240
    )
    hook_seconds = time.monotonic() - started
    outcome = hooked.json()["sites"][site] if hooked.status_code in (200, 202) else {"status": hooked.status_code}
    while True:
        found = await second.get("/api/docs/search", params={"q": words, "site": site, "limit": 5})
        body = found.json()
        if any(path.rstrip("/") in result["location"] for result in body.get("results", [])):
            break
        if time.monotonic() - started > 5 * TARGET_SECONDS:
            raise SystemExit("the second instance never served the published page")
        await asyncio.sleep(0.2)
    seen = time.monotonic() - started
    indexed_at = body["sites"][site]["indexedAt"]
    return {
        "site": site,
        "hook_status": hooked.status_code,
        "outcome": outcome.get("outcome"),
        "pages": outcome.get("pages"),
        "semantic": outcome.get("semantic"),
        "hook_seconds": round(hook_seconds, 2),
        "visible_on_second_seconds": round(seen, 2),
        "indexed_at": indexed_at,
    }


class Counting:
    """The real store, counting calls by kind."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.kind, self.calls = inner, inner.kind, Counter[str]()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)
        if name in ("read", "stat", "write", "touch"):

            async def counted(*args: Any, **kwargs: Any) -> Any:
                self.calls[name] += 1
                return await method(*args, **kwargs)

            return counted
        return method


async def store_calls_per_hour(env: dict[str, str]) -> dict[str, Any]:
    """One instance's storage calls over a simulated hour of one request a second per site."""
    settings = load_settings(env)
    clock = [0.0]
    store = Counting(open_store(settings))
    async with OriginClient(settings.origin) as client:
        registry = site_registry(settings, client, store, clock=lambda: clock[0])
        for site in settings.sites:
            await registry.get(site)
        await registry.recorded()
        store.calls.clear()
        for _ in range(3600):
            clock[0] += 1.0
            for site in settings.sites:
                await registry.get(site)
        await registry.recorded()
        await registry.aclose()
    await store.inner.aclose()
    sites = len(settings.sites)
    total = sum(store.calls.values())
    return {
        "check_interval_seconds": settings.cache.check_interval_seconds,
        "sites": sites,
        "calls_per_hour": dict(store.calls),
        "calls_per_site_per_hour": round(total / sites, 1),
    }


async def publishes(
    args: argparse.Namespace, ports: list[int], root: Path, sites: list[str], indexes: dict[str, Path]
) -> list[dict[str, Any]]:
    async with (
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{ports[0]}", timeout=60) as first,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{ports[1]}", timeout=60) as second,
    ):
        deadline = time.monotonic() + args.ready_timeout
        loaded, _ = await asyncio.gather(ready(first, deadline), ready(second, deadline))
        chosen = [site for site in sites if site in loaded][: args.rounds]
        return [await round_trip(first, second, root, site, indexes[site]) for site in chosen]


def measure(args: argparse.Namespace) -> dict[str, Any]:
    corpus = args.corpus
    sites, overrides = (SITES, OVERRIDES) if corpus is not None else fixture_sites()
    with tempfile.TemporaryDirectory(prefix="freshness-") as scratch:
        root = Path(shutil.copytree(corpus or fixture_origin(), Path(scratch) / "origin"))
        with StaticOrigin(root) as origin, Azurite() as azurite:
            env = environment(origin.url, azurite.connection_string, sites, overrides)
            settings = load_settings(env)
            indexes = {
                site: root / settings.index_url(site).removeprefix(settings.origin).lstrip("/")
                for site in settings.sites
            }
            started = time.monotonic()
            warm = subprocess.run(
                [sys.executable, "-m", "shared", "warm"], cwd=REPO, env=env, capture_output=True, text=True
            )
            warm_seconds = time.monotonic() - started
            if warm.returncode not in (0, 1):
                raise SystemExit(f"warm-up failed: {warm.stderr[-2000:]}")
            servers, ports = [], [free_port(), free_port()]
            try:
                for port in ports:
                    command = [sys.executable, "-m", "shared", "serve", "--port", str(port), "--log-level", "warning"]
                    servers.append(subprocess.Popen(command, cwd=REPO, env=env))
                rounds = asyncio.run(publishes(args, ports, root, list(settings.sites), indexes))
            finally:
                for server in servers:
                    server.terminate()
                for server in servers:
                    server.wait(30)
            calls = asyncio.run(store_calls_per_hour(env))
    if not rounds:
        raise SystemExit("no site was loaded on both instances: nothing was published")
    return {
        "measured_at": datetime.now().astimezone().isoformat(timespec="seconds"),
        "corpus": str(corpus) if corpus else "tests/fixtures/sites (built)",
        "warm_seconds": round(warm_seconds, 1),
        "rounds": rounds,
        "worst_visible_seconds": max(item["visible_on_second_seconds"] for item in rounds),
        "target_seconds": TARGET_SECONDS,
        "within_target": all(item["visible_on_second_seconds"] <= TARGET_SECONDS for item in rounds),
        "store_calls": calls,
    }


def fixture_origin() -> Path:
    from tests.support.sites import build_fixture_origin

    return build_fixture_origin()


def fixture_sites() -> tuple[str, str]:
    from tests.support.sites import PUBLISHED_SITES, ROOTED_OVERRIDE

    return ",".join(PUBLISHED_SITES), ROOTED_OVERRIDE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, help="directory of built sites ({dir}/{site}/); default: fixtures")
    parser.add_argument("--rounds", type=int, default=3, help="publishes, each on the next site")
    parser.add_argument("--ready-timeout", type=float, default=900.0)
    args = parser.parse_args(argv)
    report = measure(args)
    print(json.dumps(report, indent=2))
    return 0 if report["within_target"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
