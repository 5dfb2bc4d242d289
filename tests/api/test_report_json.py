"""The JSON operators and pipelines read, pinned byte for byte: `/api/health`, the publish hook's run reports and
what `python -m shared warm` prints. Times, ports, container names and run ids are masked; every key, its order and
every other value is compared with the files under `reports/` (`UPDATE_REPORTS=1` rewrites them)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from asgi_lifespan import LifespanManager

from shared import __version__
from shared.api import create_app
from shared.settings import DocumentationSettings
from tests.support.encoders import WordEncoder, model_of
from tests.support.sites import ROOTED_OVERRIDE, fixture_env, fixture_settings
from tests.support.stores import closed_port
from tools.azurite import Azurite
from tools.static_origin import StaticOrigin

REPORTS = Path(__file__).parent / "reports"
ROOT = Path(__file__).resolve().parents[2]
UNRESOLVED = "@Microsoft.KeyVault(SecretUri=https://vault.vault.azure.net/secrets/hook)"
HOOK = "/api/admin/refresh"
TOKEN = "publish-secret-1"


def masked(text: str, replacements: dict[str, str]) -> str:
    for old, new in replacements.items():
        text = text.replace(old, new)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+", "<time.us>", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", "<time>", text)
    return re.sub(r"\b[0-9a-f]{32}\b", "<run>", text)


def pinned(name: str, raw: str, replacements: dict[str, str], *, compact: bool = True) -> None:
    """`raw`, masked, is exactly the pinned report `name` (kept indented in its file; compared as `raw` is written:
    the API's compact JSON, or the CLI's own text)."""
    actual = masked(raw, replacements)
    path = REPORTS / f"{name}.json"
    if os.environ.get("UPDATE_REPORTS"):
        REPORTS.mkdir(exist_ok=True)
        readable = json.dumps(json.loads(actual), indent=2, ensure_ascii=False) + "\n" if compact else actual
        path.write_text(readable, encoding="utf-8")
    kept = path.read_text(encoding="utf-8")
    expected = json.dumps(json.loads(kept), ensure_ascii=False, separators=(",", ":")) if compact else kept
    assert actual == expected, f"{name} moved:\n{actual}"


@asynccontextmanager
async def serving(settings: DocumentationSettings, **options: Any) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings, **options)
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://test", timeout=60) as http,
    ):
        yield http


async def health(http: httpx.AsyncClient, status: int = 200) -> str:
    response = await http.get("/api/health")
    assert response.status_code == status, response.text
    return response.text


async def test_health_as_sites_load_and_providers_ahead_of_mkdocs_fail(static_origin: StaticOrigin) -> None:
    port = closed_port()
    settings = fixture_settings(
        static_origin.url,
        SearchIndexOverrides=ROOTED_OVERRIDE,
        AiSearch__Endpoint=f"http://127.0.0.1:{port}",
        AiSearch__ApiKey="search-key",
        AiSearch__SiteField="site",
        Remote__Endpoint=f"http://127.0.0.1:{port}/api/mcp",
        Remote__Token="remote-token",
        Refresh__Tokens=UNRESOLVED,
    )
    hidden = {static_origin.url: "<origin>", f"127.0.0.1:{port}": "<dead>", __version__: "<version>"}
    static_origin.respond("/beta-docs/search/search_index.json", body="{not json", content_type="application/json")
    async with serving(settings) as http:
        pinned("health-idle", await health(http), hidden)
        got = await http.get("/api/docs/get", params={"location": "guide/install"})
        assert got.status_code == 200, got.text
        pinned("health-after-get", await health(http), hidden)
        searched = await http.get("/api/docs/search", params={"q": "install"})
        assert searched.status_code == 200, searched.text
        pinned("health-after-search", await health(http), hidden)


async def test_health_when_nothing_can_be_searched(static_origin: StaticOrigin) -> None:
    settings = fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE)
    hidden = {static_origin.url: "<origin>", __version__: "<version>"}
    static_origin.stop()
    async with serving(settings) as http:
        assert (await http.get("/api/docs/search", params={"q": "install"})).status_code == 503
        pinned("health-unavailable", await health(http, 503), hidden)


async def test_health_ranking_by_meaning(static_origin: StaticOrigin) -> None:
    settings = fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="true")
    hidden = {static_origin.url: "<origin>", __version__: "<version>"}
    async with serving(settings, embedding=model_of(WordEncoder())) as http:
        assert (await http.get("/api/docs/search", params={"q": "*", "limit": 25})).status_code == 200
        for _ in range(600):
            sites = json.loads(await health(http))["providers"]["mkdocs"]["sites"]
            if all(site.get("semantic") != "pending" for site in sites.values()):
                break
            await asyncio.sleep(0.05)
        pinned("health-semantic", await health(http), hidden)


def test_warm_prints_each_sites_outcome(static_origin: StaticOrigin, azurite: Azurite, blob_container: str) -> None:
    env = {
        **os.environ,
        **fixture_env(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Cache__Container=blob_container),
        "AzureWebJobsStorage": azurite.connection_string,
    }
    hidden = {static_origin.url: "<origin>", blob_container: "<container>"}
    for name in ("warm-first", "warm-again"):
        warm = subprocess.run(
            [sys.executable, "-m", "shared", "warm"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert warm.returncode == 0, warm.stderr
        pinned(name, warm.stdout, hidden, compact=False)


async def test_the_hooks_run_reports(static_origin: StaticOrigin, azurite: Azurite, blob_container: str) -> None:
    settings = fixture_settings(
        static_origin.url,
        {"AzureWebJobsStorage": azurite.connection_string},
        SearchIndexOverrides=ROOTED_OVERRIDE,
        Cache__Container=blob_container,
        Refresh__Tokens=TOKEN,
    )
    hidden = {static_origin.url: "<origin>", __version__: "<version>"}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with serving(settings) as first, serving(settings) as second:
        done = await first.post(HOOK, json={"sites": ["alpha", "missing-docs"]}, headers=headers)
        assert done.status_code == 200, done.text
        pinned("refresh-done", done.text, hidden)
        later = await first.post(HOOK, json={"sites": ["beta-docs"]}, headers={**headers, "Prefer": "respond-async"})
        assert later.status_code == 202, later.text
        pinned("refresh-accepted", later.text, hidden)
        location = later.headers["Location"]
        for _ in range(600):
            if (await first.get(location, headers=headers)).json()["status"] == "done":
                break
            await asyncio.sleep(0.05)
        for _ in range(600):
            recorded = await second.get(location, headers=headers)  # from the store: another instance's run
            if recorded.status_code == 200:
                break
            await asyncio.sleep(0.05)
        assert recorded.status_code == 200, recorded.text
        pinned("refresh-recorded", recorded.text, hidden)
        pinned("refresh-live", (await first.get(location, headers=headers)).text, hidden)
