"""How big `get_doc`'s default answer is for a corpus's longest pages, for this checkout or another one.

    python tools/answer_sizes.py --corpus ../shared/corpus/origin [--checkout PATH] [--pages N]

`--checkout` runs the app of another checkout of this repository (a `git worktree` of an earlier commit) over the
same corpus, so an answer before and after a change is measured the same way: the whole tool result as JSON (text
and structured content, both escaped), the characters of Markdown it carries, and whether it says where the rest is.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


async def measure(url: str, pages: list[str]) -> list[dict[str, object]]:
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    rows: list[dict[str, object]] = []
    async with streamable_http_client(url + "/api/mcp") as (read, write), ClientSession(read, write) as mcp:
        await mcp.initialize()
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            for page in pages:
                answer = await mcp.call_tool("get_doc", {"location": page})
                whole = (await client.get("/api/docs/get", params={"location": page})).json()["content"]
                structured = answer.structured_content or {}
                rows.append(
                    {
                        "page": page,
                        "page_chars": len(whole),
                        "answer_chars": len(
                            json.dumps(answer.model_dump(mode="json", by_alias=True, exclude_none=True))
                        ),
                        "markdown_chars": len(structured.get("content", "")),
                        "next_offset": structured.get("nextOffset", "(not offered)"),
                    }
                )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="directory of built sites ({dir}/{site}/)")
    parser.add_argument("--checkout", type=Path, default=REPO, help="the checkout whose app is measured")
    parser.add_argument("--pages", type=int, default=4, help="how many of the longest pages")
    args = parser.parse_args(argv)
    sys.path[:0] = [str(args.checkout.resolve()), str(REPO)]  # the measured app first; the test server from here

    from shared.api import create_app
    from shared.providers.mkdocs.indexes.index import parse_index
    from shared.settings import load_settings
    from tests.support.uvicorn_server import UvicornServer
    from tools.load import OVERRIDES, SITES
    from tools.static_origin import StaticOrigin

    overrides = json.loads(OVERRIDES)
    sized: list[tuple[int, str]] = []
    for site in SITES.split(","):
        index_file = args.corpus / (
            overrides[site].lstrip("/") if site in overrides else f"{site}/search/search_index.json"
        )
        if not index_file.is_file():
            continue
        for page in parse_index(site, index_file.read_bytes()).pages:
            key = page.path.strip("/")
            source = args.corpus / site / f"{key or 'index'}.md"
            if source.is_file():
                sized.append((source.stat().st_size, key if site == "forge" else f"{site}/{key}"))
    pages = [location for _, location in sorted(sized, reverse=True)[: args.pages]]
    with StaticOrigin(args.corpus) as origin:
        settings = load_settings(
            {
                "Forge__Documentation__Origin": origin.url,
                "Forge__Documentation__Sites": SITES,
                "Forge__Documentation__SearchIndexOverrides": OVERRIDES,
                "Forge__Documentation__Search__Semantic": "false",
            }
        )
        with UvicornServer(create_app(settings, embedding=None)) as server:
            rows = asyncio.run(measure(server.url, pages))
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
