"""The tuned numbers of the MkDocs ranking, in one frozen object a ranker is built with, and the score they make.

Every `Ranker` holds one `RankingParameters` (the service's is `DEFAULT`; a test or an experiment passes its own),
so the numbers that decide an order are read in one place. What each was chosen on is in `tools/evals/README.md`.

A page's score, the one scale sites are merged by and `Search__MinScore` is held to (`semantics.relevance_floor`):

    score = lexical * (1 + title coverage) * site fit * boost  +  credit
    ├── lexical = section_share * best section + (1 - section_share) * page: each a BM25F view (k1, page_fields,
    │             section_fields) over the most the query could score there, times the share it matched; ~[0, 1]
    ├── title coverage: the IDF share of the page title's written words that the query names, in [0, 1]
    ├── site fit = the mean, over the query's words, of share / (share + site_fit_half), where share is the part
    │              of the site's pages holding the word: in [0, 1), low on a site that only mentions the subject
    ├── boost = the page's `search.boost` times its page-kind weight (`kinds.py`, when the rule is in effect)
    └── credit = weight * (similarity - threshold) * min(search.boost, 1) * page-kind weight * say * length,
                 when the similarity passes the threshold and the site's embeddings are attached (`vectors.py`)
        ├── similarity = (1 - outline_share) * best entry's cosine, less its hub correction (hub_weight *
        │                its mean cosine with its hub_neighbours nearest entries over the site's median),
        │                + outline_share * the page outline's cosine
        ├── say = 1 - identifier_scale * the share of the query's tokens that are identifiers (no credit at 0 or less)
        └── length = min(1, balance_words / the query's distinct terms)

An unboosted page therefore scores in about [0, 2 + weight * (1 - threshold)). With embeddings and word pieces on
every searched site, the best `rerank_pages` are then ordered by score / best score + piece_weight * (MaxSim - best
MaxSim) (`pieces.py`), and keep the scores they had, best first.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RankingParameters:
    """The numbers a `Ranker` ranks with; where each enters the score is drawn in the module docstring."""

    k1: float = 1.2
    """BM25 term-frequency saturation, the usual value. With the two field lists, it decides the indexed views, so a
    prebuilt ranker (`artifact.py`) is only ever built with `DEFAULT`."""
    page_fields: tuple[tuple[float, float], ...] = ((3.0, 0.5), (2.0, 0.75), (1.0, 0.75))
    """(weight, length normalisation b) of a page's title, section headings and body: titles say what a page is."""
    section_fields: tuple[tuple[float, float], ...] = ((2.0, 0.5), (1.0, 0.75))
    """(weight, b) of a section's title and body."""
    section_share: float = 0.85
    """How much of the lexical score comes from the page's best section; the rest rewards evidence across the page."""
    site_fit_half: float = 0.05
    """The share of a site's pages holding a query word at which that word gives half the site fit."""
    identifier_scale: float = 10.0
    """How fast identifiers in a query take its semantic credit away: quoted names, pasted errors and attributes are
    matched exactly by terms, and the embedding, which knows them only vaguely, would pull up a general page."""
    balance_words: int = 8
    """The query length (distinct terms) up to which the semantic credit is whole. The term score is a share of what
    the whole query could score, so it shrinks as a question grows while a cosine does not; beyond this the credit
    shrinks alike, so a long question is not ranked by meaning alone."""
    outline_share: float = 0.15
    """The page outline's share of a page's similarity (`vectors.page_outline`)."""
    threshold: float = 0.35
    """The similarity a page must pass to earn any semantic credit: what keeps off-topic questions out."""
    weight: float = 1.0
    """Semantic credit per unit of similarity above the threshold, on the lexical score's scale."""
    hub_neighbours: int = 10
    """How many nearest entries of its site measure how much of a hub an entry is (`vectors.neighbour_similarity`).
    Stored vectors carry it computed with `DEFAULT`'s value: a ranker with another one computes its own."""
    hub_weight: float = 0.25
    """How far an entry's cosine moves per unit of its neighbour similarity above (or below) the site's median."""
    rerank_pages: int = 5
    """How many of the best pages are ordered again by their word pieces (`pieces.py`), when every searched site has
    them: late interaction over each page's closest entry."""
    floor_power: float = 0.25
    """How the relevance floor (`Search__MinScore`) follows a question's length when no credit can be earned (the
    answer is ranked by terms alone): the floor times `length` to this power. A term score is a share of what the
    whole question could score, so past `balance_words` a long question's best pages score about `length` of what a
    short one's would, and an absolute floor empties answers it has (`relevance_floor`). Chosen by `tools/floor_eval.py`
    of 0, 0.25, 0.5 and 1: 3 of 1,000 eval questions answered with nothing instead of 13 (0.5: 2, 1: 1), no far
    off-topic question answered (1: 5 of 30), the fewest near ones let through of the three."""
    piece_weight: float = 2.0
    """How far a page moves in that rerank per unit of MaxSim behind the best of them, on the scale of its score over
    the best page's. Chosen by `tools/late_interaction.py` leaving one site out (every held-out site chose 1.5 or 2)."""


DEFAULT = RankingParameters()
"""What the service ranks with, and every prebuilt ranker and stored neighbour similarity is computed with."""
