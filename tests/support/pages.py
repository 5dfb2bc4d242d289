"""Hand-built site indexes for ranker tests: pages and sections the way index.py yields them."""

from __future__ import annotations

from shared.providers.mkdocs.indexes.index import IndexEntry, SiteIndex
from shared.providers.mkdocs.indexes.kinds import PathWeights
from shared.providers.mkdocs.scoring.ranking import Ranker


def page(path: str, title: str, text: str = "", *sections: tuple[str, str, str], boost: float = 1) -> list[IndexEntry]:
    """A page entry and its (anchor, title, text) sections, the way index.py yields them."""
    entries = [IndexEntry(path, path, None, title, title, text, boost)]
    for anchor, section_title, section_text in sections:
        entries.append(IndexEntry(f"{path}#{anchor}", path, anchor, section_title, title, section_text, boost))
    return entries


def ranker(*pages: list[IndexEntry], site: str = "docs", kinds: PathWeights | None = None) -> Ranker:
    return Ranker.build(SiteIndex.build(site, [entry for entries in pages for entry in entries]), kinds)


FILLER = [
    page(f"filler/{n}/", f"Filler page {n}", f"general words about topic{n} and configuration of things")
    for n in range(12)
]
"""Unrelated pages, so that a test's own terms are rare enough to carry weight."""
