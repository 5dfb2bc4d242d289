"""What the int8 rows the service scans (`mkdocs.scoring.quantized`) do to search quality: the service's
federated ranking (semantic on) over the sample corpus as served (int8 rows, one scale per row, the query split
into int8 parts), against the same ranking with the float32 rows scanned as they were before (`einsum`), on every
eval set given.

    python tools/quantized.py --corpus ../shared/corpus/origin --eval ../shared/evals/dev-set.json \
        --eval tools/evals/*.json

Prints hit@1 / hit@5 / MRR@10 per set and mode, and how many top-10 lists changed.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any, cast

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402

from shared.providers.mkdocs.indexes.index import parse_index  # noqa: E402
from shared.providers.mkdocs.scoring.federation import Federation  # noqa: E402
from shared.providers.mkdocs.scoring.quantized import QueryParts  # noqa: E402
from shared.providers.mkdocs.scoring.ranking import Ranker  # noqa: E402
from shared.providers.mkdocs.scoring.semantics import semantic_say  # noqa: E402
from shared.providers.mkdocs.scoring.text import analyze_query  # noqa: E402
from tools.bench import KINDS, SITES, VECTORS, embed_all, encoder, qualify  # noqa: E402
from tools.eval import discovery, hit_rank, parse_eval_set  # noqa: E402

MODES = ("float32", "int8 (served)")


@dataclasses.dataclass(frozen=True)
class _FloatRows:
    """The scan before int8: the float32 rows, multiplied by numpy with the query the parts add up to (float to
    about 15 bits: the same query the int8 scan multiplies)."""

    matrix: npt.NDArray[np.float32]

    def similarities(self, query: QueryParts) -> npt.NDArray[np.float32]:
        vector = (query.factors @ query.parts.astype(np.float64)).astype(np.float32)
        products: npt.NDArray[np.float32] = np.einsum("ij,j->i", self.matrix, vector)
        return products


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="the documentation origin directory")
    parser.add_argument(
        "--eval", type=Path, nargs="+", action="extend", required=True, help="eval set JSON files (repeatable)"
    )
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
            ranker.attach(VECTORS[site])
            if mode == "float32" and ranker.semantic is not None:
                rows = cast(Any, _FloatRows(VECTORS[site].matrix.astype(np.float32)))
                ranker.semantic = dataclasses.replace(ranker.semantic, rows=rows)
            rankers.append(ranker)
        federation = Federation.of(rankers)
        for name, cases in sets.items():
            scores: list[dict[str, Any]] = []
            for case in cases:
                wanted = analyze_query(case.query)
                say = semantic_say(case.query, wanted, federation.parameters)
                found = federation.score(wanted, say, 10, vectors[case.query])
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
