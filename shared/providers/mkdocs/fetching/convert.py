"""Turn a published MkDocs page into Markdown: the article body only, without theme chrome or what is not shown
(pure).

Conversion is pure-Python parsing, about 1 s of CPU for the largest page of the sample corpus (250 KB) and
seconds more for tag-dense pages, so the provider runs all of it, the checks included, off the event loop. Before
any parser sees the page, `markup.scan` refuses what is too large, too dense or nested too deep, and escapes the
markup that never closes (on which the parser is quadratic): what reaches the parser is parsed in linear time.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup, Tag
from markdownify import MarkdownConverter

from shared.errors import Unconvertible
from shared.providers.mkdocs.fetching.markup import scan

MAX_CONVERT_CHARS = 1_000_000
"""Pages longer than this are not converted: four times the largest page of the sample corpus."""

_CONTENT_SELECTORS = ("article.md-content__inner", "div.md-content article", "[role=main]", "main", "body")
_CHROME = "a.headerlink, script, style, nav, header, footer, .md-source-file, .md-content__button, form, button"


def _code_language(element: Tag) -> str | None:
    code = element.find("code")
    classes = list(element.get("class") or []) + (list(code.get("class") or []) if isinstance(code, Tag) else [])
    for name in classes:
        if name.startswith("language-"):
            return name.removeprefix("language-")
    return None


_CONVERTER = MarkdownConverter(heading_style="ATX", bullets="-", code_language_callback=_code_language)


_INCLUDE = re.compile(r"\{![^{}!\n]{1,300}!\}")
"""A markdown-include directive (`{!docs/file.yaml!}`): what the build pastes in is not in the raw Markdown."""


def includes_files(markdown: str) -> bool:
    """True when the raw Markdown pulls other files in at build time, so only the published page is whole (16 of
    the sample corpus's pages do; their raw Markdown lacks the headings and text the index has)."""
    return "{!" in markdown and _INCLUDE.search(markdown) is not None


def looks_like_html(body: str, content_type: str = "") -> bool:
    """True when a supposed Markdown response is really an HTML page (a soft 404 or a rendered page)."""
    if "text/html" in content_type.lower():
        return True
    head = body.lstrip()[:256].lower()
    return head.startswith(("<!doctype html", "<html", "<head", "<body"))


def convert(page: str) -> str:
    """The page's main content as Markdown, after the checks and the scan that keep parsing linear in the page;
    Unconvertible when it is refused."""
    if len(page) > MAX_CONVERT_CHARS:
        raise Unconvertible(f"the page is larger than {MAX_CONVERT_CHARS:,} characters")
    safe = scan(page).html
    try:
        return html_to_markdown(safe)
    except RecursionError:
        raise Unconvertible("the page nests elements too deeply to convert") from None


def html_to_markdown(page: str) -> str:
    """The page's main content as Markdown; empty when the page has no text. `page` must have been through
    `markup.scan` (use `convert`)."""
    soup = BeautifulSoup(page, "html.parser")
    root = next((found for selector in _CONTENT_SELECTORS if (found := soup.select_one(selector)) is not None), soup)
    for element in root.select(_CHROME):
        element.decompose()
    for element in root.find_all(_not_shown):
        if not element.decomposed:
            element.decompose()
    markdown = _CONVERTER.convert_soup(root)
    lines = [line.rstrip() for line in markdown.strip().splitlines()]
    return "\n".join(_squeeze_blank_lines(lines)) + "\n" if any(lines) else ""


_UNSHOWN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)


def _not_shown(element: Tag) -> bool:
    """An element a reader of the page never sees (`hidden`, `aria-hidden="true"`, `display:none`): text that could
    carry instructions unseen, left out of the Markdown for every reader (`shared.safe_content`)."""
    if element.has_attr("hidden") or str(element.get("aria-hidden", "")).lower() == "true":
        return True
    return bool(_UNSHOWN_STYLE.search(str(element.get("style", ""))))


def _squeeze_blank_lines(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return out
