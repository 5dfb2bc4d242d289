"""HTML pages to Markdown, the HTML sniffing that rejects fake raw Markdown, and the front matter."""

from __future__ import annotations

import pytest

from shared.markdown import with_front_matter
from shared.providers.mkdocs.fetching.convert import html_to_markdown, looks_like_html

PAGE = """<!doctype html><html><head><title>T</title><script>var x = 1;</script></head><body>
<header class="md-header">Skip to content</header>
<nav class="md-nav">Home Guide FAQ</nav>
<div class="md-content"><article class="md-content__inner md-typeset">
<h1 id="ingress">Ingress Configuration<a class="headerlink" href="#ingress">&para;</a></h1>
<p>Use <code>--insecure</code> with <strong>care</strong>.</p>
<h2 id="nginx">NGINX<a class="headerlink" href="#nginx">&para;</a></h2>
<div class="highlight"><pre><span></span><code class="language-yaml">kind: Ingress
metadata:
  name: argocd
</code></pre></div>
<ul><li>one</li><li>two</li></ul>
</article></div>
<footer class="md-footer">Made with Material</footer></body></html>"""


def test_article_body_becomes_markdown_without_theme_chrome() -> None:
    markdown = html_to_markdown(PAGE)
    assert markdown.startswith("# Ingress Configuration\n")
    assert "## NGINX" in markdown
    assert "`--insecure`" in markdown and "**care**" in markdown
    assert "```yaml\nkind: Ingress" in markdown
    assert "- one\n- two" in markdown
    for chrome in ("Skip to content", "Home Guide FAQ", "Made with Material", "¶", "var x"):
        assert chrome not in markdown


def test_page_without_text_converts_to_empty() -> None:
    assert html_to_markdown("<html><body><article class='md-content__inner'> </article></body></html>") == ""


def test_html_is_recognised_by_content_or_type() -> None:
    assert looks_like_html("  <!DOCTYPE html><html>")
    assert looks_like_html("<html lang=en>")
    assert looks_like_html("# Title", "text/html; charset=utf-8")
    assert not looks_like_html("# Title\n<div>inline html in markdown</div>", "text/markdown")


def test_front_matter_is_prefixed_or_merged_into_the_pages_own() -> None:
    when = "2026-01-02T03:04:05Z"
    plain = with_front_matter("# Page\n", {"source": "http://o/forge/faq/", "site": "forge", "retrieved": when})
    assert plain == "---\nsource: http://o/forge/faq/\nsite: forge\nretrieved: 2026-01-02T03:04:05Z\n---\n\n# Page\n"
    merged = with_front_matter(
        "---\nmoved_from:\n- a/\n---\n# Page\n", {"source": "s", "site": "forge", "retrieved": when}
    )
    assert merged == "---\nsource: s\nsite: forge\nretrieved: 2026-01-02T03:04:05Z\nmoved_from:\n- a/\n---\n# Page\n"


def test_pages_too_large_dense_or_deep_are_refused_before_parsing() -> None:
    from shared.errors import Unconvertible
    from shared.providers.mkdocs.fetching.convert import MAX_CONVERT_CHARS, convert
    from shared.providers.mkdocs.fetching.markup import MAX_DEPTH, MAX_TAGS

    refused = {
        "x" * (MAX_CONVERT_CHARS + 1): "the page is larger than 1,000,000 characters",
        "<div>" * (MAX_DEPTH + 1) + "x" + "</div>" * (MAX_DEPTH + 1): f"the page nests elements more than {MAX_DEPTH}",
        "<" * (MAX_TAGS + 1): "the page has more than 100,000 '<'",
    }
    for page, reason in refused.items():
        with pytest.raises(Unconvertible, match=reason):
            convert(page)
    siblings = "<div><p>a<br>b<img src=x><input/></p></div>" * 5_000  # wide, void and self-closed: shallow
    assert convert(siblings).startswith("a\nb")
    assert convert("<div>" * MAX_DEPTH + "deep" + "</div>" * MAX_DEPTH) == "deep\n"


def test_markup_that_never_closes_is_read_as_the_text_it_is() -> None:
    from shared.providers.mkdocs.fetching.convert import convert

    page = "<article class='md-content__inner'><p>if a < b and c<2> d <a then <!-- no end <script x=1 <![CDATA[ y</p>"
    assert convert(page) == "if a < b and c<2> d <a then <!-- no end <script x=1 <![CDATA[ y\n"


def test_front_matter_with_crlf_is_merged_and_its_own_source_and_site_give_way() -> None:
    page = "---\r\ntitle: Install\r\nsource: stale.md\r\nsite:\r\n  - old\r\ntags: [a]\r\n---\r\n# Install\r\n"
    merged = with_front_matter(page, {"source": "https://x/a/", "site": "alpha", "retrieved": "2026-01-02T00:00:00Z"})

    assert merged.count("---") == 2 and merged.startswith("---\nsource: https://x/a/\nsite: alpha\n")
    header = merged.split("---")[1]
    assert header.count("source:") == 1 and header.count("site:") == 1 and "  - old" not in header
    assert "title: Install" in header and "tags: [a]" in header and "retrieved: 2026-01-02T00:00:00Z" in header
    assert merged.endswith("# Install\r\n")
    plain = with_front_matter("# Page\n", {"source": "s", "site": "t", "retrieved": "2026-01-02T00:00:00Z"})
    assert plain == "---\nsource: s\nsite: t\nretrieved: 2026-01-02T00:00:00Z\n---\n\n# Page\n"


def test_raw_markdown_that_includes_other_files_is_not_the_page() -> None:
    from shared.providers.mkdocs.fetching.convert import includes_files

    assert includes_files("# Settings\n\n```yaml\n{!docs/operator-manual/argocd-cm.yaml!}\n```\n")
    assert not includes_files("# Plain\n\nA set {!not closed and a dict {'a': 1}.\n")


def test_a_blank_line_before_the_closing_marker_is_the_marker_s_own_line_break() -> None:
    page = "---\ntitle: Deep Links\n\ncreation-date: 2022-08-01\n\n---\n\n# Deep Links\n"
    merged = with_front_matter(page, {"source": "s"})
    assert merged == "---\nsource: s\ntitle: Deep Links\n\ncreation-date: 2022-08-01\n---\n\n# Deep Links\n"
