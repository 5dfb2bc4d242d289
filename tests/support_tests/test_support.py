"""The test support itself: the static origin, Azurite, uvicorn in a thread, and the built fixture origin."""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from pathlib import Path

import httpx
import pytest
from azure.storage.blob import BlobServiceClient
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from tests.support.sites import (
    DEFAULT_SITE,
    HTML_ONLY_PAGE,
    PHANTOM_PAGE,
    PUBLISHED_SITES,
    ROOTED_SITE,
    UNPUBLISHED_SITE,
    fixture_env,
)
from tests.support.uvicorn_server import UvicornServer
from tools.azurite import Azurite, AzuriteError, find_azurite
from tools.build_origin import build_site
from tools.static_origin import StaticOrigin

ROOT = Path(__file__).resolve().parents[2]


def _index(origin: Path, site: str) -> list[dict]:
    return json.loads((origin / site / "search" / "search_index.json").read_text())["docs"]


def _page_entry(entries: list[dict], location: str) -> dict:
    return next(entry for entry in entries if entry["location"] == location)


# -- StaticOrigin


def test_static_origin_serves_mkdocs_output_like_a_static_host(static_origin: StaticOrigin) -> None:
    with httpx.Client(base_url=static_origin.url) as client:
        page = client.get("/alpha/guide/install/")
        markdown = client.get("/alpha/guide/install.md")
        no_slash = client.get("/alpha/guide/install")
        missing = client.get("/alpha/nope.md")
        head = client.head("/alpha/guide/install.md")

    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<h1" in page.text
    assert markdown.headers["content-type"] == "text/markdown; charset=utf-8"
    assert markdown.text.startswith("# Install the agent")
    assert (no_slash.status_code, no_slash.headers["location"]) == (301, "/alpha/guide/install/")
    assert missing.status_code == 404
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["content-length"]) == len(markdown.content)


def test_static_origin_never_serves_outside_its_directory(static_origin: StaticOrigin) -> None:
    with httpx.Client(base_url=static_origin.url) as client:
        response = client.get("/alpha/%2e%2e/%2e%2e/%2e%2e/etc/passwd")
    assert response.status_code == 404


def test_conditional_requests_answer_304_until_the_file_changes(origin_copy: Path) -> None:
    index = "/alpha/search/search_index.json"
    with StaticOrigin(origin_copy) as origin, httpx.Client(base_url=origin.url) as client:
        first = client.get(index)
        etag, last_modified = first.headers["etag"], first.headers["last-modified"]
        by_etag = client.get(index, headers={"If-None-Match": etag})
        by_date = client.get(index, headers={"If-Modified-Since": last_modified})
        stale_etag_wins = client.get(index, headers={"If-None-Match": '"other"', "If-Modified-Since": last_modified})

        target = origin_copy / index.lstrip("/")
        target.write_text(target.read_text().replace("Alpha", "Alpha!"))
        os.utime(target, (target.stat().st_atime, target.stat().st_mtime + 5))
        changed = client.get(index, headers={"If-None-Match": etag})

    assert first.status_code == 200
    assert (by_etag.status_code, by_etag.content, by_etag.headers["etag"]) == (304, b"", etag)
    assert by_date.status_code == 304
    assert stale_etag_wins.status_code == 200
    assert changed.status_code == 200 and changed.headers["etag"] != etag


def test_every_request_is_recorded_with_its_headers_and_status(static_origin: StaticOrigin) -> None:
    with httpx.Client(base_url=static_origin.url) as client:
        client.get("/alpha/faq.md?x=1", headers={"If-None-Match": '"abc"'})
        client.get("/alpha/missing.md")

    first, second = static_origin.requests
    assert (first.method, first.path, first.target, first.status) == ("GET", "/alpha/faq.md", "/alpha/faq.md?x=1", 200)
    assert first.header("if-none-match") == '"abc"'
    assert first.header("Host") == f"127.0.0.1:{static_origin.port}"
    assert (second.path, second.status) == ("/alpha/missing.md", 404)
    assert static_origin.paths() == ["/alpha/faq.md", "/alpha/missing.md"]
    assert len(static_origin.requests_for("/alpha/faq.md")) == 1
    static_origin.clear_requests()
    assert static_origin.requests == []


def test_failures_can_be_injected_per_path_and_for_a_number_of_requests(static_origin: StaticOrigin) -> None:
    static_origin.fail("/alpha/faq.md", 500, times=1)
    static_origin.respond("/alpha/guide.md", body="<!doctype html><html>not markdown</html>", content_type="text/html")
    static_origin.redirect("/alpha/ops/backup.md", "http://elsewhere.invalid/backup.md")
    with httpx.Client(base_url=static_origin.url) as client:
        failed = client.get("/alpha/faq.md")
        recovered = client.get("/alpha/faq.md")
        custom = client.get("/alpha/guide.md")
        custom_again = client.get("/alpha/guide.md", headers={"If-None-Match": custom.headers["etag"]})
        redirected = client.get("/alpha/ops/backup.md")
        static_origin.reset()
        restored = client.get("/alpha/guide.md")

    assert failed.status_code == 500
    assert recovered.status_code == 200 and recovered.text.startswith("# Alpha FAQ")
    assert (custom.status_code, custom.headers["content-type"]) == (200, "text/html")
    assert custom.text.startswith("<!doctype html>")
    assert custom_again.status_code == 304
    assert (redirected.status_code, redirected.headers["location"]) == (302, "http://elsewhere.invalid/backup.md")
    assert restored.text.startswith("# User guide")


def test_a_delayed_response_times_out_the_client(static_origin: StaticOrigin) -> None:
    static_origin.respond("/slow", body=b"late", delay=5)
    with httpx.Client(base_url=static_origin.url, timeout=0.2) as client, pytest.raises(httpx.ReadTimeout):
        client.get("/slow")
    assert static_origin.paths() == ["/slow"]


def test_stopping_takes_the_origin_down_and_restart_brings_it_back_on_the_same_port(built_origin: Path) -> None:
    with StaticOrigin(built_origin) as origin, httpx.Client(base_url=origin.url) as client:
        port = origin.port
        assert client.get("/alpha/faq.md").status_code == 200  # leaves a keep-alive connection open
        origin.stop()
        with pytest.raises(httpx.TransportError):
            client.get("/alpha/faq.md")
        origin.restart()
        assert origin.port == port
        assert client.get("/alpha/faq.md").status_code == 200


def test_an_empty_origin_serves_nothing_and_records_what_reached_it(outside_host: StaticOrigin) -> None:
    response = httpx.get(outside_host.url_for("/alpha/faq.md"))
    assert response.status_code == 404
    assert outside_host.paths() == ["/alpha/faq.md"]


# -- Azurite


def test_azurite_round_trips_a_blob_with_the_real_sdk(azurite: Azurite, blob_container: str) -> None:
    assert azurite.blob_endpoint == f"http://127.0.0.1:{azurite.port}/devstoreaccount1"
    with BlobServiceClient.from_connection_string(azurite.connection_string) as service:
        container = service.create_container(blob_container)
        container.upload_blob("alpha-docs-search-index.json", b'{"docs": []}', overwrite=True)
        blob = container.get_blob_client("alpha-docs-search-index.json")
        assert blob.download_blob().readall() == b'{"docs": []}'
        assert blob.get_blob_properties().etag


def test_a_missing_azurite_names_the_set_up_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(AzuriteError, match="npm ci"):
        find_azurite(tmp_path)


def test_azurite_stops_its_whole_process_group() -> None:
    with Azurite() as emulator:
        endpoint = emulator.blob_endpoint
        process = emulator._process
        assert process is not None
        assert httpx.get(f"{endpoint}?comp=list").status_code in (400, 403)
    assert process.poll() is not None
    with pytest.raises(ProcessLookupError):
        os.killpg(process.pid, 0)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{endpoint}?comp=list")


# -- UvicornServer


def test_uvicorn_server_serves_an_asgi_app_on_a_free_port_and_stops() -> None:
    app = Starlette(routes=[Route("/ping", lambda request: PlainTextResponse("pong"))])
    with UvicornServer(app) as server:
        url, thread_name = server.url, f"uvicorn-{server.port}"
        assert httpx.get(f"{url}/ping").text == "pong"
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/ping")
    assert thread_name not in {thread.name for thread in threading.enumerate()}


def test_uvicorn_server_reports_a_failed_start_up() -> None:
    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            await receive()
            await send({"type": "lifespan.startup.failed", "message": "no settings"})

    with pytest.raises(RuntimeError, match="start-up"):
        UvicornServer(app, log_level="critical").start()


def test_the_real_app_serves_the_fixture_origin(static_origin: StaticOrigin) -> None:
    from shared.api import create_app
    from shared.settings import load_settings

    app = create_app(load_settings(fixture_env(static_origin.url)))
    with UvicornServer(app) as server:
        response = httpx.get(f"{server.url}/api/docs/get", params={"location": "guide"}, timeout=10)

    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["site"], body["location"].strip("/")) == ("alpha", "guide")
    assert "# User guide" in body["content"]
    assert "/alpha/guide.md" in static_origin.paths()


# -- the built fixture origin


def test_fixture_origin_publishes_markdown_twins_and_index_siblings(built_origin: Path) -> None:
    alpha = built_origin / DEFAULT_SITE
    assert (alpha / "guide.md").read_text() == (alpha / "guide" / "index.md").read_text()
    assert (alpha / "release-notes.md").is_file() and (alpha / "guide" / "install.md").is_file()
    assert (alpha / "index.md").is_file() and not (built_origin / f"{DEFAULT_SITE}.md").exists()
    assert (alpha / "CONTRIBUTING.md").is_file() and (alpha / "CONTRIBUTING" / "index.html").is_file()
    assert not (alpha / "assets").exists()


def test_fixture_origin_carries_its_messes(built_origin: Path) -> None:
    alpha = _index(built_origin, DEFAULT_SITE)
    assert _page_entry(alpha, "guide/configuration/")["boost"] == 2
    assert _page_entry(alpha, "release-notes/")["boost"] == 0.5
    assert _page_entry(alpha, "reference/stub/")["text"] == ""
    assert _page_entry(alpha, f"{PHANTOM_PAGE}/")
    assert not (built_origin / DEFAULT_SITE / PHANTOM_PAGE).exists()
    assert not (built_origin / DEFAULT_SITE / f"{PHANTOM_PAGE}.md").exists()
    assert (built_origin / DEFAULT_SITE / HTML_ONLY_PAGE / "index.html").is_file()
    assert not (built_origin / DEFAULT_SITE / f"{HTML_ONLY_PAGE}.md").exists()
    assert "moved_from:" in (built_origin / DEFAULT_SITE / "ops" / "backup.md").read_text()
    assert _page_entry(_index(built_origin, "beta-docs"), "gamma-docs/page/")
    assert _page_entry(_index(built_origin, "gamma-docs"), "gamma-docs/exporters/metrics/")

    assert (built_origin / "search" / "search_index.json").is_file()
    assert not (built_origin / ROOTED_SITE / "search" / "search_index.json").exists()
    rooted = json.loads((built_origin / "search" / "search_index.json").read_text())["docs"]
    assert _page_entry(rooted, "deploy/")
    assert not (built_origin / UNPUBLISHED_SITE).exists()
    assert {p.name for p in built_origin.iterdir() if p.is_dir()} == {*PUBLISHED_SITES, "search"}


def test_fixture_env_configures_every_site_and_extra_keys() -> None:
    env = fixture_env("http://127.0.0.1:1", Search__MinScore="0.5")
    assert env == {
        "Forge__Documentation__Origin": "http://127.0.0.1:1",
        "Forge__Documentation__Sites": "alpha,beta-docs,gamma-docs,rooted-docs,missing-docs",
        "Forge__Documentation__DefaultSite": "alpha",
        "Forge__Documentation__Search__MinScore": "0.5",
        "Forge__Documentation__Search__Semantic": "false",
    }
    assert (
        fixture_env("http://127.0.0.1:1", Search__Semantic="true")["Forge__Documentation__Search__Semantic"] == "true"
    )


def test_environment_is_hermetic() -> None:
    assert not [name for name in os.environ if name.lower().startswith(("forge__", "azurewebjobsstorage"))]


# -- the copy-Markdown hook and the project's own docs


def test_hook_copies_sources_and_adds_siblings_only_where_no_source_exists() -> None:
    spec = importlib.util.spec_from_file_location("copy_markdown", ROOT / "docs" / "hooks" / "copy_markdown.py")
    assert spec and spec.loader
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)

    copies = hook.markdown_copies(["index.md", "api/index.md", "api/get.md", "ops.md", "ops/index.md"])

    assert copies == {
        "index.md": "index.md",
        "api/index.md": "api/index.md",
        "api.md": "api/index.md",
        "api/get.md": "api/get.md",
        "ops.md": "ops.md",
        "ops/index.md": "ops/index.md",
    }


def test_project_docs_build_into_an_origin_site_and_skip_unchanged_rebuilds(tmp_path: Path) -> None:
    site = tmp_path / "origin" / "docs"
    assert build_site(ROOT / "mkdocs.yml", site) is True
    assert build_site(ROOT / "mkdocs.yml", site) is False

    assert (site / "search" / "search_index.json").is_file()
    assert (site / "how-it-works.md").read_text() == (site / "how-it-works" / "index.md").read_text()
    assert (site / "api.md").is_file() and (site / "api" / "get.md").is_file()
    assert not (site / "hooks").exists() and not (site / "overrides").exists()
    assert not (site / "index.md").with_name("docs.md").exists()
    # The spec's "Download Markdown source" action (docs/overrides/partials/actions.html), relative to the page.
    action = 'href="{}" title="Download Markdown source"'
    assert action.format("../semantic.md") in (site / "how-it-works" / "semantic" / "index.html").read_text()
    assert action.format("index.md") in (site / "how-it-works" / "index.html").read_text()
    assert (site / "how-it-works" / "semantic.md").is_file() and (site / "how-it-works" / "index.md").is_file()
