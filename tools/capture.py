"""A black-box capture of what the service answers, to prove a refactoring changed nothing: run it before and
after against a freshly started service over the same corpus (`run_local.py`, whose Azurite is in memory),
then compare the two files.

    python tools/capture.py --base http://127.0.0.1:7071 --eval tools/evals/holdout-set.json ... --out before.json
    python tools/capture.py --compare before.json after.json

For every question of the `--eval` sets it records the search (ranks, locations, scores and the whole JSON),
as asked and, for code sets, with `kind=code` and the case's language; the top hit's page and its outline; a
listing (`q=*`) per site; the refusals of a few bad inputs; health; and, with `--refresh-token`, the publish hook's
refresh report (the warm-up's steps over every site). It first waits until every site is loaded, ranked by meaning
and has its code fences read, so both runs see the same state. Fields that say when something happened or how long
it took are dropped, and the origin's address is `{origin}` (they differ between any two runs); everything else is
kept byte for byte.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tools.code_eval import ready  # noqa: E402

VOLATILE = re.compile(r"(At|Ms|Seconds|_ms|_s)$|^(uptime|elapsed|duration|age|id|run|contentHash)$")
"""Keys whose values are clocks, durations or run ids (and the hash of a page that states when it was read)."""
RETRIEVED = re.compile(r"^retrieved: \S+$", re.MULTILINE)
BAD = [
    {"q": ""},
    {"q": "x", "limit": "0"},
    {"q": "x", "kind": "poem"},
    {"q": "x", "language": "python"},
    {"q": "x", "site": "nowhere"},
]
"""Refusals whose bodies must not change (auth refusals are the intended exception, not asked here)."""


def steady(value: Any) -> Any:
    """`value` without the keys that differ between any two runs."""
    if isinstance(value, dict):
        return {key: steady(item) for key, item in value.items() if not VOLATILE.search(key)}
    if isinstance(value, list):
        return [steady(item) for item in value]
    if isinstance(value, str):
        return RETRIEVED.sub("retrieved: {time}", value)
    return value


def ask(base: str, path: str, params: dict[str, str], *, token: str | None = None, method: str = "GET") -> Any:
    url = f"{base}{path}?{urllib.parse.urlencode(params)}" if params else f"{base}{path}"
    request = urllib.request.Request(url, method=method, data=b"{}" if method == "POST" else None)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if method == "POST":
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    try:
        parsed: Any = json.loads(body)
    except ValueError:
        parsed = body.decode("utf-8", "replace")
    return {"status": status, "body": steady(parsed)}


def capture(base: str, evals: list[Path], refresh_token: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"search": {}, "get": {}, "list": {}, "bad": [], "health": None, "refresh": None}
    health = ask(base, "/api/health", {})
    sites = sorted(health["body"]["providers"]["mkdocs"]["sites"])
    if refresh_token:  # what a refresh learns (pages gone from the origin) is known to both runs from the start
        ask(base, "/api/admin/refresh", {}, token=refresh_token, method="POST")
    ready(base, sites)
    for path in evals:
        data = json.loads(path.read_text(encoding="utf-8"))
        code = data.get("kind") == "code"
        for case in data["cases"]:
            asked = [{"q": case["query"], "limit": "10"}]
            if code:
                asked.append({"q": case["query"], "limit": "10", "kind": "code"})
                if case.get("language"):
                    asked.append({"q": case["query"], "limit": "10", "kind": "code", "language": case["language"]})
            for params in asked:
                key = json.dumps(params, sort_keys=True)
                answer = ask(base, "/api/docs/search", params)
                out["search"][key] = answer
                results = answer["body"].get("results", []) if isinstance(answer["body"], dict) else []
                if results and results[0]["location"] not in out["get"]:
                    top = results[0]["location"]
                    out["get"][top] = {
                        "page": ask(base, "/api/docs/get", {"location": top}),
                        "outline": ask(base, "/api/docs/get", {"location": top, "outline": "true"}),
                    }
    for site in sites:
        out["list"][site] = ask(base, "/api/docs/search", {"q": "*", "site": site, "limit": "25"})
    out["bad"] = [ask(base, "/api/docs/search", params) for params in BAD]
    out["bad"].append(ask(base, "/api/docs/get", {"location": "https://elsewhere.example/x"}))
    out["health"] = ask(base, "/api/health", {})
    if refresh_token:
        out["refresh"] = ask(base, "/api/admin/refresh", {}, token=refresh_token, method="POST")
    return out


def compare(before: Path, after: Path) -> int:
    old = json.loads(before.read_text(encoding="utf-8"))
    new = json.loads(after.read_text(encoding="utf-8"))
    differing = 0
    for part in old:
        if isinstance(old[part], dict) and isinstance(new.get(part), dict):
            keys = sorted(set(old[part]) | set(new[part]))
            changed = [key for key in keys if old[part].get(key) != new[part].get(key)]
            print(f"{part}: {len(keys)} answers, {len(changed)} differ")
            for key in changed[:5]:
                print(f"  {key}")
            differing += len(changed)
        else:
            same = old[part] == new.get(part)
            print(f"{part}: {'identical' if same else 'DIFFERS'}")
            differing += 0 if same else 1
    print("identical" if not differing else f"{differing} answers differ")
    return 0 if not differing else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base")
    parser.add_argument("--eval", type=Path, action="append", default=[])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--refresh-token")
    parser.add_argument("--compare", type=Path, nargs=2)
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if not args.base or not args.out:
        parser.error("--base and --out are needed to capture")
    captured = capture(args.base.rstrip("/"), args.eval, args.refresh_token)
    origin = captured["health"]["body"]["providers"]["mkdocs"]["origin"]
    text = json.dumps(captured, indent=1, sort_keys=True).replace(origin, "{origin}")  # a new port each run
    args.out.write_text(text, encoding="utf-8")
    print(f"{len(captured['search'])} searches, {len(captured['get'])} pages captured in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
