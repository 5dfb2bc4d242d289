"""What loading one site's index costs in memory at its peak, per MB and per entry, against bm25s in the same run:
the figures `MaxIndexEntries` and `MaxIndexMegabytes` are chosen from.

    python tools/index_memory.py [--corpus ../shared/corpus/origin]

Each measurement runs in a fresh process (peak resident memory is a high-water mark): the index's bytes are made
and the code imported first, then the process's resident memory is read, then the index is loaded as a cold
instance does (parse, then build the ranker: `parse_index` and `Ranker.build`), or, for the peer, decoded and indexed
by bm25s (tokenized title and text of every entry); the peak's growth over the start is the cost. Synthetic indexes
sit at the bounds: the most entries allowed (short entries) and the most bytes allowed (entries of about 1 KB of
text), both as Zensical `search.json`; with `--corpus`, each real site's `search_index.json` too. Output:
tools/index-memory-latest.txt.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = ("ours", "bm25s")


def synthetic(entries: int, words: int) -> bytes:
    """A Zensical `search.json`: `entries` entries, ten to a page, each `words` words of a 5,000-word vocabulary."""
    items = [
        {
            "location": f"p{number // 10}/" + ("" if number % 10 == 0 else f"#s{number % 10}"),
            "title": f"Section {number} of page {number // 10}",
            "text": " ".join(f"w{(number * 7919 + word * 31) % 5000}" for word in range(words)),
        }
        for number in range(entries)
    ]
    return json.dumps({"config": {}, "items": items}).encode()


def measure(mode: str, source: str) -> dict[str, float]:
    """In this process: the bytes first, then the peak growth of loading them."""
    if source.startswith("synthetic:"):
        entries, words = (int(part) for part in source.split(":")[1:])
        payload = synthetic(entries, words)
    else:
        payload = Path(source).read_bytes()
    if mode == "ours":
        from shared.providers.mkdocs.indexes.index import parse_index
        from shared.providers.mkdocs.indexes.kinds import PathWeights
        from shared.providers.mkdocs.scoring.ranking import Ranker

        start = _resident_mb()  # after the imports: what a warm process already holds is not the index's
        index = parse_index("measured", payload)
        Ranker.build(index, PathWeights())
        count = len(index.entries)
    else:
        import bm25s  # type: ignore[import-untyped]

        start = _resident_mb()
        document = json.loads(payload)
        raw = document.get("docs") or document.get("items") or []
        texts = [f"{entry.get('title', '')} {entry.get('text', '')}" for entry in raw]
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(texts, show_progress=False), show_progress=False)
        count = len(texts)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"mb": len(payload) / 2**20, "entries": count, "grown": peak - start}


def _resident_mb() -> float:
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmRSS:", 1)[1].split()[0]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, help="a directory of published sites (site/search/search_index.json)")
    parser.add_argument("--measure", nargs=2, metavar=("MODE", "SOURCE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return
    from shared.settings import DocumentationSettings

    defaults = DocumentationSettings()
    sources = {
        f"synthetic, {defaults.max_index_entries:,} short entries (MaxIndexEntries)": (
            f"synthetic:{defaults.max_index_entries}:8"
        ),
        f"synthetic, about {defaults.max_index_megabytes:g} MB of 1 KB entries (MaxIndexMegabytes)": (
            f"synthetic:{int(defaults.max_index_megabytes * 1024 * 0.95)}:150"
        ),
    }
    if args.corpus is not None:
        for index in sorted(args.corpus.glob("*/search/search_index.json")):
            sources[f"corpus {index.parent.parent.name}"] = str(index)
    columns = ("MB", 6), ("entries", 8), ("ours MB", 8), ("/MB", 5), ("KB/entry", 8), ("bm25s MB", 9), ("ratio", 6)
    print(f"{'index':64} " + " ".join(f"{name:>{width}}" for name, width in columns))
    for name, source in sources.items():
        ours, peer = (_run(mode, source) for mode in MODES)
        print(
            f"{name:64} {ours['mb']:6.1f} {ours['entries']:8,.0f} {ours['grown']:8.0f} "
            f"{ours['grown'] / ours['mb']:5.1f} {ours['grown'] * 1024 / ours['entries']:8.2f} "
            f"{peer['grown']:9.0f} {ours['grown'] / max(peer['grown'], 1):6.2f}"
        )


def _run(mode: str, source: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--measure", mode, source], capture_output=True, text=True, check=True, cwd=ROOT
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
