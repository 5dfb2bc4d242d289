"""Turn a published MkDocs page into Markdown: the article body only, without theme chrome (pure)."""

from __future__ import annotations

from bs4 import BeautifulSoup, Tag
from markdownify import MarkdownConverter

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
