"""What a cold instance pays per site to be ready to search: `json.loads` of the site's index (the yardstick),
parsing it, building its ranker, and loading the prebuilt ranker the warm-up stores instead (checked, assembled).

    python tools/artifact_load.py --corpus ../shared/corpus/origin [--repeat 15]

Each figure is the best of `--repeat` runs in this process (the build: of three); the ratio that matters is the
artifact load over `json.loads` of the same index (the issue's bound: 5x). Prints one JSON document.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from shared.providers.mkdocs.indexes.index import parse_index  # noqa: E402
from shared.providers.mkdocs.indexes.kinds import DEFAULT as DEFAULT_RULES  # noqa: E402
from shared.providers.mkdocs.indexes.kinds import PathWeights  # noqa: E402
from shared.providers.mkdocs.lifecycle.loading import RANKING_CODE  # noqa: E402
from shared.providers.mkdocs.scoring import artifact  # noqa: E402
from shared.providers.mkdocs.scoring.ranking import Ranker  # noqa: E402
from tools.bench import SITES  # noqa: E402


def best_ms(work: Callable[[], Any], repeat: int) -> float:
    """The fastest of `repeat` runs, in milliseconds, each after a full collection (the collector stays on)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return round(min(times) * 1000, 2)


def measure(site: str, path: Path, weights: PathWeights, repeat: int) -> dict[str, Any]:
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    parsed = parse_index(site, raw)
    ranker = Ranker.build(parsed, weights)
    payload = artifact.dumps(ranker, parsed, index_digest=digest, code=RANKING_CODE)
    json_ms = best_ms(lambda: json.loads(raw), repeat)
    load_ms = best_ms(
        lambda: artifact.loads(payload, site=site, index_digest=digest, code=RANKING_CODE, kinds=weights), repeat
    )
    return {
        "site": site,
        "entries": len(parsed.entries),
        "index_bytes": len(raw),
        "artifact_bytes": len(payload),
        "json_loads_ms": json_ms,
        "parse_ms": best_ms(lambda: parse_index(site, raw), repeat),
        "build_ms": best_ms(lambda: Ranker.build(parse_index(site, raw), weights), 3),
        "artifact_load_ms": load_ms,
        "artifact_over_json_loads": round(load_ms / json_ms, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="the origin's directory (../shared/corpus/origin)")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    weights = PathWeights.parse(DEFAULT_RULES)
    sites = [measure(site, args.corpus / path, weights, args.repeat) for site, path in SITES.items()]
    print(
        json.dumps(
            {
                "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "bound": "artifact load within 5x json.loads",
                "sites": sites,
                "worst_ratio": max(site["artifact_over_json_loads"] for site in sites),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
