"""Search latency in process: the service composed as `serve` composes it, over the storage and origin its app
settings name (the environment), asked directly, no HTTP. `tools/scale.py` runs it in a fresh process per size.

    python tools/inprocess.py [--rounds 10]

Waits until every site is loaded and, with semantic matching on, ranks by meaning; then asks the load queries
(`tools/load.QUERIES`) `--rounds` times, one at a time, after one unmeasured round. Prints JSON: the search p50
and, with semantic matching on, the query encoder's own p50 over the same queries (its run alone, as a search
begins it) and what the search adds to it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from shared.cache import open_store  # noqa: E402
from shared.compose import checked, compose, process_embedding  # noqa: E402
from shared.requests import SearchRequest  # noqa: E402
from shared.settings import load_settings  # noqa: E402
from tools.load import QUERIES  # noqa: E402

READY_SECONDS = 600


async def measure(rounds: int) -> dict[str, Any]:
    settings = checked(load_settings())
    store = open_store(settings)
    embedding = process_embedding(settings)
    try:
        async with compose(settings, embedding=embedding, store=store) as composed:
            service = composed.service
            started = time.monotonic()
            while True:  # every site loaded and, with semantic matching, ranking by meaning
                await service.search(SearchRequest("*", limit=1))
                health = composed.health().model_dump(mode="json", by_alias=True)
                sites = health["providers"]["mkdocs"]["sites"]
                if (
                    sites
                    and all(site.get("state") == "loaded" for site in sites.values())
                    and (embedding is None or all(site.get("ranking") == "semantic" for site in sites.values()))
                ):
                    break
                if time.monotonic() - started > READY_SECONDS:
                    raise SystemExit("the sites never became ready")
                await asyncio.sleep(0.1)
            for query in QUERIES:
                await service.search(SearchRequest(query, limit=10))
            searches = []
            for _ in range(rounds):
                for query in QUERIES:
                    begun = time.perf_counter()
                    await service.search(SearchRequest(query, limit=10))
                    searches.append(time.perf_counter() - begun)
            report: dict[str, Any] = {"searches": len(searches), "search_p50_ms": _ms(statistics.median(searches))}
            if embedding is not None:
                encodes = []
                for _ in range(rounds):
                    for query in QUERIES:
                        begun = time.perf_counter()
                        await embedding.encode_query(query)
                        encodes.append(time.perf_counter() - begun)
                encoder = statistics.median(encodes)
                report["encoder_p50_ms"] = _ms(encoder)
                report["search_over_encoder_ms"] = _ms(statistics.median(searches) - encoder)
            return report
    finally:
        await store.aclose()
        if embedding is not None:
            embedding.close()


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="times the load queries are asked, one at a time")
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(measure(args.rounds))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
