"""What hostile origin content costs everyone else, black-box: the service under uvicorn (its own process) over a
corpus plus pathological content, and how fast it keeps answering.

    python tools/hostile.py --corpus ../shared/corpus/origin [--checkout PATH]

Serves the corpus with three additions: an HTML-only page of 80 KB of `<a` (the raw Markdown 404), an index entry
of 400,000 `<` appended to one site's index, and a lone surrogate in another entry. While the hostile page is being
fetched and converted, `/api/health` is asked every 50 ms: its slowest answer is what every caller waited at
worst. Then an all-sites search (the hostile entry's site included) and the surrogate's. `--checkout` runs another
checkout's service (a `git worktree` of an earlier commit) the same way, for a before-and-after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tools.load import corpus_env, free_port  # noqa: E402
from tools.static_origin import StaticOrigin  # noqa: E402

HOSTILE_PAGE = "/forge/operator-manual/ingress/"
HOSTILE_SITE_INDEX = "/iac-okta-modules/search/search_index.json"


async def timed(client: httpx.AsyncClient, path: str, **params: str) -> tuple[int | str, float, dict[str, object]]:
    """The status (or "no answer" when the client gave up), the seconds it took, and the body's JSON."""
    started = time.perf_counter()
    try:
        response = await client.get(path, params=params)
    except httpx.TimeoutException:
        return "no answer", round(time.perf_counter() - started, 2), {}
    return response.status_code, round(time.perf_counter() - started, 2), response.json()


async def run(base: str, seconds: float) -> dict[str, object]:
    async with httpx.AsyncClient(base_url=base, timeout=seconds + 30) as client:
        deadline = time.monotonic() + 120
        while True:
            try:
                await client.get("/api/health")
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise SystemExit("the service did not start") from None
                await asyncio.sleep(0.1)
        listing = await timed(client, "/api/docs/search", q="*", limit="25")  # every site loads, the hostile one too
        health_times: list[float] = []
        getting = asyncio.ensure_future(timed(client, "/api/docs/get", location="operator-manual/ingress"))
        while not getting.done():
            health = await timed(client, "/api/health")
            health_times.append(health[1])
            await asyncio.sleep(0.05)
        got = await getting
        searched = await timed(client, "/api/docs/search", q="okta group rule")
        odd = await timed(client, "/api/docs/search", q="zebracorn")
    results = odd[2].get("results", [])
    return {
        "first_listing": {"status": listing[0], "seconds": listing[1]},
        "hostile_page": {"status": got[0], "seconds": got[1]},
        "health_while_converting": {"answers": len(health_times), "slowest_s": max(health_times, default=0.0)},
        "hostile_site_search": {"status": searched[0], "seconds": searched[1]},
        "surrogate_entry_search": {"status": odd[0], "results": len(results) if isinstance(results, list) else 0},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--checkout", type=Path, default=REPO)
    parser.add_argument("--deadline", type=float, default=30.0, help="RequestTimeoutSeconds")
    args = parser.parse_args(argv)
    index = json.loads((args.corpus / HOSTILE_SITE_INDEX.lstrip("/")).read_text())
    index["docs"].append({"location": "hostile/", "title": "Hostile", "text": "<" * 400_000})
    index["docs"].append({"location": "odd/", "title": "Odd\ud800", "text": "zebracorn \udfff"})
    with StaticOrigin(args.corpus) as origin:
        origin.respond(HOSTILE_PAGE, body="<a" * 40_000, content_type="text/html")
        origin.respond(HOSTILE_PAGE.rstrip("/") + ".md", status=404, body="not found")
        origin.respond(HOSTILE_SITE_INDEX, body=json.dumps(index), content_type="application/json")
        env = corpus_env(origin.url, Search__Semantic="false", RequestTimeoutSeconds=str(args.deadline))
        env["PYTHONPATH"] = str(args.checkout.resolve())
        port = free_port()
        command = [sys.executable, "-m", "shared", "serve", "--port", str(port), "--log-level", "warning"]
        server = subprocess.Popen(command, cwd=args.checkout, env=env)
        try:
            report = asyncio.run(run(f"http://127.0.0.1:{port}", args.deadline))
        finally:
            server.terminate()
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:  # a process stuck in a CPU loop does not always take the hint
                server.kill()
                server.wait(30)
    print(json.dumps({"checkout": str(args.checkout)} | report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
