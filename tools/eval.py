"""Replay an eval set against the documentation service and write the spec's run record (schemaVersion 2).

    # against a running API (one that takes a bearer token: DOCS_TOKEN=... in the environment)
    python tools/eval.py --eval-set ../shared/evals/dev-set.json --base-url http://127.0.0.1:8000 --label pre-fix
    # in-process, over an origin (other settings come from the usual Forge__Documentation__* environment)
    python tools/eval.py --eval-set ../shared/evals/dev-set.json --origin http://127.0.0.1:8000
    # the harness's own assertions, offline
    python tools/eval.py --self-test

Each case searches, scores discovery (hit@1, hit@5, hit rank, MRR@10, nDCG@5, and page-level variants that
ignore the #fragment), then fetches the location search actually returned - never the fixture's - so a
search that returns an unfetchable location shows up as a fetch failure. A measurement run exits 0 even when
cases fail: read the aggregate. `--self-test` exits 1 when an assertion fails.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from shared.requests import ReadRequest, SearchRequest

SCHEMA_VERSION = 2
HIT_AT_N_DEPTH = 5
MRR_DEPTH = 10
MIN_LIMIT, MAX_LIMIT = 5, 50
REPO = Path(__file__).resolve().parents[1]
TOKEN_VARIABLE = "DOCS_TOKEN"
"""The bearer token a running API is called with (`Inbound__Tokens`), from the environment: never an argument,
which the process list shows."""
DEFAULT_EVAL_SET = REPO / "tools" / "evals" / "holdout-set.json"
"""The set beside the harness, used when `--eval-set` is not given (the spec's eval-set.json beside the script)."""
RUNS_DIR = REPO / "tools" / "runs"
_SHA_IN_VERSION = re.compile(r"\+g?([0-9a-f]{7,40})\b", re.I)

KNOWN_LIMITATIONS = [
    "Provider attribution is coarse: a remote provider reports itself whatever backend answered behind it.",
    "Fetch success means a non-error reply with non-empty content; it does not verify freshness or that the "
    "fetched revision matches the indexed one.",
    "Location comparison trims whitespace and slashes and ignores case; it does not strip .md or /index.",
    "The service caps every search at 25 results, whatever --search-limit asks for.",
    "Preview quality is never scored: previewText is recorded beside expectedPreviewTerms for review by hand.",
]

Reply = tuple[int | None, dict[str, Any] | None, str | None]
"""(HTTP-like status, JSON body, error message) of one call; status is None when no reply arrived."""


@dataclass(frozen=True)
class Case:
    id: str
    query: str
    acceptable: list[str]
    expected_preview_terms: list[str] = field(default_factory=list)
    failure_mode: str = ""


@dataclass(frozen=True)
class EvalSet:
    version: object
    cases: list[Case]


class Backend(Protocol):
    """What the harness measures: a running API or the service in-process."""

    async def search(self, query: str, limit: int) -> Reply: ...
    async def get(self, location: str) -> Reply: ...
    async def version(self) -> str | None: ...


# --- parsing and scoring (pure) ---


def parse_eval_set(text: str) -> EvalSet:
    """The eval set's cases; raises ValueError naming what is wrong."""
    document = json.loads(text)
    raw_cases = document.get("cases") if isinstance(document, dict) else None
    if not isinstance(raw_cases, list) or not raw_cases:
        raise ValueError("the eval set needs a non-empty 'cases' list")
    cases = []
    for number, raw in enumerate(raw_cases):
        acceptable = raw.get("acceptableLocations") if isinstance(raw, dict) else None
        if not isinstance(raw, dict) or not isinstance(raw.get("query"), str) or not acceptable:
            raise ValueError(f"case {number} needs a 'query' and a non-empty 'acceptableLocations'")
        cases.append(
            Case(
                str(raw.get("id", f"case-{number + 1}")),
                raw["query"],
                [str(location) for location in acceptable],
                [str(term) for term in raw.get("expectedPreviewTerms", [])],
                str(raw.get("failureMode", "")),
            )
        )
    return EvalSet(document.get("version"), cases)


def normalize(location: str) -> str:
    """The spec's comparison form: surrounding whitespace and slashes trimmed, case folded."""
    return location.strip(" \t\r\n/").lower()


def page_of(location: str) -> str:
    """A location without its #fragment, for the page-level scores."""
    return normalize(location.partition("#")[0])


def hit_rank(returned: Sequence[str], acceptable: Sequence[str], key: Callable[[str], str] = normalize) -> int | None:
    """1-based rank of the first returned location that is acceptable, or None."""
    wanted = {key(location) for location in acceptable}
    return next((rank for rank, location in enumerate(returned, 1) if key(location) in wanted), None)


def discovery(rank: int | None) -> dict[str, Any]:
    """Scores of one ranking. The acceptable locations are alternatives for one answer, so the ideal DCG is 1."""
    return {
        "hitRank": rank,
        "hitAt1": rank == 1,
        "hitAt5": rank is not None and rank <= HIT_AT_N_DEPTH,
        "reciprocalRankAt10": 1 / rank if rank is not None and rank <= MRR_DEPTH else 0.0,
        "ndcgAt5": 1 / math.log2(rank + 1) if rank is not None and rank <= HIT_AT_N_DEPTH else 0.0,
    }


def aggregate(cases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The run's aggregate: counts and rates of the case flags, means of the graded scores."""
    total = len(cases)
    out: dict[str, Any] = {"caseCount": total}

    def rate(count: float) -> float:
        return round(count / total, 4) if total else 0.0

    for prefix, scores in (("", "discovery"), ("page", "pageDiscovery")):
        for flag in ("hitAt1", "hitAt5"):
            name = prefix + (flag[0].upper() + flag[1:] if prefix else flag)
            count = sum(1 for case in cases if case[scores][flag])
            out[f"{name}Count"], out[f"{name}Rate"] = count, rate(count)
        out[prefix + ("MrrAt10" if prefix else "mrrAt10")] = rate(sum(c[scores]["reciprocalRankAt10"] for c in cases))
        out[prefix + ("NdcgAt5" if prefix else "ndcgAt5")] = rate(sum(c[scores]["ndcgAt5"] for c in cases))
    fetched = sum(1 for case in cases if case["fetch"]["ok"])
    out["fetchSuccessCount"], out["fetchSuccessRate"] = fetched, rate(fetched)
    return out


def attribute_commit(commit_sha: str | None, version: str | None) -> tuple[str | None, str]:
    """(commitSha, commitShaSource): the parameter, else a SHA embedded in the service version, else unknown."""
    if commit_sha:
        return commit_sha.strip(), "parameter"
    match = _SHA_IN_VERSION.search(version or "")
    return (match.group(1).lower(), "cli-version") if match else (None, "unknown")


def check_limit(limit: int) -> None:
    """hit@5 always scores the first five results, so a smaller limit would record a mislabelled metric."""
    if not MIN_LIMIT <= limit <= MAX_LIMIT:
        raise ValueError(f"--search-limit must be between {MIN_LIMIT} and {MAX_LIMIT}, got {limit}")


# --- running ---


async def run_case(backend: Backend, case: Case, limit: int) -> dict[str, Any]:
    """Search, score, then fetch the top location search returned."""
    status, body, error = await backend.search(case.query, limit)
    results = (body or {}).get("results") or []
    returned = [str(result.get("location", "")) for result in results]
    if error is None and not results:
        error = "search returned no results"
    top = results[0] if results else {}
    record: dict[str, Any] = {
        "id": case.id,
        "query": case.query,
        "failureMode": case.failure_mode,
        "acceptableLocations": case.acceptable,
        "returnedLocations": returned,
        "discovery": discovery(hit_rank(returned, case.acceptable)),
        "pageDiscovery": discovery(hit_rank(returned, case.acceptable, page_of)),
        "search": {"status": status, "error": error, "provider": (body or {}).get("provider")},
        "topResult": {key: top.get(key) for key in ("location", "title", "site", "score", "provider")},
        "previewText": top.get("previewText"),
        "expectedPreviewTerms": case.expected_preview_terms,
    }
    record["fetch"] = await fetch(backend, returned[0]) if returned else {"ok": False, "error": "nothing to fetch"}
    return record


async def fetch(backend: Backend, location: str) -> dict[str, Any]:
    status, body, error = await backend.get(location)
    body = body or {}
    content = body.get("content")
    ok = error is None and isinstance(content, str) and bool(content.strip())
    if error is None and not ok:
        error = "empty content"
    resolution = body.get("resolution") or {}
    return {
        "location": location,
        "ok": ok,
        "status": status,
        "error": error,
        "provider": body.get("provider"),
        "resolvedLocation": body.get("location"),
        "reason": resolution.get("reason"),
        "rule": resolution.get("rule"),
        "contentLength": len(content) if isinstance(content, str) else 0,
    }


async def measure(backend: Backend, eval_set: EvalSet, limit: int) -> tuple[list[dict[str, Any]], str | None]:
    cases = [await run_case(backend, case, limit) for case in eval_set.cases]
    return cases, await backend.version()


def harness_commit() -> str:
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return result.stdout.strip() if result.returncode == 0 and result.stdout.strip() else "unknown"


def run_record(
    args: argparse.Namespace, eval_set: EvalSet, cases: list[dict[str, Any]], version: str | None
) -> dict[str, Any]:
    commit_sha, source = attribute_commit(args.commit_sha, version)
    return {
        "schemaVersion": SCHEMA_VERSION,
        "label": args.label,
        "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commitSha": commit_sha,
        "commitShaSource": source,
        "harnessCommitSha": harness_commit(),
        "serviceVersion": version,
        "cliVersion": version,
        "cliPath": args.base_url or args.origin,
        "resolvedCliPath": resolved_target(args),
        "target": {"baseUrl": args.base_url} if args.base_url else {"origin": args.origin, "mode": "in-process"},
        "evalSetPath": str(args.eval_set),
        "evalSetVersion": eval_set.version,
        "searchLimit": args.search_limit,
        "hitAtNDepth": HIT_AT_N_DEPTH,
        "knownLimitations": KNOWN_LIMITATIONS,
        "aggregate": aggregate(cases),
        "cases": cases,
    }


def resolved_target(args: argparse.Namespace) -> str:
    """What was measured, resolved: the API's base URL as the client uses it, or the package run in-process.

    The spec's `resolvedCliPath` is the executable `-SaifPath` resolved to; this service's equivalents are these.
    """
    if args.base_url:
        return str(args.base_url).rstrip("/")
    import shared

    return str(Path(shared.__file__).resolve().parent)


# --- backends ---


class HttpBackend:
    """A running API: GET /api/docs/search, /api/docs/get and /api/health."""

    def __init__(self, base_url: str, *, timeout: float = 60.0, token: str | None = None) -> None:
        import httpx  # a dev dependency: only measurement runs against HTTP need it

        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout, headers=headers)
        self._errors: tuple[type[Exception], ...] = (httpx.HTTPError,)

    async def _call(self, path: str, params: dict[str, Any]) -> Reply:
        try:
            response = await self._client.get(path, params=params)
        except self._errors as exc:
            return None, None, f"{type(exc).__name__}: {exc}"
        try:
            body = response.json()
        except ValueError:
            return response.status_code, None, f"HTTP {response.status_code}: reply is not JSON"
        if not isinstance(body, dict):  # recorded on the case, never a crash of the whole run
            return response.status_code, None, f"HTTP {response.status_code}: reply is JSON but not an object"
        if response.status_code != 200:
            message = ((body or {}).get("error") or {}).get("message") if isinstance(body, dict) else None
            return response.status_code, body, f"HTTP {response.status_code}: {message or 'error'}"
        return response.status_code, body, None

    async def search(self, query: str, limit: int) -> Reply:
        return await self._call("/api/docs/search", {"q": query, "limit": limit})

    async def get(self, location: str) -> Reply:
        return await self._call("/api/docs/get", {"location": location})

    async def version(self) -> str | None:
        _, body, _ = await self._call("/api/health", {})
        return str(body["version"]) if body and body.get("version") else None

    async def health(self) -> dict[str, Any]:
        _, body, _ = await self._call("/api/health", {})
        return body or {}

    async def aclose(self) -> None:
        await self._client.aclose()


class ServiceBackend:
    """The service in-process, replying in the API's wire shape so both targets score identically."""

    def __init__(self, composition: Any) -> None:
        self._composition = composition
        self._service = composition.service

    async def health(self) -> dict[str, Any]:
        report: dict[str, Any] = self._composition.health().model_dump(mode="json", by_alias=True)
        return report

    async def search(self, query: str, limit: int) -> Reply:
        try:
            response = await self._service.search(SearchRequest(query, limit=limit))
        except Exception as exc:  # a measurement records every failure on its case and carries on
            return None, None, f"{type(exc).__name__}: {exc}"
        return 200, response.model_dump(by_alias=True, mode="json"), None

    async def get(self, location: str) -> Reply:
        from shared.errors import ResolutionError

        try:
            document = await self._service.get(ReadRequest(location))
        except ResolutionError as exc:
            resolution = exc.resolution.model_dump(by_alias=True, mode="json")
            body = {"error": {"code": resolution["reason"], "message": str(exc)}, "resolution": resolution}
            return None, body, f"{resolution['reason']}: {exc}"
        except Exception as exc:
            return None, None, f"{type(exc).__name__}: {exc}"
        return 200, document.model_dump(by_alias=True, mode="json"), None

    async def version(self) -> str | None:
        from shared import __version__

        return __version__


async def measure_target(args: argparse.Namespace, eval_set: EvalSet) -> tuple[list[dict[str, Any]], str | None]:
    if args.base_url:
        backend = HttpBackend(args.base_url, token=os.environ.get(TOKEN_VARIABLE) or None)
        try:
            await wait_until_ranked(backend, args.ready_timeout)
            return await measure(backend, eval_set, args.search_limit)
        finally:
            await backend.aclose()
    from shared.compose import compose, process_embedding
    from shared.settings import load_settings

    settings = load_settings({**os.environ, "Forge__Documentation__Origin": args.origin})
    async with compose(settings, embedding=process_embedding(settings)) as composition:
        in_process = ServiceBackend(composition)
        await wait_until_ranked(in_process, args.ready_timeout)
        return await measure(in_process, eval_set, args.search_limit)


def pending_sites(health: dict[str, Any]) -> list[str]:
    """Sites whose embeddings are still being computed, from any provider's health report."""
    providers = health.get("providers") or {}
    return [
        site
        for report in providers.values()
        if isinstance(report, dict)
        for site, state in (report.get("sites") or {}).items()
        if isinstance(state, dict) and state.get("semantic") == "pending"
    ]


async def wait_until_ranked(backend: Any, seconds: float) -> None:
    """Load every site (a listing) and wait until none has embeddings pending, so what is measured is the ranker
    the service settles on, not its first minute (the service answers lexically meanwhile)."""
    if seconds <= 0:
        return
    await backend.search("*", 25)
    deadline = time.monotonic() + seconds
    while pending := pending_sites(await backend.health()):
        if time.monotonic() > deadline:
            print(f"warning: embeddings still pending after {seconds:g}s: {', '.join(pending)}", file=sys.stderr)
            return
        await asyncio.sleep(0.5)


# --- self-test ---


class _FakeBackend:
    def __init__(self, results: dict[str, list[str]], fetchable: set[str], version: str | None) -> None:
        self.results, self.fetchable, self._version = results, fetchable, version

    async def search(self, query: str, limit: int) -> Reply:
        found = [{"location": loc, "previewText": f"about {loc}", "provider": "mkdocs"} for loc in self.results[query]]
        return 200, {"query": query, "provider": "mkdocs" if found else "none", "results": found[:limit]}, None

    async def get(self, location: str) -> Reply:
        if location in self.fetchable:
            return 200, {"location": location, "content": "# Page", "resolution": {"reason": "resolved"}}, None
        return 404, {"error": {"code": "not_found"}, "resolution": {"reason": "not_found"}}, "HTTP 404: not found"

    async def version(self) -> str | None:
        return self._version


SELF_TEST_SET = """{"version": 2, "cases": [
  {"id": "a", "query": "qa", "acceptableLocations": ["faq/#reset", "FAQ/"], "expectedPreviewTerms": ["x"]},
  {"id": "b", "query": "qb", "acceptableLocations": ["guide/x.md"], "failureMode": "stale-location"},
  {"id": "c", "query": "qc", "acceptableLocations": ["site/page/"]}]}"""


def self_test(limit_guard: Callable[[int], None] = check_limit) -> list[str]:
    """Run the harness's own assertions offline (`limit_guard`: the guard checked); returns the failures (empty when
    all pass)."""
    failures: list[str] = []

    def check(condition: bool, what: str) -> None:
        if not condition:
            failures.append(what)

    parsed = parse_eval_set(SELF_TEST_SET)
    check([case.id for case in parsed.cases] == ["a", "b", "c"] and parsed.version == 2, "parses cases and version")
    check(parsed.cases[1].failure_mode == "stale-location", "parses failureMode")
    for bad in ('{"cases": []}', '{"cases": [{"query": "q"}]}', "[]"):
        check(_raises(partial(parse_eval_set, bad)), f"rejects malformed set {bad}")
    check(hit_rank([" /Faq/ "], ["faq/"]) == 1, "trims whitespace and slashes, ignores case")
    check(hit_rank(["guide/x"], ["guide/x.md"]) is None, "does not strip .md")
    check(hit_rank(["guide/index"], ["guide/"]) is None, "does not strip /index")
    check(hit_rank(["a/", "faq/#other"], ["faq/#reset"]) is None, "strict comparison keeps the fragment")
    check(hit_rank(["a/", "faq/#other"], ["faq/#reset"], page_of) == 2, "page-level comparison drops the fragment")
    scores = discovery(3)
    check(not scores["hitAt1"] and scores["hitAt5"] and scores["reciprocalRankAt10"] == 1 / 3, "scores rank 3")
    check(abs(scores["ndcgAt5"] - 0.5) < 1e-9, "nDCG@5 of rank 3 is 1/log2(4)")
    check(discovery(6)["ndcgAt5"] == 0.0 and not discovery(6)["hitAt5"], "rank 6 is outside hit@5")
    check(discovery(11)["reciprocalRankAt10"] == 0.0 and discovery(None)["hitRank"] is None, "MRR stops at 10")
    for limit, ok in ((4, False), (5, True), (50, True), (51, False)):
        check(_raises(partial(limit_guard, limit)) != ok, f"limit guard for {limit}")
    check(attribute_commit(" abc1234 ", "1.0+deadbeef") == ("abc1234", "parameter"), "the parameter wins")
    check(attribute_commit(None, "1.2.3+1a2b3c4d5e") == ("1a2b3c4d5e", "cli-version"), "SHA from the version")
    check(attribute_commit(None, "0.1.0") == (None, "unknown"), "no SHA means unknown, not a guess")
    check(attribute_commit(None, None) == (None, "unknown"), "no version means unknown")
    backend = _FakeBackend({"qa": ["x/", "faq/"], "qb": [], "qc": ["site/page/#s"]}, {"faq/", "x/"}, "1+abcdef1")
    cases, version = asyncio.run(measure(backend, parsed, 10))
    totals = aggregate(cases)
    check(totals["caseCount"] == 3 and totals["hitAt5Count"] == 1 and totals["hitAt1Count"] == 0, "aggregates hits")
    check(totals["pageHitAt1Count"] == 1 and totals["pageHitAt5Count"] == 2, "aggregates page-level hits")
    check(totals["fetchSuccessCount"] == 1 and totals["fetchSuccessRate"] == round(1 / 3, 4), "aggregates fetches")
    check(cases[0]["fetch"]["location"] == "x/", "fetches the location search returned, not the fixture's")
    check(cases[1]["search"]["error"] == "search returned no results" and not cases[1]["fetch"]["ok"], "empty search")
    check(cases[2]["fetch"]["error"] == "HTTP 404: not found", "records fetch errors on the case")
    check(cases[0]["previewText"] == "about x/" and cases[0]["expectedPreviewTerms"] == ["x"], "records the preview")
    check(version == "1+abcdef1" and aggregate([])["hitAt1Rate"] == 0.0, "version and empty aggregate")
    return failures


def _raises(call: Callable[[], object]) -> bool:
    try:
        call()
    except ValueError:
        return True
    return False


# --- command line ---


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--self-test", action="store_true", help="run the harness's own assertions and exit")
    parser.add_argument(
        "--eval-set", type=Path, help=f"eval set JSON (the spec's shape; default {DEFAULT_EVAL_SET.relative_to(REPO)})"
    )
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--base-url", help=f"a running API, e.g. http://127.0.0.1:8000 (a bearer token from ${TOKEN_VARIABLE})"
    )
    target.add_argument("--origin", help="measure the service in-process over this documentation origin")
    parser.add_argument("--label", default="unlabeled", help="free-form tag stamped into the record")
    parser.add_argument("--output", type=Path, help="record path (default tools/runs/<yyyyMMdd-HHmmss>-<label>.json)")
    parser.add_argument("--commit-sha", help="commit of the build being measured, when its version carries none")
    parser.add_argument("--search-limit", type=int, default=10, help="results per search, 5-50 (default 10)")
    parser.add_argument("--pass-thru", action="store_true", help="also print the whole run record on stdout")
    parser.add_argument(
        "--ready-timeout",
        type=float,
        default=600.0,
        help="seconds to wait for every site's embeddings before measuring (0: measure at once)",
    )
    return parser.parse_args(argv)


Target = Callable[[argparse.Namespace, EvalSet], Coroutine[Any, Any, tuple[list[dict[str, Any]], str | None]]]
"""What measures an eval set (`measure_target`: a running API or the service in process)."""


def main(
    argv: Sequence[str] | None = None,
    *,
    limit_guard: Callable[[int], None] = check_limit,
    target: Target = measure_target,
) -> int:
    """The command line; `limit_guard` and `target` are the real ones unless a test passes its own."""
    args = parse_args(argv)
    if args.self_test:
        given = [name for name in ("eval_set", "base_url", "origin", "output", "commit_sha") if getattr(args, name)]
        if given or args.label != "unlabeled" or args.search_limit != 10 or args.pass_thru:
            print("--self-test takes no other options (it runs offline, on synthetic records)", file=sys.stderr)
            return 2
        failures = self_test(limit_guard)
        for failure in failures:
            print(f"FAIL: {failure}", file=sys.stderr)
        print("self-test failed" if failures else "self-test passed", file=sys.stderr)
        return 1 if failures else 0
    try:
        limit_guard(args.search_limit)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    if not (args.base_url or args.origin):
        print("a measurement run needs one of --base-url or --origin", file=sys.stderr)
        return 2
    args.eval_set = args.eval_set or DEFAULT_EVAL_SET
    if str(REPO) not in sys.path:  # run as a script, tools/ is on the path but the package is not
        sys.path.insert(0, str(REPO))
    eval_set = parse_eval_set(args.eval_set.read_text(encoding="utf-8"))
    cases, version = asyncio.run(target(args, eval_set))
    record = run_record(args, eval_set, cases, version)
    if record["commitShaSource"] == "unknown":
        print("warning: commitSha is unknown; pass --commit-sha to attribute the measured build", file=sys.stderr)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    output = args.output or RUNS_DIR / f"{stamp}-{re.sub(r'[^A-Za-z0-9._-]', '-', args.label)}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(record if args.pass_thru else record["aggregate"], indent=2))
    print(f"run record: {output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
