"""Page-kind rules (`Search__PathWeights`): parsing, matching, and what they do to a ranking."""

from __future__ import annotations

import json

import pytest

from shared.errors import ConfigurationError
from shared.providers.mkdocs.kinds import DEFAULT, PathWeights
from shared.settings import load_settings
from tests.support.pages import FILLER, page, ranker

GUIDE = page(
    "user-guide/sync-windows/",
    "Sync Windows",
    "Sync windows allow or deny syncs during a schedule.",
    ("deny", "Deny windows", "A deny window blocks automatic sync of matching applications."),
)
PROPOSAL = page(
    "proposals/sync-windows/",
    "Sync windows deny schedule",
    "Sync windows: allow and deny syncs during a schedule window. Sync windows deny automatic sync windows.",
    ("design", "Design", "Sync windows deny syncs; the window schedule is a cron expression for sync windows."),
)
UPGRADE = page(
    "operator-manual/upgrading/2.4-2.5/",
    "v2.4 to 2.5",
    "Sync windows now deny manual syncs by default during a deny window schedule.",
)


def top(found: list) -> str:  # type: ignore[type-arg]
    return found[0].entry.location


def test_without_rules_a_proposal_that_repeats_the_words_wins() -> None:
    site = ranker(GUIDE, PROPOSAL, UPGRADE, *FILLER, kinds=PathWeights.parse("[]"))
    assert top(site.search("sync windows deny schedule", 3)) == "proposals/sync-windows/"


def test_the_default_rules_put_the_guide_first() -> None:
    site = ranker(GUIDE, PROPOSAL, UPGRADE, *FILLER, kinds=PathWeights.parse(DEFAULT))
    found = site.search("sync windows deny schedule", 3)
    assert top(found) == "user-guide/sync-windows/"
    assert {hit.entry.location for hit in found} >= {"proposals/sync-windows/"}, "demoted, not hidden"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("the design proposal for sync windows deny schedule", "proposals/sync-windows/"),
        ("sync windows deny schedule proposals", "proposals/sync-windows/"),
        ("what changed about sync windows deny schedule when upgrading to 2.5", "operator-manual/upgrading/2.4-2.5/"),
        ("which release made sync windows deny manual syncs in a deny window", "operator-manual/upgrading/2.4-2.5/"),
        ("the rationale behind the sync windows deny schedule", "proposals/sync-windows/"),
    ],
)
def test_a_query_naming_the_kind_still_finds_it(query: str, expected: str) -> None:
    site = ranker(GUIDE, PROPOSAL, UPGRADE, *FILLER, kinds=PathWeights.parse(DEFAULT))
    assert top(site.search(query, 3)) == expected


def test_a_weight_multiplies_the_score_like_a_boost() -> None:
    plain = ranker(GUIDE, PROPOSAL, *FILLER, kinds=PathWeights.parse("[]")).search("sync windows deny", 5)
    halved = ranker(GUIDE, PROPOSAL, *FILLER, kinds=PathWeights.parse('[{"pattern": "proposals/", "weight": 0.5}]'))
    scores = {hit.entry.location: hit.score for hit in halved.search("sync windows deny", 5)}
    before = {hit.entry.location: hit.score for hit in plain}
    assert scores["proposals/sync-windows/"] == pytest.approx(before["proposals/sync-windows/"] / 2)
    assert scores["user-guide/sync-windows/"] == pytest.approx(before["user-guide/sync-windows/"])


def test_a_zero_weight_puts_the_page_behind_every_other_match() -> None:
    site = ranker(GUIDE, PROPOSAL, *FILLER, kinds=PathWeights.parse('[{"pattern": "user-guide/", "weight": 0}]'))
    assert top(site.search("sync windows deny", 5)) == "proposals/sync-windows/"


@pytest.mark.parametrize(
    ("rule", "site", "path", "matches"),
    [
        ({"pattern": "proposals/"}, "docs", "proposals/x/", True),
        ({"pattern": "proposals/"}, "docs", "user-guide/proposals/", False),  # a prefix, not a substring
        ({"pattern": "/Proposals/"}, "docs", "proposals/x/", True),  # leading slash and case ignored
        ({"pattern": "*/upgrading/*"}, "docs", "operator-manual/upgrading/2.4-2.5/", True),
        ({"pattern": "*/upgrading/*"}, "docs", "upgrading/2.4/", False),
        ({"pattern": "*changelog*"}, "docs", "project/CHANGELOG/", True),
        ({"pattern": "release/", "site": "dns"}, "dns", "release/", True),
        ({"pattern": "release/", "site": "dns"}, "docs", "release/", False),
        ({"pattern": "release/", "site": "DNS"}, "dns", "release/", True),  # site names are case-insensitive
        ({"pattern": "my page/"}, "docs", "my%20page/x/", True),  # index paths are percent-encoded, patterns not
        ({"pattern": "caf%C3%A9/"}, "docs", "café/", True),
    ],
)
def test_patterns_are_prefixes_or_globs_per_site(rule: dict, site: str, path: str, matches: bool) -> None:  # type: ignore[type-arg]
    weights = PathWeights.parse(json.dumps([rule | {"weight": 0.5}]))
    assert (weights.rule_for(site, path) == 0) is matches


def test_the_first_matching_rule_wins() -> None:
    weights = PathWeights.parse(
        '[{"pattern": "upgrading/overview/", "weight": 1}, {"pattern": "upgrading/", "weight": 0.5}]'
    )
    assert weights.rule_for("docs", "upgrading/overview/") == 0
    assert weights.rule_for("docs", "upgrading/2.4-2.5/") == 1


def test_a_phrase_waives_only_with_all_its_words() -> None:
    weights = PathWeights.parse('[{"pattern": "notes/", "weight": 0.5, "unless": ["release notes"]}]')
    assert weights.waived(["releas", "note", "sync"]) == {0}
    assert weights.waived(["note", "sync"]) == frozenset()


def test_the_setting_defaults_to_the_documented_rules_and_an_empty_list_turns_them_off() -> None:
    origin = {"Forge__Documentation__Origin": "http://docs.example"}
    assert load_settings(origin).search.path_weights == PathWeights.parse(DEFAULT)
    assert load_settings(origin | {"Forge__Documentation__Search__PathWeights": ""}).search.path_weights.rules
    off = load_settings(origin | {"Forge__Documentation__Search__PathWeights": "[]"})
    assert off.search.path_weights.rules == ()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{", "JSON list"),
        ('{"pattern": "x"}', "JSON list"),
        ("[1]", "must be an object"),
        ('[{"weight": 0.5}]', "'pattern'"),
        ('[{"pattern": "x", "weight": -1}]', "'weight'"),
        ('[{"pattern": "x", "weight": true}]', "'weight'"),
        ('[{"pattern": "x", "weight": 0.5, "unless": "x"}]', "'unless'"),
        ('[{"pattern": "x", "weight": 0.5, "boost": 2}]', "unknown keys"),
        (json.dumps([{"pattern": "x", "weight": 1}] * 101), "at most 100"),
        ('[{"pattern": "x", "weight": 0.5, "unless": ["the"]}]', "stop words"),
        ('[{"pattern": "x", "weight": 0.5, "site": "nosuchsite"}]', "not a configured site"),
    ],
)
def test_a_malformed_setting_stops_start_up_with_a_reason(value: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        load_settings({"Forge__Documentation__Origin": "http://x", "Forge__Documentation__Search__PathWeights": value})


def test_the_indexed_list_form_is_refused_rather_than_read_as_no_rules() -> None:
    indexed = {
        "Forge__Documentation__Search__PathWeights__0__pattern": "blog/",
        "Forge__Documentation__Search__PathWeights__0__weight": "0.1",
    }
    with pytest.raises(ConfigurationError, match="one JSON list"):
        load_settings({"Forge__Documentation__Origin": "http://x"} | indexed)


def test_a_rule_for_a_configured_site_is_accepted_whatever_its_case() -> None:
    settings = load_settings(
        {
            "Forge__Documentation__Origin": "http://x",
            "Forge__Documentation__Search__PathWeights": '[{"pattern": "x/", "weight": 0.5, "site": "FORGE"}]',
        }
    )
    assert settings.search.path_weights.rule_for("forge", "x/y/") == 0
