"""Where a serving instance's memory goes, part by part: the service composed in process as `serve` composes it,
over the storage and origin its app settings name (the environment), once every site is loaded and ranks by meaning,
after `--searches` realistic page searches (blind sets 15-18, as `tools/scale.py` asks them), then after `--code`
code searches (the code sets').

    python tools/memory_parts.py [--searches 2000] [--code 100] [--tree PATH]

Prints JSON: the resident memory (VmRSS) at each step, and the Python heap (numpy arrays included) the process holds
at the end, by part: each allocation is named by the first frame of the service's own code that made it
(`PARTS`: module and function), and what no part names is `other`. What the heap does not hold (the interpreter,
the libraries, onnxruntime's sessions and the encoder) is `rss - traced`. `--tree` measures another checkout of
the service (a baseline) with this script, so a before and an after are measured alike.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

PARTS = (
    ("pieces.py", "", "word pieces (the rerank's signs)"),
    ("artifact.py", "_column", "entry text columns"),
    ("artifact.py", "terms", "vocabularies"),
    ("artifact.py", "unpostings", "postings"),
    ("postings.py", "", "postings"),
    ("artifact.py", "CodeColumns", "code side"),
    ("artifact.py", "_decoded_blocks", "code side"),
    ("semantics.py", "CodeRows", "code side"),
    ("artifact.py", "_loads", "artifact: pages, boosts, code blocks"),
    ("artifact.py", "", "artifact: other"),
    ("codeblocks/", "", "code side"),
    ("semantics.py", "", "scan rows held (numpy)"),
    ("quantized.py", "", "scan rows held (numpy)"),
    ("vectors.py", "", "scan rows held (numpy)"),
    ("stored_vectors.py", "", "scan rows held (numpy)"),
    ("index.py", "", "index: pages, lookups, cut entries"),
    ("columns.py", "", "index: pages, lookups, cut entries"),
    ("blob.py", "", "stored payloads (a prebuilt ranker's, held by its views)"),
    ("ranking.py", "", "ranker: pages and per-page arrays"),
    ("federation.py", "", "federations"),
    ("kinds.py", "", "ranker: pages and per-page arrays"),
)
"""(path suffix, function, part): the first frame of the service's code in an allocation's stack that matches names
its part (a function of "" matches any)."""


def rss_mb() -> int:
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) // 1024


CODE_SIDE = ("/codeblocks/", "/lifecycle/parts.py")
"""What code search reads of a site, whichever function allocated it (its vocabulary, its postings): `code side`."""


def part_of(trace: tracemalloc.Traceback) -> str:
    if any(marker in frame.filename for frame in trace for marker in CODE_SIDE):
        return "code side"
    if any(_function(frame) in ("read_code_rows", "_code_part") for frame in trace if "/shared/" in frame.filename):
        return "code side"
    for frame in reversed(trace):  # the innermost frame first
        if "/shared/" not in frame.filename:
            continue
        for suffix, function, part in PARTS:
            if suffix in frame.filename and (not function or _function(frame) == function):
                return part
    return "other"


@functools.cache
def _lines(filename: str) -> list[str]:
    try:
        return Path(filename).read_text().splitlines()
    except OSError:
        return []


def _function(frame: tracemalloc.Frame) -> str:
    return _function_at(frame.filename, frame.lineno)


@functools.cache
def _function_at(filename: str, lineno: int) -> str:
    """The function (or class) a line is in, read from its source."""
    lines = _lines(filename)
    for text in reversed(lines[:lineno]):
        stripped = text.lstrip()
        if stripped.startswith(("def ", "async def ", "class ")):
            return stripped.split("(", 1)[0].split()[-1].rstrip(":")
    return ""


async def measure(searches: int, code: int) -> dict[str, Any]:
    from shared.cache import open_store
    from shared.compose import checked, compose, process_embedding
    from shared.models import SearchKind
    from shared.requests import SearchRequest
    from shared.settings import load_settings

    settings = checked(load_settings())
    store = open_store(settings)
    embedding = process_embedding(settings)
    steps: dict[str, int] = {"rss_mb_after_imports": rss_mb()}
    async with compose(settings, embedding=embedding, store=store) as composed:
        service = composed.service
        started = time.monotonic()
        while True:
            await service.search(SearchRequest("*", limit=1))
            health = composed.health().model_dump(mode="json", by_alias=True)["providers"]["mkdocs"]["sites"]
            if all(site.get("state") == "loaded" and site.get("ranking") == "semantic" for site in health.values()):
                break
            if time.monotonic() - started > 600:
                raise SystemExit("the sites never became ready")
            await asyncio.sleep(0.1)
        await asyncio.sleep(12)  # the word pieces are read once searches pause (`embeddings.PIECES_WAIT`)
        steps["rss_mb_when_ready"] = rss_mb()
        asked = [{"q": case["query"]} for number in (15, 16, 17, 18) for case in _cases(f"blind-set-{number}")]
        for number in range(searches):
            await service.search(SearchRequest(asked[number % len(asked)]["q"], limit=10))
        steps["rss_mb_after_page_searches"] = rss_mb()
        parts = _parts()
        coded = [case for name in ("code-dev-1", "code-set-1") for case in _cases(name)]
        for number in range(code):
            case = coded[number % len(coded)]
            await service.search(
                SearchRequest(case["query"], limit=10, kind=SearchKind.CODE, language=case.get("language"))
            )
        steps["rss_mb_after_code_searches"] = rss_mb()
        after_code = _parts()
    return steps | {"heap_mb_after_page_searches": parts, "heap_mb_after_code_searches": after_code}


def _cases(name: str) -> list[dict[str, Any]]:
    """An eval set's cases (`tools/evals/`), read here: `--tree` may be a checkout whose tools differ."""
    cases: list[dict[str, Any]] = json.loads((REPO / "tools" / "evals" / f"{name}.json").read_text())["cases"]
    return cases


def _parts() -> dict[str, float]:
    gc.collect()
    snapshot = tracemalloc.take_snapshot()
    found: dict[str, int] = {}
    for statistic in snapshot.statistics("traceback"):
        part = part_of(statistic.traceback)
        found[part] = found.get(part, 0) + statistic.size
    total = sum(found.values())
    ordered = dict(sorted(found.items(), key=lambda item: -item[1]))
    return {part: round(size / 2**20, 1) for part, size in ordered.items()} | {"traced": round(total / 2**20, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=2000)
    parser.add_argument("--code", type=int, default=100)
    parser.add_argument("--tree", type=Path, default=REPO, help="the checkout of the service to measure")
    args = parser.parse_args(argv)
    sys.path[:0] = [str(args.tree.resolve()), str(REPO)]  # the service from --tree, the question sets from here
    tracemalloc.start(10)
    print(json.dumps(asyncio.run(measure(args.searches, args.code)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
