"""A site built with Zensical (`search.json` at its root, no `search/search_index.json`), found without configuring
it: searched, read and listed in health beside an MkDocs site, over HTTP against the app under uvicorn, from an
origin the real `zensical` and `mike` built (`tests/support/versioned.py`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from shared.api import create_app
from shared.providers.mkdocs.lifecycle.refresh import published_sites
from tests.support.sites import fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tests.support.versioned import ZENSICAL_SITE
from tools.static_origin import StaticOrigin


@pytest.fixture
def server(versioned_origin: StaticOrigin) -> Iterator[UvicornServer]:
    settings = fixture_settings(versioned_origin.url, Sites=f"{ZENSICAL_SITE},vdocs", DefaultSite="vdocs")
    with UvicornServer(create_app(settings, embedding=None)) as running:
        yield running


def test_a_zensical_site_is_searched_and_read_with_its_navigation_trail(server: UvicornServer) -> None:
    found = httpx.get(
        server.url + "/api/docs/search", params={"q": "restore the journal snapshot", "site": ZENSICAL_SITE}
    ).json()
    top = found["results"][0]
    page = httpx.get(server.url + "/api/docs/get", params={"location": top["location"]}).json()
    health = httpx.get(server.url + "/api/health").json()

    assert found["sites"][ZENSICAL_SITE]["state"] == "searched"
    assert top["location"] == f"{ZENSICAL_SITE}/operations/backup/" and top["site"] == ZENSICAL_SITE
    assert top["breadcrumb"][:2] == ["Operations", "Backups"]  # the page's trail, then the section
    assert top["url"].endswith(f"/{ZENSICAL_SITE}/operations/backup/")
    assert page["resolution"]["reason"] == "resolved" and "zeta journal restore" in page["content"]
    assert page["content"].startswith("---\nsource: ") and "tags:\n  - backup" in page["content"]  # the raw Markdown
    sites = health["providers"]["mkdocs"]["sites"]
    assert sites[ZENSICAL_SITE]["indexFormat"] == "zensical"


def test_a_zensical_index_published_is_matched_to_its_site(versioned_origin: StaticOrigin, tmp_path: Path) -> None:
    settings = fixture_settings(versioned_origin.url, Sites=f"{ZENSICAL_SITE},vdocs", DefaultSite="vdocs")
    assert published_sites(settings, f"{ZENSICAL_SITE}/search.json") == [ZENSICAL_SITE]
    assert published_sites(settings, f"{ZENSICAL_SITE}/search/search_index.json") == [ZENSICAL_SITE]
