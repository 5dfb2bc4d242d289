"""Hits to results, as the spec maps them: blob paths to published URLs, MkDocs-resolvable locations, previews from
the content field with the description only as a fallback, the reranker's score first, missing fields tolerated."""

from __future__ import annotations

import base64

import pytest

from shared.providers.ai_search.mapping import Fields, Mapper, clean_path, document_path, page_url, score, strip_prefix

BLOB = "https://acct.blob.core.windows.net/docs"
BASE = "https://docs.saif.com"
MAPPER = Mapper(Fields(), BASE, "forge")


def hit(path: str, **fields: object) -> dict[str, object]:
    return {"metadata_storage_path": path, "@search.score": 1.5, **fields}


@pytest.mark.parametrize(
    ("path", "location", "url", "site"),
    [
        (f"{BLOB}/forge/guide/install.md", "guide/install", f"{BASE}/forge/guide/install.md", "forge"),
        (f"{BLOB}/forge/guide/install.html", "guide/install", f"{BASE}/forge/guide/install.html", "forge"),
        (f"{BLOB}/forge/guide/install/index.html", "guide/install", f"{BASE}/forge/guide/install/", "forge"),
        (f"{BLOB}/forge/index.html", "", f"{BASE}/forge/", "forge"),
        (f"{BLOB}/forge/index.md", "", f"{BASE}/forge/index.md", "forge"),
        (f"{BLOB}/Forge/FAQ.md", "FAQ", f"{BASE}/Forge/FAQ.md", "Forge"),
        (
            f"{BLOB}/cloud-foundations/networking/hub/index.html",
            "cloud-foundations/networking/hub",
            f"{BASE}/cloud-foundations/networking/hub/",
            "cloud-foundations",
        ),
        (
            f"{BLOB}/cloud-foundations/index.html",
            "cloud-foundations",
            f"{BASE}/cloud-foundations/",
            "cloud-foundations",
        ),
        (f"{BLOB}/forge/my%20page.md", "my page", f"{BASE}/forge/my%20page.md", "forge"),
        (f"{BASE}/forge/guide/install/", "guide/install", f"{BASE}/forge/guide/install/", "forge"),
        ("forge/guide/install.md", "guide/install", f"{BASE}/forge/guide/install.md", "forge"),
    ],
)
def test_blob_paths_become_published_urls_and_locations_mkdocs_resolves(
    path: str, location: str, url: str, site: str
) -> None:
    result = MAPPER.result(hit(path, title="T", content="body"), "install")

    assert result is not None
    assert (result.location, result.url, result.site, result.provider) == (location, url, site, "ai_search")


def test_an_empty_prefix_strips_nothing_and_the_forge_site_is_then_qualified() -> None:
    mapper = Mapper(Fields(), BASE + "/", "")

    result = mapper.result(hit(f"{BLOB}/forge/guide/install.md"), "q")

    assert result is not None and result.location == "forge/guide/install"
    assert result.url == f"{BASE}/forge/guide/install.md"


def test_a_key_the_indexer_base64_encoded_is_decoded_first() -> None:
    url = f"{BLOB}/forge/guide/install.md"
    plain = base64.urlsafe_b64encode(url.encode()).decode()
    token = plain.rstrip("=") + str(plain.count("="))  # the .NET UrlTokenEncode form the indexer defaults to

    assert document_path(plain, BASE) == document_path(token, BASE) == "forge/guide/install.md"


@pytest.mark.parametrize(
    "path", ["", "   ", f"{BLOB}/", f"{BLOB}/forge/../secrets.md", "forge\\guide.md", "forge/./x.md", None, 42]
)
def test_a_hit_without_a_usable_path_is_skipped(path: object) -> None:
    assert MAPPER.result({"metadata_storage_path": path, "title": "T", "content": "text"}, "q") is None


def test_the_preview_is_cut_from_the_content_around_the_query_and_collapses_whitespace() -> None:
    content = "Skip to content\n\n   Navigation  " + "filler words here " * 30 + "\n\tRotate the signing key daily."

    result = MAPPER.result(hit(f"{BLOB}/forge/a.html", content=content, description="Site-wide blurb."), "rotate key")

    assert result is not None
    assert "Rotate the signing key daily." in result.preview_text
    assert result.preview_text.startswith("...") and "\n" not in result.preview_text and "  " not in result.preview_text
    assert "Site-wide blurb" not in result.preview_text


@pytest.mark.parametrize("content", [None, "", "   \n\t ", 17])
def test_the_description_is_the_preview_only_when_the_content_gives_none(content: object) -> None:
    description = "  The   indexed\n description. "

    result = MAPPER.result(hit(f"{BLOB}/forge/a.html", content=content, description=description), "q")

    assert result is not None and result.preview_text == "The indexed description."


def test_missing_fields_give_an_empty_preview_and_a_title_from_the_path() -> None:
    result = MAPPER.result({"metadata_storage_path": f"{BLOB}/forge/guide/install/index.html"}, "q")
    root = MAPPER.result({"metadata_storage_path": f"{BLOB}/forge/index.html"}, "q")

    assert result is not None and (result.title, result.preview_text, result.score) == ("install", "", 0.0)
    assert root is not None and root.title == "forge"


def test_renamed_fields_are_read_instead_of_the_defaults() -> None:
    mapper = Mapper(Fields(url="path", content="body", title="heading", description="summary"), BASE, "forge")
    renamed = {"path": f"{BLOB}/forge/x.md", "heading": "Heading", "body": "", "summary": "Summary", "title": "No"}

    result = mapper.result(renamed, "q")

    assert result is not None and (result.title, result.preview_text) == ("Heading", "Summary")
    assert mapper.result({"metadata_storage_path": f"{BLOB}/forge/x.md"}, "q") is None
    assert Fields(url="u", content="c", title="c", description="d").selected() == ["u", "c", "d"]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"@search.score": 7.25, "@search.reranker_score": 2.91234}, 2.9123),
        ({"@search.score": 7.25, "@search.reranker_score": None}, 7.25),
        ({"@search.score": 3}, 3.0),
        ({"@search.score": float("nan")}, 0.0),
        ({"@search.score": "high"}, 0.0),
        ({"@search.score": True}, 0.0),
        ({}, 0.0),
    ],
)
def test_the_score_is_the_rerankers_when_present_else_the_search_score(
    fields: dict[str, object], expected: float
) -> None:
    assert score(fields) == expected


def test_twins_of_one_page_fill_one_slot_at_the_better_rank_and_the_limit_counts_results() -> None:
    hits = [
        hit(f"{BLOB}/forge/guide/install.md", title="Install (md)"),
        hit(f"{BLOB}/forge/ops/backup.html", title="Backup"),
        hit(f"{BLOB}/forge/guide/install/index.html", title="Install"),
        {"title": "no path"},
        hit(f"{BLOB}/forge/faq.html", title="FAQ"),
        hit(f"{BLOB}/forge/extra.html", title="Extra"),
    ]

    results = MAPPER.results(hits, "q", limit=3)

    assert [(r.location, r.title) for r in results] == [
        ("guide/install", "Install (md)"),
        ("ops/backup", "Backup"),
        ("faq", "FAQ"),
    ]


def test_path_helpers() -> None:
    assert clean_path("a/b/INDEX.HTML") == "a/b"
    assert clean_path("index.md") == ""
    assert clean_path("a/reindex.md") == "a/reindex"
    assert strip_prefix("forge", "forge") == ""
    assert strip_prefix("forgery/x", "forge") == "forgery/x"
    assert strip_prefix("FORGE/x", "/forge/") == "x"
    assert page_url(BASE, "index.html") == f"{BASE}/"
    assert page_url(BASE, "a b/c#d.md") == f"{BASE}/a%20b/c%23d.md"


def test_a_hit_with_a_malformed_url_is_skipped_not_fatal() -> None:
    from shared.providers.ai_search.mapping import document_path

    assert document_path("https://[acct.blob.core.windows.net/c/forge/a.md", "https://docs.saif.com") is None
