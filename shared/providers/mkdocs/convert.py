"""Turn a published MkDocs page into Markdown: the article body only, without theme chrome (pure).

Conversion is pure-Python parsing, about 1 s of CPU for the largest page of the sample corpus (250 KB) and
seconds more for tag-dense pages, so the provider runs it off the event loop, and `unconvertible` refuses what
would take too long or recurse too deep before any parsing starts.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup, Tag
from markdownify import MarkdownConverter

MAX_CONVERT_CHARS = 1_000_000
"""Pages longer than this are not converted: four times the largest page of the sample corpus."""
MAX_DEPTH = 256
"""Element nesting beyond this is not converted (the converter recurses per level; real pages stay under 40)."""
_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9-]*)[^>]*?(/?)>")
_VOID = frozenset(
    ("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr")
)
"""Elements with no end tag."""

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


def looks_like_html(body: str, content_type: str = "") -> bool:
    """True when a supposed Markdown response is really an HTML page (a soft 404 or a rendered page)."""
    if "text/html" in content_type.lower():
        return True
    head = body.lstrip()[:256].lower()
    return head.startswith(("<!doctype html", "<html", "<head", "<body"))


def unconvertible(page: str) -> str | None:
    """Why the page will not be converted (too large, nested too deep), or None; a cheap scan, no parsing."""
    if len(page) > MAX_CONVERT_CHARS:
        return f"the page is larger than {MAX_CONVERT_CHARS:,} characters"
    depth = 0
    for closing, name, self_closing in _TAG.findall(page):
        if closing:
            depth = max(0, depth - 1)
        elif not self_closing and name.lower() not in _VOID:
            depth += 1
            if depth > MAX_DEPTH:
                return f"the page nests elements more than {MAX_DEPTH} deep"
    return None


def html_to_markdown(page: str) -> str:
    """The page's main content as Markdown; empty when the page has no text."""
    soup = BeautifulSoup(page, "html.parser")
    root = next((found for selector in _CONTENT_SELECTORS if (found := soup.select_one(selector)) is not None), soup)
    for element in root.select(_CHROME):
        element.decompose()
    markdown = _CONVERTER.convert_soup(root)
    lines = [line.rstrip() for line in markdown.strip().splitlines()]
    return "\n".join(_squeeze_blank_lines(lines)) + "\n" if any(lines) else ""


def _squeeze_blank_lines(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return out
