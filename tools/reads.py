"""Reads over a whole corpus, checked and measured: every page long enough to need parts is read through MCP
`get_doc` in parts and as a resource, and every section a page's outline names is read on its own.

    python tools/reads.py --corpus ../shared/corpus/origin [--budget 24000]

Starts a static origin over `--corpus` and `python -m shared serve` in its own process (lexical ranking: reads do not
depend on it), lists every page of every site's index, gets each whole over REST, then with the official MCP client:

- pages longer than what one answer holds: read with `nextOffset` until the end; the parts must join to exactly the
  REST page and every answer (text and structured content, as JSON) must stay within the budget;
- the longest page again through `resources/read`, following `nextUri`;
- every section an outline gives an anchor: read with `section`, which must equal the page's own text of that section.

Prints what failed, the parts and answer sizes, the origin requests a page read in parts cost, and the time of a
first part (fetched and converted) against later parts (kept), and how big search_docs answers are. Exits 1 on any
failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from shared.api.mcp.budget import size  # noqa: E402
from shared.api.mcp.resources import page_uri  # noqa: E402
from tools.load import OVERRIDES, QUERIES, corpus_env, free_port  # noqa: E402
from tools.static_origin import StaticOrigin  # noqa: E402


async def wait_listed(client: httpx.AsyncClient, seconds: float) -> list[str]:
    """Every page's location, once each site has loaded (a listing per site), polled against a deadline."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            health = (await client.get("/api/health")).json()
            sites = health["providers"]["mkdocs"]["sites"]
            await client.get("/api/docs/search", params={"q": "*", "limit": 25})
            if all(state["state"] != "not_loaded" for state in sites.values()):
                return [name for name, state in sites.items() if state["state"] == "loaded"]
        except (httpx.HTTPError, KeyError):
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"the service was not ready within {seconds:g} s")
        await asyncio.sleep(0.5)


def locations(corpus: Path, sites: list[str]) -> dict[str, list[str]]:
    """Every page of the loaded sites, as search results locate them (the first site given bare), with the anchors
    of its sections in the index: what a search result can name as `section`."""
    from shared.providers.mkdocs.indexes.index import parse_index

    overrides = json.loads(OVERRIDES)
    found: dict[str, list[str]] = {}
    for site in sites:
        path = corpus / overrides[site].lstrip("/") if site in overrides else corpus / site / "search/search_index.json"
        index = parse_index(site, path.read_bytes())
        for page in index.pages:
            key = page.path.strip("/")
            location = (key if site == sites[0] else f"{site}/{key}".rstrip("/")) or ""
            found[location] = [anchor for anchor, _ in index.sections(page.path)]
    return found


async def read_parts(mcp: ClientSession, **arguments: Any) -> tuple[str, list[int], list[float]]:
    joined, sizes, seconds, offset = [], [], [], None
    while True:
        started = time.perf_counter()
        answer = await mcp.call_tool("get_doc", dict(arguments, **({} if offset is None else {"offset": offset})))
        seconds.append(time.perf_counter() - started)
        if answer.is_error or answer.structured_content is None:
            raise AssertionError(f"get_doc failed: {answer.content[0]}")
        joined.append(answer.structured_content["content"])
        sizes.append(size(answer))
        offset = answer.structured_content["nextOffset"]
        if offset is None:
            return "".join(joined), sizes, seconds


def unretrieved(markdown: str) -> str:
    """The page without its `retrieved` line: two processes fetch the same page at different times."""
    return "".join(line for line in markdown.splitlines(keepends=True) if not line.startswith("retrieved: "))


async def check(base: str, rest: str, corpus: Path, origin: StaticOrigin, budget: int) -> dict[str, Any]:
    """Pages listed and got whole from the `rest` process; read in parts from the `base` process, whose page cache
    starts empty, so a page's first part is fetched and converted and the rest are kept."""
    failures: list[str] = []
    report: dict[str, Any] = {"budget": budget}
    async with httpx.AsyncClient(base_url=rest, timeout=120) as client:
        sites = await wait_listed(client, 600)
        pages: dict[str, str] = {}
        site_of: dict[str, str] = {}
        outlines: dict[str, dict[str, dict[str, Any]]] = {}  # REST's, whole: an MCP outline keeps to the budget
        anchors = locations(corpus, ["forge", *[site for site in sites if site != "forge"]])
        for location in anchors:
            response = await client.get("/api/docs/get", params={"location": location})
            if response.status_code == 200:
                pages[location], site_of[location] = response.json()["content"], response.json()["site"]
                described = await client.get("/api/docs/get", params={"location": location, "view": "outline"})
                outlines[location] = {e["anchor"]: e for e in described.json()["outline"] if e["anchor"]}
    report["pages"] = len(pages)
    long_pages = sorted((loc for loc, text in pages.items() if 2 * len(text) > budget), key=lambda p: -len(pages[p]))
    report["pages_read_in_parts"] = len(long_pages)
    parts, sizes, first, later, requests = [], [], [], [], []
    sections = 0
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        await wait_listed(client, 600)
    async with streamable_http_client(base + "/api/mcp") as (read, write), ClientSession(read, write) as mcp:
        await mcp.initialize()
        await mcp.list_tools()
        for location in long_pages:
            origin.clear_requests()
            joined, answer_sizes, seconds = await read_parts(mcp, location=location)
            requests.append(len([r for r in origin.requests if not r.path.endswith("search_index.json")]))
            if unretrieved(joined) != unretrieved(pages[location]):
                failures.append(f"{location}: parts do not join to the REST page")
            parts.append(len(answer_sizes))
            sizes += answer_sizes
            first.append(seconds[0])
            later += seconds[1:]
        unreadable: list[str] = []
        for location in pages:
            offsets = outlines[location]
            for anchor in anchors.get(location, []):
                try:
                    joined, answer_sizes, _ = await read_parts(mcp, location=location, section=anchor)
                except AssertionError:
                    unreadable.append(f"{location}#{anchor}")
                    continue
                sections += 1
                sizes += answer_sizes
                entry = offsets.get(anchor)
                own = pages[location][entry["offset"] : entry["offset"] + entry["chars"]] if entry else "?"
                if not joined.endswith(own) or not joined.startswith("---\n"):
                    failures.append(f"{location}#{anchor}: the section is not the page's own text")
        longest = long_pages[0] if long_pages else next(iter(pages))
        uri, resource = page_uri(site_of[longest], longest), []
        while uri:
            contents = (await mcp.read_resource(uri)).contents
            resource.append(contents[0].text)  # type: ignore[union-attr]
            uri = (contents[0].meta or {}).get("nextUri", "")
        if unretrieved("".join(resource)) != unretrieved(pages[longest]):
            failures.append(f"{longest}: the resource's parts do not join to the REST page")
        searches = {}
        for limit in (10, 25):
            answers = [await mcp.call_tool("search_docs", {"query": query, "limit": limit}) for query in QUERIES]
            searches[f"limit_{limit}_max_chars"] = max(size(answer) for answer in answers)
    over = [value for value in sizes if value > budget]
    report |= {
        "longest_page": {"location": longest, "chars": len(pages[longest]), "resource_parts": len(resource)},
        "parts_per_long_page": {
            "min": min(parts, default=0),
            "median": statistics.median(parts or [0]),
            "max": max(parts, default=0),
        },
        "answers": len(sizes),
        "answer_chars": {"median": statistics.median(sizes or [0]), "max": max(sizes, default=0)},
        "answers_over_budget": len(over),
        "sections_read": sections,
        "index_anchors_unreadable": {"count": len(unreadable), "first": unreadable[:10]},
        "origin_requests_per_page_read_in_parts": {
            "max": max(requests, default=0),
            "mean": round(statistics.fmean(requests or [0]), 2),
        },
        "first_part_ms_p50": round(statistics.median(first or [0]) * 1000, 1),
        "later_part_ms_p50": round(statistics.median(later or [0]) * 1000, 1),
        "search_docs_answer": searches,
        "failures": failures,
    }
    if first and later:
        report["first_against_later_parts"] = round(statistics.median(first) / statistics.median(later), 1)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="directory of built sites ({dir}/{site}/)")
    parser.add_argument("--budget", type=int, default=24_000, help="Mcp__AnswerBudgetChars")
    args = parser.parse_args(argv)
    with StaticOrigin(args.corpus) as origin:
        env = corpus_env(
            origin.url,
            Search__Semantic="false",
            Mcp__AnswerBudgetChars=str(args.budget),
            RequestTimeoutSeconds="60",
        )
        ports = [free_port(), free_port()]
        servers = [
            subprocess.Popen(
                [sys.executable, "-m", "shared", "serve", "--port", str(port), "--log-level", "warning"],
                cwd=REPO,
                env=env,
            )
            for port in ports
        ]
        try:
            bases = [f"http://127.0.0.1:{port}" for port in ports]
            report = asyncio.run(check(bases[0], bases[1], args.corpus, origin, args.budget))
        finally:
            for server in servers:
                server.terminate()
                server.wait(30)
    print(json.dumps(report, indent=2))
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
