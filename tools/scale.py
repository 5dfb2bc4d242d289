"""The cost curve: the sample corpus at 1x and at N times (copies of its directory-published sites under new names),
each warmed into Azurite, then a fresh `python -m shared serve` over the warm storage, measured black-box.

    python tools/scale.py --corpus ../shared/corpus/origin [--sizes 1,8] [--requests 2000]

Per size: the warm-up's time (`python -m shared warm`: fetch, build, prebuilt rankers, embeddings), the cold first
search on a fresh process over warm storage and whether it was ranked semantically (then on `COLD_ROUNDS` more fresh
processes, and the median of all), the time until every site ranks semantically, resident memory after start-up and
after `PAGE_SEARCHES` realistic page searches from one client (`QUESTION_SETS`: their p50 and p95), after
`MORE_QUESTIONS` more (code searches among them) and after `--requests` mixed requests (search, get, list, code; 50
clients), HTTP p50 and p95 with one client over the load's short queries too, ranked by meaning (hybrid) and, in a
second fresh process with `Search__Semantic=false`, lexically; a first instance over empty storage at the smallest
size (`embedded`: it embeds its own sites) and its memory after the same questions; the same p50s in process
(`tools/inprocess.py`: no HTTP, the load's queries), with the query encoder's own p50 and what a search adds to it;
then the growth ratios between the smallest and the largest size.
The cold figures are taken one size after the other; the one-client p50s and p95s with every size's instance up, asking
them in turn, so that a shared machine's drift during the run (minutes apart, it moved p50s by a third) weighs on
all sizes alike (the in-process ones: each size in a fresh process, in turn, three times). Copies are byte-for-byte
the same pages under another site name: nothing here may rely on that (each copy is its own index, prebuilt ranker
and vectors).
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
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tools.azurite import Azurite  # noqa: E402
from tools.eval import parse_eval_set  # noqa: E402
from tools.load import QUERIES, corpus_env, free_port, memory_mb, run  # noqa: E402
from tools.static_origin import StaticOrigin  # noqa: E402

SEQUENTIAL = 200
"""Searches of the load's short queries sent one at a time, for p50s that measure the work rather than the queue."""
QUESTION_SETS = tuple(REPO / "tools" / "evals" / f"blind-set-{number}.json" for number in (15, 16, 17, 18))
"""Questions as people and agents ask them (230: a third long task descriptions), asked one after another by one
client (`PAGE_SEARCHES` of them, cycled): the one-client p50 and p95 over real questions, and the memory after."""
PAGE_SEARCHES = 2000
"""Page searches (no code search among them) of `QUESTION_SETS` per instance before `rss_mb_after_page_searches`."""
EVALS = REPO / "tools" / "evals"
QUERIES_ASKED = [{"q": query} for query in QUERIES]
MORE_QUESTIONS = 150
"""Questions asked after the page searches, before `rss_mb_after_more_questions`: the code sets' (code searches
with their language, as an agent asks for an example), the holdout set's and long off-topic ones, in that order."""
IN_PROCESS_ROUNDS = 3
"""Fresh in-process measurements per size and mode (`in_process`), the sizes in turn."""
COLD_ROUNDS = 7
WARM_PASSES = 3
"""Warm-ups run per size until one finishes every site (`warmed`)."""
"""More fresh instances per size and mode whose first search alone is timed, the sizes in turn: one cold start varies
by a fifth from run to run on this machine (at 8x, 0.99 s and 1.18 s in two runs an hour apart), so the median of
these and the first is what a limit is judged by."""
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


async def up(client: httpx.AsyncClient) -> None:
    """Once the process answers health (which loads nothing)."""
    while True:
        try:
            if (await client.get("/api/health")).status_code in (200, 503):
                return
        except httpx.HTTPError:
            await asyncio.sleep(0.05)


async def first_search(client: httpx.AsyncClient) -> tuple[httpx.Response, float]:
    await up(client)
    started = time.perf_counter()
    first = await client.get("/api/docs/search", params={"q": "how do I configure the ingress controller"})
    return first, time.perf_counter() - started


async def first_search_seconds(base: str) -> float:
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        first, seconds = await first_search(client)
    if first.status_code != 200:
        raise SystemExit(f"a cold first search failed: {first.status_code}")
    return round(seconds, 3)


async def cold(base: str, pid: int, semantic: bool) -> dict[str, Any]:
    """The first search of a fresh instance, what it was ranked by, and the time until every site ranks by meaning."""
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        first, first_seconds = await first_search(client)
        started = time.perf_counter() - first_seconds
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
    return {
        "first_search_seconds": round(first_seconds, 3),
        "first_search_status": first.status_code,
        "first_search_semantic": first_semantic,
        "sites_loaded_at_first_search": len(loaded),
        "prebuilt_rankers": prebuilt,
        "seconds_until_every_site_semantic": until_semantic,
        "rss_mb_after_start": memory_mb(pid)["VmRSS"],
    }


async def loaded(base: str, pid: int, requests: int) -> dict[str, Any]:
    """`requests` mixed requests from 50 clients (`tools/load.run`: search, get, list, code): the memory after, the
    peak, and the p50s."""
    limits = httpx.Limits(max_connections=50, max_keepalive_connections=50, keepalive_expiry=1.0)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        summary: dict[str, Any] = await run(client, requests, 50, 7)
    after = memory_mb(pid)
    return {
        "rss_mb_after_requests": after["VmRSS"],
        "peak_mb": after["VmHWM"],
        "search_p50_ms": _p50(summary, "search"),
        "get_p50_ms": _p50(summary, "get"),
        "errors": {key: summary[key] for key in ("5xx", "errors") if summary.get(key)},
    }


def questions() -> list[dict[str, str]]:
    return [{"q": case.query} for path in QUESTION_SETS for case in parse_eval_set(path.read_text()).cases]


def more_questions() -> list[dict[str, str]]:
    """`MORE_QUESTIONS` realistic questions after the page searches: code searches first, then page searches."""
    asked: list[dict[str, str]] = []
    for name in ("code-dev-1", "code-set-1"):
        for case in json.loads((EVALS / f"{name}.json").read_text())["cases"]:
            asked.append(
                {"q": case["query"], "kind": "code"} | ({"language": case["language"]} if case.get("language") else {})
            )
    asked += questions_of("holdout-set")
    asked += [
        {"q": question["query"]} for question in json.loads((EVALS / "off-topic-long.json").read_text())["questions"]
    ]
    if len(asked) < MORE_QUESTIONS:
        raise SystemExit(f"only {len(asked)} more questions in {EVALS}")
    return asked[:MORE_QUESTIONS]


def questions_of(name: str) -> list[dict[str, str]]:
    return [{"q": case.query} for case in parse_eval_set((EVALS / f"{name}.json").read_text()).cases]


async def alternating(
    bases: list[str], queries: list[dict[str, str]], count: int = SEQUENTIAL
) -> list[tuple[float, float]]:
    """Each server's search p50 and p95 with one client over `count` of `queries` (cycled), the servers asked in turn
    (query by query, the order reversed every round), so a machine that speeds up or slows down during the run weighs
    on every size alike. Every answer must be a 200."""
    clients = [httpx.AsyncClient(base_url=base, timeout=120) for base in bases]
    times: list[list[float]] = [[] for _ in bases]
    try:
        for number in range(count):
            order = list(range(len(bases))) if number % 2 == 0 else list(reversed(range(len(bases))))
            for one in order:
                started = time.perf_counter()
                answer = await clients[one].get("/api/docs/search", params=queries[number % len(queries)])
                times[one].append(time.perf_counter() - started)
                if answer.status_code != 200:
                    raise SystemExit(f"a search answered {answer.status_code}: {answer.text[:300]}")
    finally:
        for client in clients:
            await client.aclose()
    return [
        (round(statistics.median(measured) * 1000, 1), round(statistics.quantiles(measured, n=20)[18] * 1000, 1))
        for measured in times
    ]


def in_process(envs: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Each size's search p50 in process (`tools/inprocess.py`, a fresh process each time), and the query encoder's:
    the sizes measured in turn, `IN_PROCESS_ROUNDS` times, each figure the median of its rounds."""
    measured: list[list[dict[str, Any]]] = [[] for _ in envs]
    for _ in range(IN_PROCESS_ROUNDS):
        for one, env in enumerate(envs):
            command = [sys.executable, str(REPO / "tools" / "inprocess.py")]
            child = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
            if child.returncode != 0:
                raise SystemExit(f"in-process measurement failed: {child.stderr[-2000:]}")
            measured[one].append(json.loads(child.stdout.strip().splitlines()[-1]))
    return [
        {key: round(statistics.median(run[key] for run in runs), 2) for key in runs[0] if key != "searches"}
        for runs in measured
    ]


def _p50(summary: dict[str, Any], kind: str) -> float | None:
    measured = summary.get(kind)
    return measured.get("p50_ms") if isinstance(measured, dict) else None


@contextmanager
def serving(env: dict[str, str]) -> Iterator[tuple[str, int]]:
    """A fresh `serve` process (nothing in its local temporary directory: the model graph comes from the store, if
    at all): its base URL and process id, stopped on leaving."""
    port = free_port()
    command = [sys.executable, "-m", "shared", "serve", "--port", str(port), "--log-level", "warning"]
    with tempfile.TemporaryDirectory(prefix="instance-") as fresh:
        server = subprocess.Popen(command, cwd=REPO, env=env | {"TMPDIR": fresh})
        try:
            yield f"http://127.0.0.1:{port}", server.pid
        finally:
            server.terminate()
            server.wait(30)


def warmed(stack: ExitStack, corpus: Path, size: int, scratch: Path) -> dict[str, Any]:
    """The corpus at `size` served by its own origin and Azurite (kept up by `stack`), warmed."""
    root, sites = origin_at(corpus, size, scratch)
    pages = sum(1 for _ in root.rglob("index.html"))
    origin = stack.enter_context(StaticOrigin(root))
    azurite = stack.enter_context(Azurite(memory_limit_mb=4096))
    env = environment(origin.url, azurite.connection_string, sites)
    started = time.monotonic()
    # Every site must be warm, or the cold series would time builds and embeddings, not loads: the warm-up's storage
    # calls fail fast (two seconds), which an Azurite starved by the warm-up's own embedding on two cores can exceed,
    # and a site it could not finish is left for the next run (exit 1), as the timer's next tick would. So: again.
    for passes in range(1, WARM_PASSES + 1):
        warm = subprocess.run(
            [sys.executable, "-m", "shared", "warm"], cwd=REPO, env=env, capture_output=True, text=True
        )
        if warm.returncode == 0:
            break
        if warm.returncode != 1 or passes == WARM_PASSES:
            raise SystemExit(f"warm-up failed (pass {passes}): {warm.stderr[-2000:]}")
    return {
        "size": size,
        "sites": len(sites),
        "html_pages": pages,
        "warm_seconds": round(time.monotonic() - started, 1),
        "warm_passes": passes,
        "env": env,
        "lexical_env": environment(origin.url, azurite.connection_string, sites, Search__Semantic="false"),
        "embedded_env": (origin.url, sites),
    }


def measure(corpus: Path, sizes: list[int], requests: int, scratch: Path) -> list[dict[str, Any]]:
    """Every size warmed; then, semantic and lexical in turn, a fresh instance per size measured cold one after
    the other (the others idle), and the one-client p50s of all of them taken alternately."""
    with ExitStack() as stack:
        runs = []
        for number, size in enumerate(sizes):  # a directory each: a size may be asked for twice (noise runs)
            (scratch / str(number)).mkdir()
            runs.append(warmed(stack, corpus, size, scratch / str(number)))
        for mode, key in (("hybrid", "env"), ("lexical", "lexical_env")):
            with ExitStack() as servers:
                bases, pids = [], []
                for measured in runs:
                    base, pid = servers.enter_context(serving(measured[key]))
                    measured[mode] = asyncio.run(cold(base, pid, semantic=mode == "hybrid"))
                    bases.append(base)
                    pids.append(pid)
                asked = asyncio.run(alternating(bases, questions(), PAGE_SEARCHES))
                for measured, pid, (p50, p95) in zip(runs, pids, asked, strict=True):
                    measured[mode]["search_p50_ms_one_client_questions"] = p50
                    measured[mode]["search_p95_ms_one_client_questions"] = p95
                    measured[mode]["rss_mb_after_page_searches"] = memory_mb(pid)["VmRSS"]
                asyncio.run(alternating(bases, more_questions(), MORE_QUESTIONS))
                for measured, pid in zip(runs, pids, strict=True):
                    measured[mode]["rss_mb_after_more_questions"] = memory_mb(pid)["VmRSS"]
                for measured, (p50, p95) in zip(runs, asyncio.run(alternating(bases, QUERIES_ASKED)), strict=True):
                    measured[mode]["search_p50_ms_one_client"] = p50
                    measured[mode]["search_p95_ms_one_client"] = p95
                for measured, base, pid in zip(runs, bases, pids, strict=True):
                    measured[mode] |= asyncio.run(loaded(base, pid, requests))
            for measured in runs:
                measured[mode]["first_search_seconds_again"] = []
            for _ in range(COLD_ROUNDS):
                for measured in runs:
                    with serving(measured[key]) as (base, _):
                        measured[mode]["first_search_seconds_again"].append(asyncio.run(first_search_seconds(base)))
            for measured in runs:
                times = [measured[mode]["first_search_seconds"], *measured[mode]["first_search_seconds_again"]]
                measured[mode]["first_search_seconds_median"] = round(statistics.median(times), 3)
            for measured, found in zip(runs, in_process([measured[key] for measured in runs]), strict=True):
                measured[mode]["in_process"] = found
        runs[0]["embedded"] = embedded(*runs[0]["embedded_env"])
    for measured in runs:
        del measured["env"], measured["lexical_env"], measured["embedded_env"]
    return runs


def embedded(origin: str, sites: list[str]) -> dict[str, Any]:
    """A first instance over empty storage (`make run`'s: a fresh Azurite): it fetches, builds and embeds its own
    sites; once every site ranks by meaning, the page searches and the more questions, and its memory after each."""
    with (
        Azurite(memory_limit_mb=4096) as azurite,
        serving(environment(origin, azurite.connection_string, sites)) as (
            base,
            pid,
        ),
    ):
        found = asyncio.run(cold(base, pid, semantic=True))
        asyncio.run(alternating([base], questions(), PAGE_SEARCHES))
        found["rss_mb_after_page_searches"] = memory_mb(pid)["VmRSS"]
        asyncio.run(alternating([base], more_questions(), MORE_QUESTIONS))
        after = memory_mb(pid)
    return found | {"rss_mb_after_more_questions": after["VmRSS"], "peak_mb": after["VmHWM"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="directory of built sites ({dir}/{site}/)")
    parser.add_argument("--sizes", default="1,8", help="comma-separated multiples of the directory-published sites")
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="scale-") as scratch:
        runs = measure(args.corpus, sizes, args.requests, Path(scratch))
    small, large = runs[0], runs[-1]

    def ratio(path: tuple[str, ...]) -> float | None:
        a: Any = small
        b: Any = large
        for key in path:
            a, b = a.get(key), b.get(key)
        return round(b / a, 2) if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a else None

    growth = {
        "warm_seconds": ratio(("warm_seconds",)),
        "first_search_seconds": ratio(("hybrid", "first_search_seconds_median")),
        "hybrid_http_p50_one_client": ratio(("hybrid", "search_p50_ms_one_client")),
        "hybrid_http_p95_one_client": ratio(("hybrid", "search_p95_ms_one_client")),
        "hybrid_http_p50_one_client_questions": ratio(("hybrid", "search_p50_ms_one_client_questions")),
        "lexical_http_p50_one_client": ratio(("lexical", "search_p50_ms_one_client")),
        "hybrid_http_p50_50_clients": ratio(("hybrid", "search_p50_ms")),
        "hybrid_in_process_p50": ratio(("hybrid", "in_process", "search_p50_ms")),
        "lexical_in_process_p50": ratio(("lexical", "in_process", "search_p50_ms")),
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
