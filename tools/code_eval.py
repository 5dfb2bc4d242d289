"""Evaluate code search (`kind=code`) on a code-question set, in process, against bm25s over the same blocks.

    python tools/code_eval.py --corpus ../shared/corpus/origin --eval tools/evals/code-dev-1.json [--cases]
    python tools/code_eval.py --corpus ../shared/corpus/origin --eval ... --http http://127.0.0.1:7071

Ours is the service's code search (`mkdocs.codeblocks.coderank`: the blocks `code.py` cuts out of each site's
index, their languages from the published Markdown's fences, the page search's scores, the blocks' own embeddings),
with the default page-kind rules. Vectors are computed as the warm-up does (`SiteVectors.compute`, the bulk session)
and kept in `--vectors` between runs. The peer is bm25s (Snowball English stemmer, English stop words) with one
document per block (heading, the prose before the block, the code), merged across sites by score.

A case is a hit at rank k when the k-th block is on an acceptable page and, where the set names sections
(`acceptableAnchors`), in one of them; `terms` counts the hits whose block holds every `expectedCodeTerms` string.
Each set is run twice: as asked (no language), and with the case's `language` as the filter. `--cases` prints every
case's ranks: use it only on a development set. `--http` asks a running service instead (black-box: every site
searched once so it reads its fences, then waited for until health says every site ranks by meaning and has its
fences read), each result matched back to its block by page, anchor and text.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from shared.embedding import MINILM_ID, MiniLM, load_bulk  # noqa: E402
from shared.providers.mkdocs.codeblocks.code import CodeBlock, fences  # noqa: E402
from shared.providers.mkdocs.codeblocks.coderank import CodeParameters, CodeRanker  # noqa: E402
from shared.providers.mkdocs.codeblocks.codesearch import ranked, scan_both  # noqa: E402
from shared.providers.mkdocs.indexes.index import SiteIndex, parse_index  # noqa: E402
from shared.providers.mkdocs.indexes.kinds import DEFAULT as DEFAULT_KINDS  # noqa: E402
from shared.providers.mkdocs.indexes.kinds import PathWeights  # noqa: E402
from shared.providers.mkdocs.scoring.federation import Federation  # noqa: E402
from shared.providers.mkdocs.scoring.ranking import Ranker  # noqa: E402
from shared.providers.mkdocs.scoring.semantics import semantic_say  # noqa: E402
from shared.providers.mkdocs.scoring.text import analyze_query  # noqa: E402
from shared.providers.mkdocs.scoring.vectors import SiteVectors, embedded_texts  # noqa: E402
from shared.validation import canonical_language as canonical  # noqa: E402
from tools.bench import DEFAULT_SITE, OFF_TOPIC, SITES, qualify  # noqa: E402

LIMIT = 10
FLOOR = 0.015
"""The service's default relevance floor (`Search__MinScore`)."""
Search = Callable[[str, str | None], list[tuple[str, CodeBlock]]]
"""A system's code search: (qualified page, block) best first."""


def load(corpus: Path) -> dict[str, SiteIndex]:
    return {site: parse_index(site, (corpus / path).read_bytes()) for site, path in SITES.items()}


def markdown_fences(corpus: Path, site: str, index: SiteIndex) -> dict[str, list[Any]]:
    """Each page's fences from the Markdown published beside it (what the service reads over HTTP)."""
    found: dict[str, list[Any]] = {}
    for page in {block.page for block in index.code}:
        key = page.strip("/") or "index"
        for candidate in (corpus / site / f"{key}.md", corpus / site / key / "index.md"):
            if candidate.is_file():
                found[page] = fences(candidate.read_text(encoding="utf-8", errors="replace"))
                break
    return found


def vectors(index: SiteIndex, cache: Path) -> SiteVectors:
    texts = embedded_texts(index.entries, index.code)
    digest = hashlib.sha256("\n\x00".join(texts).encode()).hexdigest()[:16]
    path = cache / f"{index.site}-{digest}.bin"
    if path.is_file():
        loaded = SiteVectors.loads(path.read_bytes(), MINILM_ID)
        if loaded is not None:
            return loaded
    earlier = sorted(cache.glob(f"{index.site}-*.bin"), key=lambda found: found.stat().st_mtime)
    reuse = SiteVectors.loads(earlier[-1].read_bytes(), MINILM_ID) if earlier else None  # rows of unchanged texts
    computed = SiteVectors.compute(load_bulk(), index.entries, code=index.code, reuse=reuse)
    cache.mkdir(parents=True, exist_ok=True)
    path.write_bytes(computed.dumps(MINILM_ID, len(index.entries)))
    return computed


def ours(
    indexes: dict[str, SiteIndex], corpus: Path, cache: Path, parameters: CodeParameters, *, semantic: bool = True
) -> Search:
    kinds = PathWeights.parse(DEFAULT_KINDS)
    sites = list(indexes)
    rankers = []
    code = []
    for site, index in indexes.items():
        ranker = Ranker.build(index, kinds)
        if semantic:
            ranker.attach(vectors(index, cache))
        rankers.append(ranker)
        code.append(CodeRanker.build(index, parameters).relabel(markdown_fences(corpus, site, index)))
    federation = Federation.of(rankers)
    encoder = MiniLM.load() if semantic else None

    def search(query: str, language: str | None) -> list[tuple[str, CodeBlock]]:
        """As the provider's code search ranks (`codesearch.ranked`), the query embedded here."""
        wanted = analyze_query(query)
        say = semantic_say(query, wanted, federation.parameters)
        scanned = None
        if encoder is not None and say > 0 and federation.correction is not None:
            scanned = scan_both(federation)(encoder.encode([query], query=True)[0])
        products, similarities = scanned if scanned is not None else (None, None)
        none_missing = [frozenset[str]()] * len(sites)
        found = ranked(
            code, federation, wanted, say, products, similarities, language=language, limit=LIMIT,
            missing=none_missing, floor=FLOOR,
        )  # fmt: skip
        return [(qualify(sites[s], code[s].pages[n]), code[s].blocks[n]) for s, n, score in found if score >= FLOOR]

    return search


MATCHED = 1_000
"""Characters of a result's code matched back to its block (with its page and anchor): a cut block keeps its
first 3,900."""


def over_http(base: str, indexes: dict[str, SiteIndex]) -> Search:
    """Ours black-box: the running service's `GET /api/docs/search?kind=code`, each result matched back to its block
    (page and code text) so it is judged exactly as the in-process system is."""
    import httpx

    client = httpx.Client(base_url=base, timeout=60)
    by_text = {
        (qualify(site, block.page), block.anchor or "", block.code[:MATCHED]): block
        for site, index in indexes.items()
        for block in index.code
    }

    def search(query: str, language: str | None) -> list[tuple[str, CodeBlock]]:
        params = {"q": query, "kind": "code", "limit": str(LIMIT), **({"language": language} if language else {})}
        answer = client.get("/api/docs/search", params=params)
        answer.raise_for_status()
        found = []
        for result in answer.json()["results"]:
            page = result["location"].partition("#")[0]
            block = by_text.get((page, result.get("anchor") or "", result["code"]["text"][:MATCHED]))
            if block is not None:
                found.append((page, block))
        return found

    return search


def ready(base: str, sites: list[str], seconds: float = 600.0) -> None:
    """Every site loaded, ranked by meaning (unless semantic matching is off), and its code fences read (one code
    search per site asks for them)."""
    import time

    import httpx

    deadline = time.monotonic() + seconds
    with httpx.Client(base_url=base, timeout=60) as client:
        for site in sites:
            client.get("/api/docs/search", params={"q": "example", "kind": "code", "site": site})
        while True:
            states = client.get("/api/health").json()["providers"]["mkdocs"]["sites"]
            if all(
                states[site].get("unpublished")
                or (states[site].get("semantic") in ("ready", "off") and states[site].get("codeLanguages") == "read")
                for site in sites
            ):
                return
            if time.monotonic() > deadline:
                raise SystemExit(f"not ready within {seconds:g} s: {states}")
            time.sleep(1)


def bm25s_peer(indexes: dict[str, SiteIndex], corpus: Path) -> Search:
    import bm25s  # type: ignore[import-untyped]
    import Stemmer  # type: ignore[import-not-found]

    stemmer = Stemmer.Stemmer("english")
    models = []
    for site, index in indexes.items():
        labels = CodeRanker.build(index).relabel(markdown_fences(corpus, site, index)).languages
        docs = [f"{block.page_title} {block.title} {block.prose} {block.code}" for block in index.code]
        model = bm25s.BM25()
        model.index(bm25s.tokenize(docs, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
        models.append((site, index, model, labels))

    def search(query: str, language: str | None) -> list[tuple[str, CodeBlock]]:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.ids[0]:
            return []
        merged = []
        for site, index, model, labels in models:
            docs, scores = model.retrieve(tokens, k=min(len(index.code), 200), show_progress=False)
            for doc, score in zip(docs[0], scores[0], strict=True):
                block = index.code[int(doc)]
                if score > 0 and (language is None or labels[int(doc)] == language):
                    merged.append((float(score), qualify(site, block.page), block))
        merged.sort(key=lambda hit: -hit[0])
        return [(page, block) for _, page, block in merged[:LIMIT]]

    return search


def judged(case: dict[str, Any], found: Sequence[tuple[str, CodeBlock]]) -> tuple[int | None, bool]:
    """The first acceptable block's rank (1-based), and whether it holds every expected term."""
    pages = {page.strip("/") for page in case["acceptableLocations"]}
    anchors = set(case.get("acceptableAnchors") or [])
    for rank, (page, block) in enumerate(found, 1):
        if page.strip("/") in pages and (not anchors or (block.anchor or "") in anchors):
            terms = all(term in block.code for term in case.get("expectedCodeTerms", []))
            return rank, terms
    return None, False


def scores(search: Search, cases: list[dict[str, Any]], *, filtered: bool) -> tuple[dict[str, float], list[Any]]:
    rows = []
    for case in cases:
        language = canonical(case["language"]) if filtered else None
        rank, terms = judged(case, search(case["query"], language))
        rows.append((case, rank, terms))
    total = len(rows) or 1
    summary = {
        "hit@1": sum(1 for _, rank, _ in rows if rank == 1) / total,
        "hit@5": sum(1 for _, rank, _ in rows if rank is not None and rank <= 5) / total,
        "mrr@10": sum(1 / rank for _, rank, _ in rows if rank is not None) / total,
        "terms@1": sum(1 for _, rank, terms in rows if rank == 1 and terms) / total,
    }
    return summary, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--eval", type=Path, action="append", required=True)
    parser.add_argument("--vectors", type=Path, default=Path("/tmp/code-eval-vectors"))
    parser.add_argument("--cases", action="store_true", help="print each case's ranks (development sets only)")
    parser.add_argument("--params", default="{}", help="CodeParameters overrides as JSON (tuning)")
    parser.add_argument("--lexical", action="store_true", help="ours without meaning (Search__Semantic=false)")
    parser.add_argument("--http", help="ours is the service running at this base URL (black-box), over the corpus")
    args = parser.parse_args(argv)
    overrides = json.loads(args.params)
    if "fields" in overrides:
        overrides["fields"] = tuple(tuple(pair) for pair in overrides["fields"])
    parameters = CodeParameters(**overrides)
    indexes = load(args.corpus)
    print(f"code blocks: {', '.join(f'{site} {len(index.code)}' for site, index in indexes.items())}")
    if args.http:
        ready(args.http, list(indexes))
        mine = over_http(args.http, indexes)
    else:
        mine = ours(indexes, args.corpus, args.vectors, parameters, semantic=not args.lexical)
    systems = {"ours": mine, "bm25s": bm25s_peer(indexes, args.corpus)}
    for path in args.eval:
        cases = json.loads(path.read_text())["cases"]
        modes = Counter(case.get("failureMode", "?") for case in cases)
        print(f"\n{path.name}: {len(cases)} cases ({', '.join(f'{m} {n}' for m, n in sorted(modes.items()))})")
        for filtered in (False, True):
            print(f"  {'with the language filter' if filtered else 'as asked (no language)'}")
            results = {name: scores(search, cases, filtered=filtered) for name, search in systems.items()}
            for name, (summary, _) in results.items():
                print(f"    {name:6} " + "  ".join(f"{key} {value:.3f}" for key, value in summary.items()))
            for mode in sorted(modes):
                line = []
                for name, (_, rows) in results.items():
                    ranks = [rank for case, rank, _ in rows if case.get("failureMode") == mode]
                    line.append(f"{name} {sum(1 for r in ranks if r == 1)}/{len(ranks)}")
                print(f"      {mode:18} hit@1 " + ", ".join(line))
            if args.cases and not filtered:
                for (case, rank, terms), (_, peer, _) in zip(results["ours"][1], results["bm25s"][1], strict=True):
                    mark = "terms" if terms else "-"
                    print(f"      {case['id']:12} ours {rank} {mark} bm25s {peer}  {case['query'][:70]}")
    answered = sum(1 for query in OFF_TOPIC if systems["ours"](query, None))
    print(f"\noff-topic questions answered with any block above the floor ({FLOOR}): {answered} of {len(OFF_TOPIC)}")
    print(f"(default site {DEFAULT_SITE}; limit {LIMIT})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
