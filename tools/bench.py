"""Benchmark the MkDocs ranker against two peers over the same index entries, in one run, and print ratios.

    python tools/bench.py --corpus ../shared/corpus/origin --eval ../shared/evals/dev-set.json \
        --eval tools/evals/holdout-set.json

Ours, twice: `ranker` is the lexical ranker alone (`Search__Semantic=false`), `ranker+semantic` the service's
default (the lexical score plus MiniLM entry embeddings, shared/providers/mkdocs/vectors.py; its build time includes
embedding every entry, which the service does once per index version off the request path, and its latency
includes embedding the query). Peers, built over exactly the entries the ranker sees:

- lunr.py, the algorithm MkDocs Material's search runs: title boost 1000 as Material configures it, lunr's
  default English pipeline, every query word an optional term;
- bm25s with Snowball English stemming (PyStemmer) and English stop words, one document per entry.

Every system answers per site; results are merged across sites by score and, like the service, kept to one
result per page at the page's location (a peer's best entry stands for its page). Locations are qualified the
way the service returns them: bare on the default site, `{site}/{path}` elsewhere, the site root as the bare
site name. Quality uses the harness's own scoring (tools/eval.py); latency is warm, in-process, per query over
all sites including the merge.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from shared.embedding import MiniLM  # noqa: E402
from shared.providers.mkdocs.index import SiteIndex, parse_index  # noqa: E402
from shared.providers.mkdocs.ranking import Ranker  # noqa: E402
from shared.providers.mkdocs.vectors import SiteVectors  # noqa: E402
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


def build_ours(index: SiteIndex) -> Search:
    ranker = Ranker.build(index)
    return lambda query: [(hit.score, hit.entry.location) for hit in ranker.search(query, LIMIT)]


_QUERY_VECTOR: dict[str, object] = {}
"""The last query's embedding: every site is asked the same query in turn, and the service embeds it once."""


_ENCODER: list[MiniLM] = []


def build_semantic(index: SiteIndex) -> Search:
    if not _ENCODER:
        _ENCODER.append(MiniLM.load())
    encoder = _ENCODER[0]
    ranker = Ranker.build(index)
    ranker.attach(SiteVectors.compute(encoder, index.entries))

    def search(query: str) -> list[tuple[float, str]]:
        vector = _QUERY_VECTOR.get(query)
        if vector is None:
            _QUERY_VECTOR.clear()
            vector = _QUERY_VECTOR[query] = encoder.encode([query])[0]
        return [(hit.score, hit.entry.location) for hit in ranker.search(query, LIMIT, vector)]  # type: ignore[arg-type]

    return search


def build_bm25s(index: SiteIndex) -> Search:
    import bm25s
    import Stemmer

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
    from lunr import lunr

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


SYSTEMS = {"ranker": build_ours, "ranker+semantic": build_semantic, "lunr.py": build_lunr, "bm25s": build_bm25s}
OURS = ("ranker", "ranker+semantic")


def merged(searches: dict[str, Search], query: str) -> list[tuple[float, str]]:
    hits = [(score, qualify(site, loc)) for site, search in searches.items() for score, loc in search(query)]
    return sorted(hits, key=lambda hit: hit[0], reverse=True)[:LIMIT]


def quality(searches: dict[str, Search], cases: list[Case]) -> dict[str, float]:
    rows = []
    for case in cases:
        returned = [location for _, location in merged(searches, case.query)]
        rows.append(discovery(hit_rank(returned, case.acceptable)))
        rows[-1]["page"] = discovery(hit_rank(returned, case.acceptable, page_of))["hitAt1"]
    count = len(rows)
    return {
        "hit@1": sum(r["hitAt1"] for r in rows) / count,
        "hit@5": sum(r["hitAt5"] for r in rows) / count,
        "MRR@10": sum(r["reciprocalRankAt10"] for r in rows) / count,
        "nDCG@5": sum(r["ndcgAt5"] for r in rows) / count,
        "page hit@1": sum(r["page"] for r in rows) / count,
    }


def latency(searches: dict[str, Search], queries: list[str], repeat: int) -> tuple[float, float]:
    for query in queries:
        merged(searches, query)  # warm caches before timing
    times = []
    for _ in range(repeat):
        for query in queries:
            start = time.perf_counter()
            merged(searches, query)
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))]


def build_all(indexes: dict[str, SiteIndex]) -> tuple[dict[str, dict[str, Search]], dict[str, dict[str, float]]]:
    systems: dict[str, dict[str, Search]] = {}
    build_ms: dict[str, dict[str, float]] = {}
    for name, build in SYSTEMS.items():
        systems[name], build_ms[name] = {}, {}
        for site, index in indexes.items():
            start = time.perf_counter()
            systems[name][site] = build(index)
            build_ms[name][site] = (time.perf_counter() - start) * 1000
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
    return f"{label:<26}" + "".join(f"{value:>16}" for value in values)


def quality_table(systems: dict[str, dict[str, Search]], label: str, cases: list[Case]) -> list[str]:
    """One eval set's quality for every system, and each of ours against each peer."""
    metrics = {name: quality(searches, cases) for name, searches in systems.items()}
    names = list(systems)
    lines = [f"{label}: {len(cases)} cases", row("metric", names)]
    for metric in metrics[names[0]]:
        lines.append(row(metric, [f"{metrics[name][metric]:.3f}" for name in names]))
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
    lines = [f"{len(indexes)} sites, limit {LIMIT}, results merged across sites", ""]
    for label, cases in sets.items():
        lines += quality_table(systems, label, cases)
    queries = [case.query for cases in sets.values() for case in cases]
    timings = {name: latency(searches, queries, repeat) for name, searches in systems.items()}
    lines.append(f"latency over {len(queries)} queries x {repeat}, warm, in-process, all sites and the merge")
    lines.append(row("", names))
    lines.append(row("p50 ms", [f"{timings[name][0]:.2f}" for name in names]))
    lines.append(row("p95 ms", [f"{timings[name][1]:.2f}" for name in names]))
    for site in indexes:
        lines.append(row(f"build {site}", [f"{build_ms[name][site]:.0f}ms" for name in names]))
    for ours in OURS:
        for peer in (name for name in names if name not in OURS):
            lines.append(f"  {ours} p50 latency {ratio(timings[ours][0], timings[peer][0])}x {peer}'s")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="the documentation origin directory")
    parser.add_argument("--eval", type=Path, required=True, action="append", help="eval set JSON (repeatable)")
    parser.add_argument("--repeat", type=int, default=20, help="timed passes over the eval queries")
    args = parser.parse_args(argv)
    from shared.settings import SearchSettings

    indexes = {site: parse_index(site, (args.corpus / path).read_bytes()) for site, path in SITES.items()}
    sets = {path.name: parse_eval_set(path.read_text(encoding="utf-8")).cases for path in args.eval}
    systems, build_ms = build_all(indexes)
    lines = report(indexes, systems, build_ms, sets, args.repeat)
    all_cases = [case for cases in sets.values() for case in cases]
    for name in OURS:
        lines += ["", *floor_table(name, systems[name], all_cases, SearchSettings().min_score)]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
