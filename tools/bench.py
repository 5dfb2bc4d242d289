"""Benchmark the MkDocs ranker against two peers over the same index entries, in one run, and print ratios.

    python tools/bench.py --corpus ../shared/corpus/origin --eval ../shared/evals/dev-set.json \
        --eval tools/evals/holdout-set.json --eval tools/evals/blind-set.json [--path-weights JSON]

Ours, three times: `ranker` is the lexical ranker alone (`Search__Semantic=false`), `ranker+semantic` the
service's default (the lexical score plus MiniLM entry embeddings, shared/providers/mkdocs/scoring/vectors.py; its
latency includes embedding the query), both with the page-kind rules (`--path-weights`, default: the service's
default), and `semantic, no kinds` the default without them (`Search__PathWeights=[]`, the spec's ranking).
Embedding every entry (what the service does once per index version, off the request path) is timed once and
its vectors shared by both semantic systems. Peers, built over exactly the entries the ranker sees:

- lunr.py, the algorithm MkDocs Material's search runs: title boost 1000 as Material configures it, lunr's
  default English pipeline, every query word an optional term;
- bm25s with Snowball English stemming (PyStemmer) and English stop words, one document per entry.

Every system answers per site; results are merged across sites by score and, like the service, kept to one
result per page at the page's location (a peer's best entry stands for its page). Locations are qualified the
way the service returns them: bare on the default site, `{site}/{path}` elsewhere, the site root as the bare
site name. Quality uses the harness's own scoring (tools/eval.py), per set and per failure mode; latency is
warm, in-process, per query over all sites including the merge, in passes that time every system in turn (so the
machine's slow spells fall on all alike). Resident memory is measured per system in a fresh process that builds
(or, for ours, loads the stored vectors like the service) and answers every query: VmRSS after, less the same
process before building, and the whole process's VmHWM.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from shared.embedding import MINILM_ID, MiniLM, load_bulk  # noqa: E402
from shared.providers.mkdocs.indexes.index import SiteIndex, parse_index  # noqa: E402
from shared.providers.mkdocs.indexes.kinds import DEFAULT as DEFAULT_KINDS  # noqa: E402
from shared.providers.mkdocs.indexes.kinds import PathWeights  # noqa: E402
from shared.providers.mkdocs.scoring.federation import Federation  # noqa: E402
from shared.providers.mkdocs.scoring.ranking import Ranker  # noqa: E402
from shared.providers.mkdocs.scoring.semantics import semantic_say  # noqa: E402
from shared.providers.mkdocs.scoring.text import analyze_query  # noqa: E402
from shared.providers.mkdocs.scoring.vectors import SiteVectors  # noqa: E402
from tools.eval import Case, discovery, hit_rank, page_of, parse_eval_set  # noqa: E402

SITES = {
    "forge": "forge/search/search_index.json",
    "cloud-foundations": "search/search_index.json",  # root-published, as in the corpus README
    "iac-azure-modules": "iac-azure-modules/search/search_index.json",
    "iac-okta-modules": "iac-okta-modules/search/search_index.json",
}
DEFAULT_SITE = "forge"
LIMIT = 10

OFF_TOPIC = [
    "bake sourdough bread with a starter",
    "best hiking trails in the swiss alps",
    "tune a guitar to drop d",
    "tax deductions for freelancers",
    "how to train a puppy to sit",
    "marathon training plan for beginners",
    "replace a bicycle chain",
    "photosynthesis in plant leaves",
    "french revolution causes",
    "knit a wool scarf pattern",
]
"""Questions the corpus does not cover, for the relevance floor table."""

Search = Callable[[str], list[tuple[float, str]]]
"""A site's search: (score, location within the site) best first, one per page."""


def qualify(site: str, location: str) -> str:
    if site == DEFAULT_SITE:
        return location
    return site if not location.strip("/") else f"{site}/{location}"


def one_per_page(hits: list[tuple[float, str]]) -> list[tuple[float, str]]:
    seen: dict[str, float] = {}
    for score, location in hits:
        page = location.partition("#")[0]
        seen.setdefault(page, score)
    return sorted(((score, page) for page, score in seen.items()), reverse=True)


KINDS = [PathWeights.parse(DEFAULT_KINDS)]
"""The page-kind rules ours rank with (`--path-weights`)."""
VECTORS: dict[str, SiteVectors] = {}
"""Each site's entry vectors, computed once (`embed_all`) and shared by the semantic systems."""
_ENCODER: list[MiniLM] = []
_QUERY_VECTOR: dict[str, object] = {}
"""The last query's embedding: every site is asked the same query in turn, and the service embeds it once."""


def encoder() -> MiniLM:
    if not _ENCODER:
        _ENCODER.append(MiniLM.load())
    return _ENCODER[0]


def embed_all(indexes: dict[str, SiteIndex]) -> dict[str, float]:
    """Embed every site's entries as the service does (on its bulk session, `load_bulk`); seconds per site, the
    bulk session's load counted in the first."""
    seconds = {}
    start = time.perf_counter()
    bulk = load_bulk()
    for site, index in indexes.items():
        VECTORS[site] = SiteVectors.compute(bulk, index.entries, code=index.code)
        seconds[site] = time.perf_counter() - start
        start = time.perf_counter()
    return seconds


def build_ours(index: SiteIndex) -> Ranker:
    return Ranker.build(index, KINDS[0])


def _semantic(index: SiteIndex, kinds: PathWeights) -> Ranker:
    encoder()
    ranker = Ranker.build(index, kinds)
    ranker.attach(VECTORS[index.site])
    return ranker


def build_semantic(index: SiteIndex) -> Ranker:
    return _semantic(index, KINDS[0])


def build_semantic_spec(index: SiteIndex) -> Ranker:
    return _semantic(index, PathWeights())


def query_vector(query: str) -> Any:
    """The query's embedding and word pieces, computed once for all the semantic systems asking in a row (one run, as
    the service embeds a query)."""
    vector = _QUERY_VECTOR.get(query)
    if vector is None:
        _QUERY_VECTOR.clear()
        vector = _QUERY_VECTOR[query] = encoder().encode_query_pieces(query)
    return vector


def federated(rankers: dict[str, Ranker], semantic: bool) -> dict[str, Search]:
    """Ours as the service searches: every site scored in one pass (`Federation`), locations already qualified."""
    sites = list(rankers)
    federation = Federation.of(list(rankers.values()))

    def search(query: str) -> list[tuple[float, str]]:
        wanted = analyze_query(query)
        vector, pieces = query_vector(query) if semantic else (None, None)
        say = semantic_say(query, wanted, federation.parameters)
        found = federation.score(wanted, say, LIMIT, vector, pieces=pieces)
        return [(scored.scores[n], qualify(sites[site], scored.hit(n).entry.location)) for site, scored, n in found]

    return {FEDERATED: search}


def encoder_alone() -> dict[str, Search]:
    """Not a system: the query encoder's own time, for what ranking adds to it."""

    def search(query: str) -> list[tuple[float, str]]:
        encoder().encode_query_pieces(query)
        return []

    return {FEDERATED: search}


def build_bm25s(index: SiteIndex) -> Search:
    import bm25s  # type: ignore[import-untyped]
    import Stemmer  # type: ignore[import-not-found]

    stemmer = Stemmer.Stemmer("english")
    corpus = [f"{entry.title} {entry.text}" for entry in index.entries]
    model = bm25s.BM25()
    model.index(bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    depth = min(len(corpus), LIMIT * 10)  # entries, so that one-per-page still fills the limit

    def search(query: str) -> list[tuple[float, str]]:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.ids[0]:
            return []
        docs, scores = model.retrieve(tokens, k=depth, show_progress=False)
        hits = [(float(s), index.entries[int(d)].location) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]
        return one_per_page(hits)[:LIMIT]

    return search


def build_lunr(index: SiteIndex) -> Search:
    from lunr import lunr  # type: ignore[import-untyped]

    documents = [{"id": str(n), "title": e.title, "text": e.text} for n, e in enumerate(index.entries)]
    idx = lunr(ref="id", fields=[{"field_name": "title", "boost": 1000}, "text"], documents=documents)

    def search(query: str) -> list[tuple[float, str]]:
        lunr_query = idx.create_query()
        for word in re.split(r"[\s\-]+", query.lower()):
            word = re.sub(r"[^\w.]", "", word).strip(".")
            if word:
                lunr_query.term(word)
        hits = [(r["score"], index.entries[int(r["ref"])].location) for r in idx.query(lunr_query)]
        return one_per_page(hits)[:LIMIT]

    return search


SYSTEMS: dict[str, Callable[[SiteIndex], Any]] = {
    "ranker": build_ours,
    "ranker+semantic": build_semantic,
    "semantic, no kinds": build_semantic_spec,
    "lunr.py": build_lunr,
    "bm25s": build_bm25s,
}
OURS = ("ranker", "ranker+semantic", "semantic, no kinds")
ENCODER = "query encoder alone"


FEDERATED = "*"
"""The one search of a federated system (`federated`), whose locations are already qualified."""


def merged(searches: dict[str, Search], query: str) -> list[tuple[float, str]]:
    hits = [
        (score, loc if site == FEDERATED else qualify(site, loc))
        for site, search in searches.items()
        for score, loc in search(query)
    ]
    return sorted(hits, key=lambda hit: hit[0], reverse=True)[:LIMIT]


def scored(searches: dict[str, Search], cases: list[Case]) -> list[dict[str, float]]:
    rows = []
    for case in cases:
        returned = [location for _, location in merged(searches, case.query)]
        rows.append(discovery(hit_rank(returned, case.acceptable)))
        rows[-1]["page"] = discovery(hit_rank(returned, case.acceptable, page_of))["hitAt1"]
    return rows


def quality(searches: dict[str, Search], cases: list[Case]) -> dict[str, float]:
    return summary(scored(searches, cases))


def summary(rows: list[dict[str, float]]) -> dict[str, float]:
    count = len(rows)
    return {
        "hit@1": sum(r["hitAt1"] for r in rows) / count,
        "hit@5": sum(r["hitAt5"] for r in rows) / count,
        "MRR@10": sum(r["reciprocalRankAt10"] for r in rows) / count,
        "nDCG@5": sum(r["ndcgAt5"] for r in rows) / count,
        "page hit@1": sum(r["page"] for r in rows) / count,
    }


def latencies(systems: dict[str, dict[str, Search]], queries: list[str], repeat: int) -> dict[str, tuple[float, float]]:
    """Each system's p50 and p95 milliseconds per query, timed in interleaved passes: every pass times each system
    over all the queries in turn, so a slow spell of the machine (a shared VM's speed varies by a third from one
    minute to the next) falls on all of them alike and their ratios hold even when the absolute figures move.
    Whole passes, not query by query: one system's allocations would evict another's caches between queries
    (lunr.py's made every other system a third slower)."""
    for searches in systems.values():
        for query in queries:
            merged(searches, query)  # warm caches before timing
    times: dict[str, list[float]] = {name: [] for name in systems}
    for _ in range(repeat):
        for name, searches in systems.items():
            for query in queries:
                start = time.perf_counter()
                merged(searches, query)
                times[name].append((time.perf_counter() - start) * 1000)
    return {name: _percentiles(found) for name, found in times.items()}


def _percentiles(times: list[float]) -> tuple[float, float]:
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))]


def build_all(indexes: dict[str, SiteIndex]) -> tuple[dict[str, dict[str, Search]], dict[str, dict[str, float]]]:
    systems: dict[str, dict[str, Search]] = {}
    build_ms: dict[str, dict[str, float]] = {}
    for name, build in SYSTEMS.items():
        built: dict[str, Any] = {}
        build_ms[name] = {}
        for site, index in indexes.items():
            start = time.perf_counter()
            built[site] = build(index)
            build_ms[name][site] = (time.perf_counter() - start) * 1000
        systems[name] = federated(built, name != "ranker") if name in OURS else built
    return systems, build_ms


def floor_table(name: str, ours: dict[str, Search], cases: list[Case], floor: float) -> list[str]:
    """How the relevance floor treats off-topic queries, and what it would cost on the eval sets."""
    lines = [f"{name}: relevance floor (min_score default {floor:g}):"]
    emptied = 0
    for query in OFF_TOPIC:
        hits = merged(ours, query)
        top = hits[0][0] if hits else 0.0
        kept = sum(1 for score, _ in hits if score >= floor)
        emptied += kept == 0
        lines.append(f"  {top:6.3f}  {kept:2d} kept  {query}")
    accepted = []
    for case in cases:
        hits = merged(ours, case.query)
        rank = hit_rank([location for _, location in hits], case.acceptable)
        if rank is not None and rank <= 5:
            accepted.append(hits[rank - 1][0])
    lost = sum(1 for score in accepted if score < floor)
    lines.append(f"  off-topic queries emptied: {emptied}/{len(OFF_TOPIC)}")
    lines.append(f"  lowest score of an acceptable top-5 hit on the eval sets: {min(accepted, default=0):.3f}")
    lines.append(f"  eval-set hits the floor drops: {lost}")
    return lines


def ratio(ours: float, peer: float) -> str:
    return f"{ours / peer:.2f}" if peer else "inf"


def row(label: str, values: list[str]) -> str:
    return f"{label:<26}" + "".join(f"{value:>19}" for value in values)


def mode_of(case: Case) -> str:
    """A case's failure mode without its note: `cross-site (iac-okta-modules)` is `cross-site`."""
    return case.failure_mode.split(" ", 1)[0] or "unlabelled"


def quality_table(systems: dict[str, dict[str, Search]], label: str, cases: list[Case]) -> list[str]:
    """One eval set's quality for every system, each of ours against each peer, and hit@1 / MRR@10 per failure
    mode."""
    rows = {name: scored(searches, cases) for name, searches in systems.items()}
    metrics = {name: summary(found) for name, found in rows.items()}
    names = list(systems)
    lines = [f"{label}: {len(cases)} cases", row("metric", names)]
    for metric in metrics[names[0]]:
        lines.append(row(metric, [f"{metrics[name][metric]:.3f}" for name in names]))
    modes: dict[str, list[int]] = {}
    for number, case in enumerate(cases):
        modes.setdefault(mode_of(case), []).append(number)
    lines.append(row("by failure mode", [f"{name[:11]} h1/MRR" for name in names]))
    for mode, numbers in sorted(modes.items(), key=lambda item: -len(item[1])):
        cells = []
        for name in names:
            subset = summary([rows[name][n] for n in numbers])
            cells.append(f"{subset['hit@1']:.2f}/{subset['MRR@10']:.2f}")
        lines.append(row(f"  {mode[:20]} ({len(numbers)})", cells))
    for ours in OURS:
        for peer in (name for name in names if name not in OURS):
            ratios = ", ".join(
                f"{metric} x{metrics[ours][metric] / metrics[peer][metric]:.2f}"
                if metrics[peer][metric]
                else f"{metric} inf"
                for metric in ("hit@1", "hit@5", "MRR@10", "nDCG@5")
            )
            lines.append(f"  {ours} vs {peer}: {ratios}")
    return [*lines, ""]


def report(
    indexes: dict[str, SiteIndex],
    systems: dict[str, dict[str, Search]],
    build_ms: dict[str, dict[str, float]],
    sets: dict[str, list[Case]],
    repeat: int,
) -> list[str]:
    names = list(systems)
    lines = [
        f"{len(indexes)} sites, limit {LIMIT}, results merged across sites; page-kind rules: {len(KINDS[0].rules)}",
        "",
    ]
    for label, cases in sets.items():
        lines += quality_table(systems, label, cases)
    queries = [case.query for cases in sets.values() for case in cases]
    timings = latencies(systems | {ENCODER: encoder_alone()}, queries, repeat)
    lines.append(
        f"latency over {len(queries)} queries x {repeat}, warm, in-process, all sites and the merge, "
        "each pass timing every system in turn"
    )
    lines.append(row("", names))
    lines.append(row("p50 ms", [f"{timings[name][0]:.2f}" for name in names]))
    lines.append(row("p95 ms", [f"{timings[name][1]:.2f}" for name in names]))
    for site in indexes:
        lines.append(row(f"build {site}", [f"{build_ms[name][site]:.0f}ms" for name in names]))
    for ours in OURS[:2]:
        for peer in (name for name in names if name not in OURS):
            lines.append(f"  {ours} p50 latency {ratio(timings[ours][0], timings[peer][0])}x {peer}'s")
    alone = timings[ENCODER][0]
    lines.append(
        f"  the query encoder alone: p50 {alone:.2f} ms; ranker+semantic adds "
        f"{timings['ranker+semantic'][0] - alone:.2f} ms to it (embedding, federated ranking of every site, merge)"
    )
    return lines


MEMORY_SYSTEMS = ("ranker", "ranker+semantic", "lunr.py", "bm25s")


def memory_mb(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def resident(corpus: Path, vectors: Path, queries: list[str]) -> dict[str, dict[str, float]]:
    """Each system's resident memory, each in a fresh process (`--memory-probe`), side by side."""
    found = {}
    for name in MEMORY_SYSTEMS:
        command = [sys.executable, __file__, "--corpus", str(corpus), "--memory-probe", name, "--vectors", str(vectors)]
        done = subprocess.run(command, input=json.dumps(queries), capture_output=True, text=True, check=True)
        found[name] = json.loads(done.stdout)
    return found


def probe(corpus: Path, name: str, vectors: Path, queries: list[str]) -> dict[str, float]:
    """In a fresh process: build one system over the corpus, answer every query, and say what it holds.

    Ours load the stored vectors (as a warm service instance does) and load the model for queries; the peers
    import their library when they build, so their import is counted like ours.
    """
    indexes = {site: parse_index(site, (corpus / path).read_bytes()) for site, path in SITES.items()}
    before = memory_mb()
    if name in ("ranker+semantic", "semantic, no kinds"):
        for site, payload in json.loads(vectors.read_text()).items():
            loaded = SiteVectors.loads(base64.b64decode(payload), MINILM_ID)
            assert loaded is not None, "stored vectors of another model"
            VECTORS[site] = loaded
    built: dict[str, Any] = {site: SYSTEMS[name](index) for site, index in indexes.items()}
    VECTORS.clear()  # attached: a serving instance keeps only what the rankers hold
    searches = federated(built, name != "ranker") if name in OURS else built
    for query in queries:
        merged(searches, query)
    return {"rss_mb": memory_mb() - before, "process_peak_mb": memory_mb("VmHWM")}


def memory_lines(found: dict[str, dict[str, float]]) -> list[str]:
    names = list(found)
    lines = ["resident memory, each system in a fresh process: its indexes (and model) after answering every query"]
    lines.append(row("", names))
    lines.append(row("MB over the process", [f"{found[name]['rss_mb']:.0f}" for name in names]))
    lines.append(row("process peak MB", [f"{found[name]['process_peak_mb']:.0f}" for name in names]))
    for ours in ("ranker", "ranker+semantic"):
        for peer in ("lunr.py", "bm25s"):
            mine, theirs = found[ours]["rss_mb"], found[peer]["rss_mb"]
            lines.append(f"  {ours} holds {ratio(mine, theirs)}x {peer}'s memory")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="the documentation origin directory")
    parser.add_argument(
        "--eval", type=Path, nargs="+", action="extend", default=[], help="eval set JSON files (repeatable)"
    )
    parser.add_argument("--repeat", type=int, default=20, help="timed passes over the eval queries")
    parser.add_argument("--path-weights", default=DEFAULT_KINDS, help="page-kind rules of ours (JSON)")
    parser.add_argument("--memory-probe", help=argparse.SUPPRESS)
    parser.add_argument("--vectors", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    KINDS[0] = PathWeights.parse(args.path_weights)
    if args.memory_probe:
        print(json.dumps(probe(args.corpus, args.memory_probe, args.vectors, json.loads(sys.stdin.read()))))
        return 0
    if not args.eval:
        parser.error("at least one --eval is required")
    from shared.settings import SearchSettings

    indexes = {site: parse_index(site, (args.corpus / path).read_bytes()) for site, path in SITES.items()}
    sets = {path.name: parse_eval_set(path.read_text(encoding="utf-8")).cases for path in args.eval}
    embedded = embed_all(indexes)
    systems, build_ms = build_all(indexes)
    lines = report(indexes, systems, build_ms, sets, args.repeat)
    entries = sum(len(index.entries) for index in indexes.values())
    outlines = sum(len(VECTORS[site].keys) for site in indexes) - entries
    lines += [
        "",
        f"embedding the corpus ({entries} entries and {outlines} page outlines, {os.cpu_count()} cores, "
        f"model {MINILM_ID}): "
        f"{sum(embedded.values()):.1f} s ({', '.join(f'{site} {sec:.1f} s' for site, sec in embedded.items())})",
        "",
    ]
    queries = [case.query for cases in sets.values() for case in cases]
    with tempfile.TemporaryDirectory() as scratch:
        stored = Path(scratch) / "vectors.json"
        payloads = {  # complete, as the warm-up stores them: with their hubness and int8 rows
            site: base64.b64encode(VECTORS[site].dumps(MINILM_ID, len(indexes[site].entries))).decode()
            for site in indexes
        }
        stored.write_text(json.dumps(payloads))
        lines += memory_lines(resident(args.corpus, stored, queries))
    all_cases = [case for cases in sets.values() for case in cases]
    for name in OURS[:2]:
        lines += ["", *floor_table(name, systems[name], all_cases, SearchSettings().min_score)]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
