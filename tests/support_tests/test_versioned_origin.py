"""The versioned and Zensical fixture origin: what the real mike and zensical wrote, as the README promises."""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path

import pytest

from tests.support.versioned import (
    BAD_VERSIONED_SITES,
    CHANGED_PAGE,
    CHANGED_TEXT,
    DEFAULT_VERSION,
    LATEST_ALIAS,
    NEW_PAGE,
    VERSIONED_FIXTURE,
    VERSIONED_SITE,
    VERSIONS,
    ZENSICAL_FIXTURE,
    ZENSICAL_SITE,
    build_versioned_origin,
)

REDIRECT = re.compile(r'<meta http-equiv="refresh" content="1; url=([^"]+)"')


@pytest.fixture(scope="module")
def origin() -> Path:
    return build_versioned_origin()


def _redirect_target(page: Path, url_path: str) -> str:
    match = REDIRECT.search(page.read_text())
    assert match, f"{page} is not a redirect page"
    return posixpath.normpath(posixpath.join(url_path, match.group(1))) + "/"


def _locations(index: Path) -> set[str]:
    return {entry["location"] for entry in json.loads(index.read_text())["docs"]}


def test_versions_json_lists_2_1_as_latest_then_2_0(origin: Path) -> None:
    versions = json.loads((origin / VERSIONED_SITE / "versions.json").read_text())

    assert versions == [
        {"version": "2.1", "title": "2.1", "aliases": [LATEST_ALIAS]},
        {"version": "2.0", "title": "2.0", "aliases": []},
    ]
    assert tuple(entry["version"] for entry in versions) == VERSIONS


def test_root_redirects_to_the_latest_alias(origin: Path) -> None:
    assert _redirect_target(origin / VERSIONED_SITE / "index.html", "/vdocs/") == f"/vdocs/{LATEST_ALIAS}/"


def test_every_version_folder_has_its_index_and_markdown_next_to_its_pages(origin: Path) -> None:
    for version in VERSIONS:
        folder = origin / VERSIONED_SITE / version
        assert (folder / "search" / "search_index.json").is_file()
        assert (folder / "guide" / "install" / "index.html").is_file()
        assert (folder / "guide.md").read_text() == (folder / "guide" / "index.md").read_text()
        source = VERSIONED_FIXTURE / version / f"{CHANGED_PAGE}.md"
        assert (folder / f"{CHANGED_PAGE}.md").read_text() == source.read_text()
        assert not (folder / "assets").exists()


def test_2_0_lacks_the_new_page_and_says_its_own_install_text(origin: Path) -> None:
    site = origin / VERSIONED_SITE
    old, new = _locations(site / "2.0/search/search_index.json"), _locations(site / "2.1/search/search_index.json")

    assert new - old == {f"{NEW_PAGE}/", f"{NEW_PAGE}/#turn-it-on", "guide/install/#run-the-installer-script"}
    assert not (site / "2.0" / f"{NEW_PAGE}.md").exists() and not (site / "2.0" / NEW_PAGE).exists()
    assert (site / "2.1" / f"{NEW_PAGE}.md").is_file()
    for version, text in CHANGED_TEXT.items():
        other = next(v for v in VERSIONS if v != version)
        assert text in (site / version / f"{CHANGED_PAGE}.md").read_text()
        assert text in (site / version / CHANGED_PAGE / "index.html").read_text()
        assert text not in (site / other / f"{CHANGED_PAGE}.md").read_text()


def test_the_latest_alias_is_redirect_pages_to_the_default_version(origin: Path) -> None:
    alias = origin / VERSIONED_SITE / LATEST_ALIAS
    pages = sorted(page.relative_to(alias).as_posix() for page in alias.rglob("*") if page.is_file())
    version_pages = sorted(
        page.relative_to(alias.with_name(DEFAULT_VERSION)).as_posix()
        for page in alias.with_name(DEFAULT_VERSION).rglob("*.html")
    )

    assert pages == version_pages  # HTML redirects only: no search index, no Markdown, no sitemap
    target = _redirect_target(alias / CHANGED_PAGE / "index.html", f"/vdocs/{LATEST_ALIAS}/{CHANGED_PAGE}/")
    assert target == f"/vdocs/{DEFAULT_VERSION}/{CHANGED_PAGE}/"
    assert CHANGED_TEXT[DEFAULT_VERSION] in (origin / target.lstrip("/") / "index.html").read_text()


def test_zensical_writes_search_json_at_the_root_and_no_mkdocs_index(origin: Path) -> None:
    site = origin / ZENSICAL_SITE
    index = json.loads((site / "search.json").read_text())

    assert not (site / "search").exists()
    assert set(index) == {"config", "items"} and {"lang", "separator"} <= set(index["config"])
    assert all(set(item) == {"location", "level", "title", "text", "path", "tags"} for item in index["items"])
    pages = {item["location"]: item for item in index["items"] if "#" not in item["location"]}
    assert set(pages) == {
        "",
        "getting-started/",
        "getting-started/install/",
        "getting-started/first-run/",
        "operations/backup/",
        "operations/monitoring/",
    }
    assert pages["getting-started/install/"]["path"] == ["Getting started", "Install"]
    assert pages["getting-started/install/"]["title"] == "Install Zeta"
    assert pages["operations/backup/"]["tags"] == ["backup", "operations"]


def test_zensical_pages_have_their_markdown_next_to_them(origin: Path) -> None:
    site, docs = origin / ZENSICAL_SITE, ZENSICAL_FIXTURE / "docs"

    for source in docs.rglob("*.md"):
        relative = source.relative_to(docs)
        assert (site / relative).read_text() == source.read_text()
    assert (site / "getting-started.md").read_text() == (docs / "getting-started" / "index.md").read_text()
    assert not (site / "assets").exists()


def test_bad_versioned_sites_hold_only_their_versions_json(origin: Path) -> None:
    files = {site: [p.name for p in (origin / site).iterdir()] for site in BAD_VERSIONED_SITES}
    versions = {site: json.loads((origin / site / "versions.json").read_text()) for site in BAD_VERSIONED_SITES}

    assert files == {site: ["versions.json"] for site in BAD_VERSIONED_SITES}
    assert isinstance(versions["vbad-notlist"], dict)
    names = [entry["version"] for entry in versions["vbad-dup"]]
    assert len(names) > len(set(names))
    assert versions["vbad-dots"][0]["version"] == "../escape"
    assert versions["vbad-missing"] == [{"version": "1.0", "title": "1.0", "aliases": ["latest"]}]


def test_an_unchanged_origin_is_not_rebuilt(origin: Path) -> None:
    stamp = (origin / ".complete").stat().st_mtime_ns

    assert build_versioned_origin() == origin
    assert (origin / ".complete").stat().st_mtime_ns == stamp
