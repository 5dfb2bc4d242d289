"""The relevance floor against questions the docs answer and questions they do not, by the question's length.

    python tools/run_local.py --origin-dir ../shared/corpus/origin     # with Forge__Documentation__Search__MinScore=0
    python tools/floor_eval.py --base-url http://127.0.0.1:7071 --eval ../shared/evals/dev-set.json \
        tools/evals/holdout-set.json tools/evals/blind-set.json tools/evals/blind-set-{2..18}.json \
        --off-topic tools/evals/off-topic-long.json tools/evals/off-topic-long-2.json

Asks a running service, started with no floor (`Search__MinScore=0`), for each question's first ten results; then
applies, for each `--powers` value p, the floor `MinScore * min(1, balance_words / distinct terms) ** p` the service
holds an answer ranked by terms alone to (`semantics.relevance_floor`; p 0 is an absolute floor). Start the service
with `Search__Semantic=false` to see the floor the service applies to such answers; with meaning, the service keeps
the floor as it is (p 0). Prints, per p: answerable questions answered with nothing, and acceptable top-5 hits the
floor drops (by distinct terms); off-topic questions answered with anything (by the set's `kind`, and for the ten
short questions of `tools/bench.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from shared.providers.mkdocs.scoring.parameters import DEFAULT  # noqa: E402
from shared.providers.mkdocs.scoring.semantics import relevance_floor  # noqa: E402
from shared.providers.mkdocs.scoring.text import Query, analyze_query  # noqa: E402
from tools.bench import OFF_TOPIC  # noqa: E402
from tools.eval import HttpBackend, hit_rank, page_of, parse_eval_set  # noqa: E402

BUCKETS = ((8, "<=8"), (16, "9-16"), (32, "17-32"), (10**9, ">32"))


@dataclass
class Asked:
    kind: str
    """`answerable`, or the off-topic set's kind (`short-far` for `tools/bench.py`'s)."""
    wanted: Query
    scores: list[float]
    rank: int | None
    """1-based rank of the first acceptable result, for an answerable question."""


def bucket(terms: int) -> str:
    return next(name for most, name in BUCKETS if terms <= most)


async def asked(backend: HttpBackend, evals: list[Path], off_topic: list[Path]) -> list[Asked]:
    questions: list[tuple[str, str, Sequence[str]]] = [
        (case.query, "answerable", case.acceptable) for path in evals for case in parse_eval_set(path.read_text()).cases
    ]
    questions += [(query, "short-far", ()) for query in OFF_TOPIC]
    for path in off_topic:
        questions += [(item["query"], item["kind"], ()) for item in json.loads(path.read_text())["questions"]]
    found = []
    for query, kind, acceptable in questions:
        _, body, error = await backend.search(query, 10)
        if error is not None or body is None:
            raise SystemExit(f"a search failed: {error}")
        results = body["results"]
        rank = hit_rank([result["location"] for result in results], acceptable, key=page_of) if acceptable else None
        found.append(Asked(kind, analyze_query(query), [result["score"] for result in results], rank))
    return found


def report(found: list[Asked], floor: float, power: float) -> list[str]:
    empty: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    answered: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    parameters = replace(DEFAULT, floor_power=power)
    for question in found:
        least = relevance_floor(floor, question.wanted, parameters, by_meaning=False)
        kept = any(score >= least for score in question.scores)
        if question.kind == "answerable":
            row = empty[bucket(len(question.wanted.words))]
            row[0] += 1
            row[1] += not kept
            if question.rank is not None and question.rank <= 5:
                row[2] += 1
                row[3] += question.scores[question.rank - 1] < least
        else:
            answered[question.kind][0] += 1
            answered[question.kind][1] += kept
    lines = [f"power {power}:"]
    for _, name in BUCKETS:
        if name in empty:
            total, nothing, hits, dropped = empty[name]
            said = f"{nothing:2d} answered with nothing, {dropped:2d} of {hits} top-5 hits dropped"
            lines.append(f"  {name:>5} terms: {total:4d} answerable, {said}")
    lines.append(
        "  off-topic answered: "
        + ", ".join(f"{kind} {kept}/{total}" for kind, (total, kept) in sorted(answered.items()))
    )
    return lines


async def measured(base_url: str, evals: list[Path], off_topic: list[Path]) -> tuple[list[Asked], dict[str, Any]]:
    backend = HttpBackend(base_url)
    try:
        health = (await backend.health())["providers"]["mkdocs"]
        return await asked(backend, evals, off_topic), health
    finally:
        await backend.aclose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="a service started with Search__MinScore=0")
    parser.add_argument("--eval", nargs="+", type=Path, required=True, help="answerable question sets")
    parser.add_argument(
        "--off-topic", nargs="*", type=Path, default=[], help="off-topic sets ({questions: [{query, kind}]})"
    )
    parser.add_argument(
        "--floor", type=float, default=0.015, help="the Search__MinScore to apply (default: the default)"
    )
    parser.add_argument("--powers", type=float, nargs="+", default=[0.0, 0.25, 0.5, 1.0])
    args = parser.parse_args(argv)
    found, health = asyncio.run(measured(args.base_url, args.eval, args.off_topic))
    print(f"# floor {args.floor}; semantic ranking: {health.get('semantic')}; {len(found)} questions")
    for power in args.powers:
        print("\n".join(report(found, args.floor, power)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
