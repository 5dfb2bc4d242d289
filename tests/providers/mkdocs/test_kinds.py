"""Page-kind rules (`Search__PathWeights`): parsing, matching, and what they do to a ranking."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.api import create_app
from shared.compose import checked
from shared.errors import ConfigurationError
from shared.providers.mkdocs.indexes.kinds import DEFAULT, PathWeights, configured
from shared.settings import DocumentationSettings, load_settings
from tests.support.pages import FILLER, page, ranker
from tests.support.ranking import search

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
COMMAND = page(
    "user-guide/commands/argocd_proj_windows_update/",
    "argocd proj windows update Command Reference",
    "",
    ("synopsis", "Synopsis", "Update a project sync window. argocd proj windows update PROJECT ID [flags]"),
    ("options", "Options", "--schedule string Sync window schedule in cron format. --duration string Duration."),
)


def top(found: list) -> str:  # type: ignore[type-arg]
    return found[0].entry.location


def test_without_rules_a_proposal_that_repeats_the_words_wins() -> None:
    site = ranker(GUIDE, PROPOSAL, UPGRADE, *FILLER, kinds=PathWeights.parse("[]"))
    assert top(search(site, "sync windows deny schedule", 3)) == "proposals/sync-windows/"


def test_the_default_rules_put_the_guide_first() -> None:
    site = ranker(GUIDE, PROPOSAL, UPGRADE, *FILLER, kinds=PathWeights.parse(DEFAULT))
    found = search(site, "sync windows deny schedule", 3)
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
    assert top(search(site, query, 3)) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("update a sync window schedule", "user-guide/sync-windows/"),
        ("update a sync window schedule from the CLI", "user-guide/commands/argocd_proj_windows_update/"),
        ("which command updates a sync window schedule", "user-guide/commands/argocd_proj_windows_update/"),
        ("flags to update a sync window schedule", "user-guide/commands/argocd_proj_windows_update/"),
    ],
)
def test_command_reference_pages_lead_only_for_a_question_about_the_command_line(query: str, expected: str) -> None:
    site = ranker(GUIDE, COMMAND, *FILLER, kinds=PathWeights.parse(DEFAULT))
    assert top(search(site, query, 3)) == expected


def test_a_when_rule_weighs_only_the_queries_that_name_its_kind() -> None:
    rule = '[{"pattern": "user-guide/commands/", "weight": 2, "when": ["cli"]}]'
    plain = ranker(GUIDE, COMMAND, *FILLER, kinds=PathWeights.parse("[]"))
    doubled = ranker(GUIDE, COMMAND, *FILLER, kinds=PathWeights.parse(rule))
    for query, factor in (("update a sync window schedule", 1), ("update a sync window schedule with the cli", 2)):
        before = {hit.entry.location: hit.score for hit in search(plain, query, 5)}
        after = {hit.entry.location: hit.score for hit in search(doubled, query, 5)}
        page = "user-guide/commands/argocd_proj_windows_update/"
        assert after[page] == pytest.approx(before[page] * factor)
        assert after["user-guide/sync-windows/"] == pytest.approx(before["user-guide/sync-windows/"])


def test_a_query_toggling_one_rule_leaves_the_others_as_they_were() -> None:
    rules = (
        '[{"pattern": "proposals/", "weight": 0.5, "unless": ["proposal"]},'
        ' {"pattern": "user-guide/commands/", "weight": 2, "when": ["cli"]}]'
    )
    plain = ranker(GUIDE, PROPOSAL, COMMAND, *FILLER, kinds=PathWeights.parse("[]"))
    weighted = ranker(GUIDE, PROPOSAL, COMMAND, *FILLER, kinds=PathWeights.parse(rules))
    query = "sync window schedule with the cli"
    before = {hit.entry.location: hit.score for hit in search(plain, query, 5)}
    after = {hit.entry.location: hit.score for hit in search(weighted, query, 5)}
    assert after["user-guide/commands/argocd_proj_windows_update/"] == pytest.approx(
        2 * before["user-guide/commands/argocd_proj_windows_update/"]
    )
    assert after["proposals/sync-windows/"] == pytest.approx(before["proposals/sync-windows/"] / 2), "still halved"
    assert after["user-guide/sync-windows/"] == pytest.approx(before["user-guide/sync-windows/"])


def test_toggled_names_the_unless_rules_a_query_switches_off_and_the_when_rules_it_switches_on() -> None:
    weights = PathWeights.parse(
        '[{"pattern": "proposals/", "weight": 0.5, "unless": ["proposal"]},'
        ' {"pattern": "commands/", "weight": 2, "when": ["cli", "command line"]}]'
    )
    assert weights.toggled(["sync", "window"]) == frozenset()
    assert weights.toggled(["propos", "cli"]) == {0, 1}  # analyzed terms
    assert weights.toggled(["command", "line"]) == {1}
    assert weights.toggled(["command"]) == frozenset(), "a phrase needs all its words"


def test_a_weight_multiplies_the_score_like_a_boost() -> None:
    plain = search(ranker(GUIDE, PROPOSAL, *FILLER, kinds=PathWeights.parse("[]")), "sync windows deny", 5)
    halved = ranker(GUIDE, PROPOSAL, *FILLER, kinds=PathWeights.parse('[{"pattern": "proposals/", "weight": 0.5}]'))
    scores = {hit.entry.location: hit.score for hit in search(halved, "sync windows deny", 5)}
    before = {hit.entry.location: hit.score for hit in plain}
    assert scores["proposals/sync-windows/"] == pytest.approx(before["proposals/sync-windows/"] / 2)
    assert scores["user-guide/sync-windows/"] == pytest.approx(before["user-guide/sync-windows/"])


def test_a_zero_weight_puts_the_page_behind_every_other_match() -> None:
    site = ranker(GUIDE, PROPOSAL, *FILLER, kinds=PathWeights.parse('[{"pattern": "user-guide/", "weight": 0}]'))
    assert top(search(site, "sync windows deny", 5)) == "proposals/sync-windows/"


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


_SEGMENTS = st.sampled_from(["docs", "blog", "a*b", "upgrading", "x.y", "[ab]", "caf%C3%A9", "release notes", "?"])


@settings(max_examples=300, deadline=None)
@given(
    patterns=st.lists(
        st.tuples(st.lists(_SEGMENTS, min_size=1, max_size=3), st.booleans(), st.sampled_from([None, "docs", "dns"])),
        max_size=6,
    ),
    path=st.lists(_SEGMENTS, max_size=4),
    site=st.sampled_from(["docs", "DNS", "other"]),
)
def test_one_pattern_per_site_finds_the_first_rule_that_holds(
    patterns: list[tuple[list[str], bool, str | None]], path: list[str], site: str
) -> None:
    rules = [
        {"pattern": ("*" if star else "") + "/".join(parts) + "/", "weight": 0.5} | ({"site": on} if on else {})
        for parts, star, on in patterns
    ]
    weights = PathWeights.parse(json.dumps(rules))
    page_path = "/".join(path) + "/"
    expected = next((n for n, rule in enumerate(weights.rules) if rule.matches(site, page_path)), None)
    assert weights.rule_for(site, page_path) == expected


def test_the_first_matching_rule_wins() -> None:
    weights = PathWeights.parse(
        '[{"pattern": "upgrading/overview/", "weight": 1}, {"pattern": "upgrading/", "weight": 0.5}]'
    )
    assert weights.rule_for("docs", "upgrading/overview/") == 0
    assert weights.rule_for("docs", "upgrading/2.4-2.5/") == 1


def test_a_phrase_waives_only_with_all_its_words() -> None:
    weights = PathWeights.parse('[{"pattern": "notes/", "weight": 0.5, "unless": ["release notes"]}]')
    assert weights.toggled(["releas", "note", "sync"]) == {0}
    assert weights.toggled(["note", "sync"]) == frozenset()


def rules(**settings: str) -> PathWeights:
    """The page-kind rules these app settings give, checked as start-up checks them (`compose.checked`)."""
    return configured_rules(checked(load_settings({"Forge__Documentation__Origin": "http://docs.example"} | settings)))


def configured_rules(settings: DocumentationSettings) -> PathWeights:
    return configured(settings.search.path_weights, tuple(settings.sites))


def test_the_setting_defaults_to_the_documented_rules_and_an_empty_list_turns_them_off() -> None:
    assert rules() == PathWeights.parse(DEFAULT)
    assert rules(Forge__Documentation__Search__PathWeights="").rules
    assert rules(Forge__Documentation__Search__PathWeights="[]").rules == ()


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
        ('[{"pattern": "x", "weight": 2, "when": ["of"]}]', "stop words"),
        ('[{"pattern": "x", "weight": 2, "when": "cli"}]', "'when' must be a list"),
        ('[{"pattern": "x", "weight": 2, "when": []}]', "at least one word"),
        ('[{"pattern": "x", "weight": 2, "when": null}]', "'when' must be a list"),
        ('[{"pattern": "x", "weight": 2, "when": ["cli"], "unless": ["design"]}]', "both 'unless' and 'when'"),
        ('[{"pattern": "x", "weight": 0.5, "site": "nosuchsite"}]', "not a configured site"),
    ],
)
def test_a_malformed_setting_stops_start_up_with_a_reason(value: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message) as caught:
        rules(Forge__Documentation__Search__PathWeights=value)
    assert caught.value.key.startswith("Forge__Documentation__Search__PathWeights")
    with pytest.raises(ConfigurationError, match=message):  # the app refuses to start
        origin = {"Forge__Documentation__Origin": "http://x"}
        create_app(load_settings(origin | {"Forge__Documentation__Search__PathWeights": value}))


def test_the_indexed_list_form_is_refused_rather_than_read_as_no_rules() -> None:
    indexed = {
        "Forge__Documentation__Search__PathWeights__0__pattern": "blog/",
        "Forge__Documentation__Search__PathWeights__0__weight": "0.1",
    }
    with pytest.raises(ConfigurationError, match="one JSON list"):
        load_settings({"Forge__Documentation__Origin": "http://x"} | indexed)


def test_a_rule_for_a_configured_site_is_accepted_whatever_its_case() -> None:
    weights = rules(Forge__Documentation__Search__PathWeights='[{"pattern": "x/", "weight": 0.5, "site": "FORGE"}]')
    assert weights.rule_for("forge", "x/y/") == 0


def test_a_versioned_sites_versions_follow_its_rules() -> None:
    weights = PathWeights.parse('[{"site": "vdocs", "pattern": "release-notes/", "weight": 0.5}]')
    assert weights.rule_for("vdocs@2.1", "release-notes/2.1/") == 0  # a version is ranked as `vdocs@2.1`
    assert weights.rule_for("VDocs", "release-notes/2.1/") == 0
    assert weights.rule_for("other", "release-notes/2.1/") is None
    assert weights.rules[0].matches("vdocs@2.0", "release-notes/2.0/")
