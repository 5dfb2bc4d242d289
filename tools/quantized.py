"""What holding the vectors as int8 would do to search quality, before anyone builds it: the service's federated
ranking (semantic on) over the sample corpus with its float32 rows, with the rows rounded to int8 (one scale per
row, symmetric), and with the query rounded to uint8 too (asymmetric, as ONNX Runtime's `DynamicQuantizeMatMul`
quantizes its input), on every eval set given.

    python tools/quantized.py --corpus ../shared/corpus/origin --eval ../shared/evals/dev-set.json \
        --eval tools/evals/*.json

The rounding is simulated in numpy (the rows are rounded and scaled back to float32), so only the numbers change,
not the kernel. Prints hit@1 / hit@5 / MRR@10 per set and mode, and how many top-10 lists changed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402

from shared.providers.mkdocs.federation import Federation  # noqa: E402
from shared.providers.mkdocs.index import parse_index  # noqa: E402
from shared.providers.mkdocs.ranking import Ranker, semantic_say  # noqa: E402
from shared.providers.mkdocs.text import analyze_query  # noqa: E402
from shared.providers.mkdocs.vectors import SiteVectors  # noqa: E402
from tools.bench import KINDS, SITES, VECTORS, embed_all, encoder, qualify  # noqa: E402
from tools.eval import discovery, hit_rank, parse_eval_set  # noqa: E402

MODES = ("float32", "int8 rows", "int8 rows, uint8 query")


def rows(matrix: npt.NDArray[np.float32], mode: str) -> npt.NDArray[np.float32]:
    if mode == "float32":
        return matrix
    scale = np.abs(matrix).max(axis=1, keepdims=True) / 127
    scale[scale == 0] = 1.0
    rounded: npt.NDArray[np.float32] = (np.round(matrix / scale) * scale).astype(np.float32)
    return rounded


def query(vector: npt.NDArray[np.float32], mode: str) -> npt.NDArray[np.float32]:
    if mode != "int8 rows, uint8 query":
        return vector
    low, high = min(float(vector.min()), 0.0), max(float(vector.max()), 0.0)
    step = (high - low) / 255 or 1.0
    zero = round(-low / step)
    rounded: npt.NDArray[np.float32] = ((np.clip(np.round(vector / step) + zero, 0, 255) - zero) * step).astype(
        np.float32
    )
    return rounded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="the documentation origin directory")
    parser.add_argument("--eval", type=Path, action="append", required=True, help="eval set JSON (repeatable)")
    args = parser.parse_args(argv)
    indexes = {site: parse_index(site, (args.corpus / path).read_bytes()) for site, path in SITES.items()}
    sets = {path.name: parse_eval_set(path.read_text(encoding="utf-8")).cases for path in args.eval}
    embed_all(indexes)
    vectors = {case.query: encoder().encode([case.query], query=True)[0] for cases in sets.values() for case in cases}
    sites = list(indexes)
    figures: dict[tuple[str, str], tuple[float, float, float]] = {}
    returned: dict[tuple[str, str, str], list[str]] = {}
    for mode in MODES:
        rankers = []
        for site in sites:
            ranker = Ranker.build(indexes[site], KINDS[0])
            held = VECTORS[site]
            ranker.attach(SiteVectors(rows(held.matrix, mode), held.keys, held.hubness))
            rankers.append(ranker)
        federation = Federation.of(rankers)
        for name, cases in sets.items():
            scores: list[dict[str, Any]] = []
            for case in cases:
                wanted = analyze_query(case.query)
                say = semantic_say(case.query, wanted, federation.parameters)
                found = federation.score(wanted, say, 10, query(vectors[case.query], mode))
                top = [qualify(sites[site], scored.hit(number).entry.location) for site, scored, number in found]
                returned[(mode, name, case.id)] = top
                scores.append(discovery(hit_rank(top, case.acceptable)))
            count = len(scores)
            figures[(mode, name)] = (
                sum(score["hitAt1"] for score in scores) / count,
                sum(score["hitAt5"] for score in scores) / count,
                sum(score["reciprocalRankAt10"] for score in scores) / count,
            )
    print("| Set | " + " | ".join(MODES) + " |")
    print("|---|" + "---|" * len(MODES))
    for name in sets:
        cells = [" / ".join(f"{value:.3f}" for value in figures[(mode, name)]) for mode in MODES]
        print(f"| {name} ({len(sets[name])}) | " + " | ".join(cells) + " |")
    print("\n(hit@1 / hit@5 / MRR@10; federated ranking of all sites, semantic on, default rules)")
    for mode in MODES[1:]:
        changed = sum(returned[(mode, *key[1:])] != top for key, top in returned.items() if key[0] == MODES[0])
        total = sum(1 for key in returned if key[0] == MODES[0])
        print(f"{mode}: {changed} of {total} top-10 lists differ from float32's")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
