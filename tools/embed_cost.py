"""What embedding every site costs at two entry budgets, measured in the same run: the warm-up's time and peak memory.

    python tools/embed_cost.py --corpus ../shared/corpus/origin --tokens 64 128 128+code

Each budget (word pieces embedded per entry, `shared.embedding.MAX_TOKENS`) runs in a fresh process that loads the
bulk session and embeds every site's entries and page outlines as the warm-up does (`SiteVectors.compute`); it
reports the seconds and the process's peak resident memory (VmHWM) before and after. The budgets take turns,
`--rounds` times, and the medians are printed with their ratio to the first budget.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def budget(spec: str) -> tuple[int, int | None]:
    """`64` (entries and outlines at 64 word pieces), `128+code` (and every code block, at `vectors.CODE_WORDS`
    words of its code), `128+code32` (at 32 words of its code)."""
    tokens, _, code = spec.partition("+")
    if not code:
        return int(tokens), None
    if not code.startswith("code"):
        raise argparse.ArgumentTypeError(f"not a budget: {spec}")
    from shared.providers.mkdocs.scoring.vectors import CODE_WORDS

    return int(tokens), int(code[4:] or CODE_WORDS)


def probe(corpus: Path, spec: str, batch: int | None = None) -> dict[str, float]:
    import shared.embedding
    import shared.providers.mkdocs.scoring.vectors as vectors
    from shared.providers.mkdocs.indexes.index import parse_index
    from shared.providers.mkdocs.scoring.vectors import SiteVectors
    from tools.bench import SITES

    tokens, code_words = budget(spec)
    shared.embedding.MAX_TOKENS = tokens
    if batch:
        shared.embedding.BATCH = batch
    if code_words is not None:
        vectors.CODE_WORDS = code_words
    indexes = [parse_index(site, (corpus / path).read_bytes()) for site, path in SITES.items()]
    bulk = shared.embedding.load_bulk()
    before = peak_mb()
    start = time.perf_counter()
    for index in indexes:
        SiteVectors.compute(bulk, index.entries, code=index.code if code_words is not None else ())
    return {"seconds": time.perf_counter() - start, "peak_before_mb": before, "peak_mb": peak_mb()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--tokens", nargs="+", default=["64", "128", "128+code"], help="budgets (`budget`)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch", type=int, help="texts per model run for the last budget (default: the service's)")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    parser.add_argument("--probe-batch", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe:
        print(json.dumps(probe(args.corpus, args.probe, args.probe_batch)))
        return 0
    found: dict[str, list[dict[str, float]]] = {tokens: [] for tokens in args.tokens}
    for _ in range(args.rounds):
        for tokens in args.tokens:
            command = [sys.executable, __file__, "--corpus", str(args.corpus), "--probe", tokens]
            if args.batch and tokens == args.tokens[-1]:
                command += ["--probe-batch", str(args.batch)]
            finished = subprocess.run(command, capture_output=True, text=True, check=True)
            found[tokens].append(json.loads(finished.stdout.strip().splitlines()[-1]))
    first = args.tokens[0]
    base = statistics.median(run["seconds"] for run in found[first])
    base_peak = statistics.median(run["peak_mb"] for run in found[first])
    print(f"embedding every site's entries and outlines (+code: and code blocks), {args.rounds} rounds, medians")
    for tokens, runs in found.items():
        seconds = statistics.median(run["seconds"] for run in runs)
        peak = statistics.median(run["peak_mb"] for run in runs)
        loaded = statistics.median(run["peak_before_mb"] for run in runs)
        print(
            f"  {tokens:>12}: {seconds:6.1f} s (x{seconds / base:.2f} of {first}), peak RSS {peak:6.0f} MB "
            f"(x{peak / base_peak:.2f}; {loaded:.0f} MB before embedding)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
