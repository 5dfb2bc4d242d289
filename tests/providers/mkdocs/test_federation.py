"""Federated ranking: every site scored in one pass gives exactly the per-site ranking merged by score."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from shared.providers.mkdocs.indexes.index import IndexEntry, SiteIndex
from shared.providers.mkdocs.indexes.kinds import DEFAULT as DEFAULT_KINDS
from shared.providers.mkdocs.indexes.kinds import PathWeights
from shared.providers.mkdocs.scoring.federation import Federation
from shared.providers.mkdocs.scoring.parameters import DEFAULT, RankingParameters
from shared.providers.mkdocs.scoring.quantized import split_query
from shared.providers.mkdocs.scoring.ranking import Ranker
from shared.providers.mkdocs.scoring.semantics import semantic_say
from shared.providers.mkdocs.scoring.text import analyze_query
from shared.providers.mkdocs.scoring.vectors import SiteVectors
from tests.support.pages import FILLER, page
from tests.support.ranking import reference_score

KINDS = PathWeights.parse(DEFAULT_KINDS)
OTHER = RankingParameters(
    k1=1.6,
    page_fields=((2.0, 0.4), (1.5, 0.6), (1.0, 0.9)),
    section_fields=((3.0, 0.3), (1.0, 0.5)),
    section_share=0.6,
    site_fit_half=0.2,
    identifier_scale=4.0,
    balance_words=3,
    outline_share=0.4,
    threshold=0.1,
    weight=2.5,
    hub_neighbours=2,
    hub_weight=0.5,
)
"""Every number moved from the default's, so a part of either path that read the default would show."""

QUERIES = [
    "widget rollback",
    "how do I roll back a widget after a failed release",
    "configure the ingress controller",
    "release notes for the widget controller",
    "proposal for widget rollbacks",
    "argocd app rollback --dry-run",
    "topic3 configuration",
    "nothing matches this zzzz",
]


def _ranker(*pages: list[IndexEntry], site: str, parameters: RankingParameters) -> Ranker:
    entries = [entry for entries in pages for entry in entries]
    return Ranker.build(SiteIndex.build(site, entries), KINDS, parameters)


def _sites(parameters: RankingParameters = DEFAULT) -> list[Ranker]:
    return [
        _ranker(
            page("guide/", "Widget guide", "How widgets work.", ("rollback", "Rolling back", "Use widget rollback.")),
            page("proposals/rollback/", "Proposal: widget rollbacks", "We propose rollback of widgets.", boost=2.0),
            page("release-notes/", "Release notes", "The widget controller now supports rollback."),
            *FILLER,
            site="forge",
            parameters=parameters,
        ),
        _ranker(
            page("ingress/", "Ingress controller", "Configure the ingress controller for widgets."),
            page("cli/rollback/", "argocd app rollback", "Roll back an app. --dry-run shows the change."),
            *FILLER[:5],
            site="platform",
            parameters=parameters,
        ),
        _ranker(
            page("widgets/", "Widgets", "", ("one", "Widget one", "A widget."), ("two", "Widget two", "Another.")),
            page("empty/", "Nothing here", "", boost=0.0),
            site="small",
            parameters=parameters,
        ),
    ]


def _merged(rankers: list[Ranker], query: str, limit: int, vector: object, missing: list[frozenset[str]]) -> list:
    """What the provider did before federating: each site's best, its missing pages left out, merged by score."""
    wanted = analyze_query(query)
    say = semantic_say(query, wanted, rankers[0].parameters)
    found = []
    for site, one in enumerate(rankers):
        scored = reference_score(one, wanted, say, limit + len(missing[site]), vector)  # type: ignore[arg-type]
        kept = [n for n in range(len(scored.pages)) if scored.page(n) not in missing[site]][:limit]
        found += [(scored.scores[n], site, scored, n) for n in kept]
    found.sort(key=lambda item: item[0], reverse=True)
    return [_described(site, scored, n) for _, site, scored, n in found[:limit]]


def _federated(rankers: list[Ranker], query: str, limit: int, vector: object, missing: list[frozenset[str]]) -> list:
    wanted = analyze_query(query)
    federation = Federation.of(rankers)
    found = federation.score(wanted, semantic_say(query, wanted, federation.parameters), limit, vector, missing)  # type: ignore[arg-type]
    return [_described(site, scored, n) for site, scored, n in found]


def _described(site: int, scored: object, number: int) -> tuple:
    hit = scored.hit(number)  # type: ignore[attr-defined]
    return site, hit.entry.location, hit.score, hit.section.location if hit.section else None, hit.breadcrumb


def _attach_random(rankers: list[Ranker], seed: int = 7) -> np.ndarray:
    """Unit vectors in few dimensions, so many cosines pass the threshold; the query's own."""
    rng = np.random.default_rng(seed)
    for one in rankers:
        rows = len(one.entries) + len(one.pages)
        matrix = rng.normal(size=(rows, 8)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        one.attach(SiteVectors(matrix, tuple(str(n) for n in range(rows))))
    query = rng.normal(size=8).astype(np.float32)
    return query / np.linalg.norm(query)


@pytest.mark.parametrize("parameters", [DEFAULT, OTHER], ids=["default", "other"])
@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("limit", [1, 3, 10])
def test_lexical_federation_is_the_per_site_ranking_merged(
    query: str, limit: int, parameters: RankingParameters
) -> None:
    rankers = _sites(parameters)
    missing = [frozenset(), frozenset({"cli/rollback/"}), frozenset()]
    assert _federated(rankers, query, limit, None, missing) == _merged(rankers, query, limit, None, missing)


@pytest.mark.parametrize("parameters", [DEFAULT, OTHER], ids=["default", "other"])
@pytest.mark.parametrize("query", QUERIES)
def test_semantic_federation_is_the_per_site_ranking_merged(query: str, parameters: RankingParameters) -> None:
    rankers = _sites(parameters)
    vector = _attach_random(rankers)
    missing = [frozenset({"guide/"}), frozenset(), frozenset()]
    federated = _federated(rankers, query, 10, vector, missing)
    assert federated == _merged(rankers, query, 10, vector, missing)
    if analyze_query(query).words:
        assert federated  # the random vectors bring pages in by meaning even where no term matches


def test_a_federation_is_current_only_for_the_same_rankers_and_embeddings() -> None:
    rankers = _sites()
    federation = Federation.of(rankers)
    assert federation.current(rankers) and federation.correction is None
    assert not federation.current(rankers[:2])
    _attach_random(rankers[:1])
    assert not federation.current(rankers)  # one site's embeddings arrived: its credit needs a rebuild
    _attach_random(rankers)
    rebuilt = Federation.of(rankers)
    assert rebuilt.current(rankers) and rebuilt.correction is not None
    assert len(rebuilt.correction) == sum(len(one.entries) for one in rankers)


def test_a_federation_ranks_with_its_rankers_parameters_and_refuses_a_mix() -> None:
    assert Federation.of(_sites(OTHER)).parameters == OTHER
    assert Federation.of([]).parameters == DEFAULT
    mixed = [*_sites()[:2], *_sites(replace(DEFAULT, weight=2.0))[2:]]
    with pytest.raises(ValueError, match="same parameters"):
        Federation.of(mixed)


def test_other_parameters_rank_otherwise() -> None:
    """The premise of the `OTHER` cases: its numbers reach the scores, lexical and semantic."""
    query, missing = "how do I roll back a widget after a failed release", [frozenset[str]()] * 3
    default, other = _sites(), _sites(OTHER)
    assert _federated(default, query, 10, None, missing) != _federated(other, query, 10, None, missing)
    vector = _attach_random(default)
    _attach_random(other)
    assert _federated(default, query, 10, vector, missing) != _federated(other, query, 10, vector, missing)


def test_no_sites_and_no_terms_find_nothing() -> None:
    assert Federation.of([]).score(analyze_query("widget"), 1.0, 10) == []
    assert Federation.of(_sites()).score(analyze_query("the of and"), 1.0, 10) == []


def test_the_scan_gives_each_site_its_own_similarities_and_nothing_while_a_site_is_lexical() -> None:
    rankers = _sites()
    assert Federation.of(rankers).scan(np.ones(8, np.float32)) is None  # no site has vectors yet
    vector = _attach_random(rankers)
    products = Federation.of(rankers).scan(vector)
    assert products is not None and len(products) == len(rankers)
    for one, product in zip(rankers, products, strict=True):
        assert one.semantic is not None
        assert np.array_equal(product, one.semantic.rows.similarities(split_query(vector)))
    rankers[1] = _sites()[1]  # one site without vectors: the whole answer is lexical
    assert Federation.of(rankers).scan(vector) is None
