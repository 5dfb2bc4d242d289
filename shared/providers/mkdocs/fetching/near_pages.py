"""Pages near a location that resolved to nothing: what a miss offers as "did you mean" (pure, no I/O).

A mistyped, shortened or outdated location usually shares words with the page it meant: path segments, the leaf,
title words, or most of a misspelt word. Each site's pages are indexed once, on the first miss, by those words
and by the three-letter pieces of their leaf's words; a miss scores the pages that share any of them (rarer ones
weigh more, pieces less than whole words) and offers the best few. Never a silent guess: the miss stays a miss.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from urllib.parse import unquote

from shared.providers.mkdocs.indexes.index import SiteIndex, page_key

_WORD = re.compile(r"[^\W_]+")
MAX_SUGGESTIONS = 5
PIECE_WEIGHT = 0.35
"""A shared three-letter piece counts this much of a shared word: enough to bring `instal` to `install`."""
COMMON = 0.5
"""A token on more than this share of a site's pages says nothing about which page was meant."""


def words(text: str) -> list[str]:
    return [word.lower() for word in _WORD.findall(unquote(text))]


def pieces(word: str) -> set[str]:
    padded = f"^{word}$"
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def _tokens(path: str, title: str = "") -> dict[str, float]:
    """A location's tokens and their weights: its path's and title's words, and the pieces of its leaf's words."""
    key = page_key(path)
    found: dict[str, float] = {}
    for word in words(key.replace("/", " ")) + words(title):
        found[word] = 1.0
    for word in words(key.rsplit("/", 1)[-1]):
        for piece in pieces(word):
            found.setdefault("#" + piece, PIECE_WEIGHT)
    return found


def _leaf(path: str) -> frozenset[str]:
    return frozenset(words(page_key(path).rsplit("/", 1)[-1]))


LEAF_BONUS = 1.0
"""Added when every word of the location's leaf is in the page's leaf, and again when the two leaves are equal."""


@dataclass(slots=True)
class Suggester:
    """One site's pages indexed by the tokens a mistyped location may share with them."""

    paths: list[str]
    leaves: list[frozenset[str]]
    postings: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def build(cls, index: SiteIndex) -> Suggester:
        paths = [page.path for page in index.pages]
        postings: defaultdict[str, list[int]] = defaultdict(list)
        for number, page in enumerate(index.pages):
            for token in _tokens(page.path, page.title):
                postings[token].append(number)
        return cls(paths, [_leaf(path) for path in paths], dict(postings))

    def scored(self, location: str) -> list[tuple[float, str]]:
        """(score, page path) of the pages sharing a telling token with `location`, best first."""
        total = len(self.paths) or 1
        scores: defaultdict[int, float] = defaultdict(float)
        for token, weight in _tokens(location).items():
            pages = self.postings.get(token, [])
            if not pages or (len(pages) > COMMON * total and total > 4):
                continue
            rarity = math.log(1 + total / len(pages))
            for number in pages:
                scores[number] += weight * rarity
        leaf = _leaf(location)
        for number in scores:
            if leaf and leaf <= self.leaves[number]:
                scores[number] += LEAF_BONUS * (2 if leaf == self.leaves[number] else 1)
        best = sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))[:MAX_SUGGESTIONS]
        return [(score, self.paths[number]) for number, score in best]


def suggest(
    location: str, sites: list[tuple[str, Suggester]], *, limit: int = MAX_SUGGESTIONS
) -> list[tuple[str, str]]:
    """Up to `limit` (site, page path) nearest `location` across the sites, best first."""
    everything = [(score, site, path) for site, suggester in sites for score, path in suggester.scored(location)]
    everything.sort(key=lambda found: -found[0])
    return [(site, path) for _, site, path in everything[:limit]]
