"""Location resolution: the three rules within a site and the five steps of site selection."""

from __future__ import annotations

import json

import pytest

from shared.models import Reason, Rule
from shared.providers.mkdocs.indexes.index import SiteIndex, parse_index
from shared.providers.mkdocs.indexes.resolution import Resolver, normalize, resolve_in_site, strip_variant


def site_index(site: str, *locations: str) -> SiteIndex:
    docs = [{"location": location, "title": location or "Home", "text": ""} for location in locations]
    return parse_index(site, json.dumps({"docs": docs}))


ALPHA = site_index(
    "alpha",
    "",
    "#welcome",
    "faq/",
    "faq/#how-do-i-reset",
    "guide/",
    "guide/install/",
    "guide/webhook/",
    "ops/webhook/",
    "ops/sync_windows/",
    "CONTRIBUTING/",
    "beta-docs/notes/",
)
BETA = site_index("beta-docs", "", "faq/", "metrics/", "reference/naming/", "gamma-docs/page/", "setup/")
GAMMA = site_index("gamma-docs", "", "metrics/", "setup/", "setup/#first", "only-gamma/leafy/")
GAMMA_DUP = site_index("gamma-docs", "", "Dup/", "dup/", "metrics/")


def resolver(indexes: dict[str, SiteIndex | None], sites: tuple[str, ...] | None = None) -> Resolver:
    async def load(site: str) -> SiteIndex | None:
        return indexes.get(site)

    return Resolver(sites or tuple(indexes), "alpha", load)


SITES = {"alpha": ALPHA, "beta-docs": BETA, "gamma-docs": GAMMA, "missing-docs": None}


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [("/faq/", "faq"), ("  faq/#how-do-i-reset ", "faq"), ("#top", ""), ("a/b//", "a/b")],
)
def test_normalize_trims_slashes_and_drops_fragment(raw: str, normalized: str) -> None:
    assert normalize(raw) == normalized


@pytest.mark.parametrize(
    ("path", "variant"),
    [
        ("faq.md", "faq"),
        ("faq.HTML", "faq"),
        ("guide/index", "guide"),
        ("guide/index.md", "guide"),
        ("index", ""),
        ("index.html", ""),
        ("guide/install.htm", "guide/install"),
        ("plain", "plain"),
    ],
)
def test_variant_strips_suffixes_index_and_maps_bare_index_to_root(path: str, variant: str) -> None:
    assert strip_variant(path) == variant


@pytest.mark.parametrize(
    ("path", "rule", "location"),
    [
        ("faq", Rule.EXACT, "faq/"),
        ("FAQ", Rule.EXACT, "faq/"),
        ("", Rule.EXACT, ""),
        ("contributing", Rule.EXACT, "CONTRIBUTING/"),
        ("faq.md", Rule.VARIANT, "faq/"),
        ("guide/index.md", Rule.VARIANT, "guide/"),
        ("index.md", Rule.VARIANT, ""),
        ("install", Rule.CANONICAL_LEAF, "guide/install/"),
        ("old/place/sync_windows.md", Rule.CANONICAL_LEAF, "ops/sync_windows/"),
    ],
)
def test_rules_within_a_site(path: str, rule: Rule, location: str) -> None:
    outcome = resolve_in_site(ALPHA, path)
    assert outcome.reason is Reason.RESOLVED
    assert outcome.rule is rule
    assert outcome.page is not None and outcome.page.path == location


def test_shared_leaf_within_a_site_is_not_found_not_a_guess() -> None:
    outcome = resolve_in_site(ALPHA, "webhook")
    assert outcome.reason is Reason.NOT_FOUND
    assert outcome.rule is Rule.NONE
    assert {page.path for page in outcome.candidates} == {"guide/webhook/", "ops/webhook/"}


def test_variant_matching_several_pages_is_ambiguous() -> None:
    outcome = resolve_in_site(GAMMA_DUP, "DUP.md")
    assert outcome.reason is Reason.AMBIGUOUS
    assert outcome.rule is Rule.VARIANT
    assert len(outcome.candidates) == 2


def test_exact_prefers_the_case_sensitive_page_among_case_twins() -> None:
    outcome = resolve_in_site(GAMMA_DUP, "dup")
    assert outcome.rule is Rule.EXACT and outcome.page is not None and outcome.page.path == "dup/"


async def test_site_qualified_location_resolves_in_that_site() -> None:
    resolution = await resolver(SITES).resolve("beta-docs/reference/naming/")
    assert (resolution.reason, resolution.rule, resolution.site, resolution.location) == (
        Reason.RESOLVED,
        Rule.EXACT,
        "beta-docs",
        "reference/naming/",
    )


async def test_site_root_is_the_bare_site_name() -> None:
    resolution = await resolver(SITES).resolve("beta-docs")
    assert (resolution.reason, resolution.site, resolution.location) == (Reason.RESOLVED, "beta-docs", "")


async def test_unstripped_path_is_retried_in_the_named_site() -> None:
    resolution = await resolver(SITES).resolve("gamma-docs/page")
    assert resolution.reason is Reason.NOT_FOUND  # gamma-docs has no 'page' and no leaf 'page'
    resolution = await resolver(SITES).resolve("beta-docs/gamma-docs/page")
    assert (resolution.site, resolution.location, resolution.rule) == ("beta-docs", "gamma-docs/page/", Rule.EXACT)


async def test_site_named_directory_inside_the_site_is_found_by_the_unstripped_retry() -> None:
    indexes = {"alpha": ALPHA, "beta-docs": site_index("beta-docs", "beta-docs/inner/")}
    resolution = await resolver(indexes).resolve("beta-docs/inner")
    assert resolution.reason is Reason.RESOLVED  # leaf rule on the remainder finds it first
    resolution = await resolver(indexes).resolve("beta-docs/beta-docs/inner")
    assert (resolution.reason, resolution.location) == (Reason.RESOLVED, "beta-docs/inner/")


async def test_named_site_that_cannot_load_is_site_unavailable() -> None:
    resolution = await resolver(SITES).resolve("missing-docs/anything")
    assert (resolution.reason, resolution.site, resolution.location) == (Reason.SITE_UNAVAILABLE, None, None)
    assert "missing-docs" in resolution.detail


async def test_default_site_wins_without_consulting_other_sites() -> None:
    resolution = await resolver(SITES).resolve("faq")
    assert (resolution.site, resolution.location) == ("alpha", "faq/")


async def test_bare_path_missing_on_default_resolves_on_the_one_site_that_has_it() -> None:
    resolution = await resolver(SITES).resolve("reference/naming")
    assert (resolution.reason, resolution.site, resolution.location) == (
        Reason.RESOLVED,
        "beta-docs",
        "reference/naming/",
    )
    leaf = await resolver(SITES).resolve("leafy")
    assert (leaf.site, leaf.rule) == ("gamma-docs", Rule.CANONICAL_LEAF)


async def test_matches_on_several_non_default_sites_are_ambiguous_across_sites() -> None:
    resolution = await resolver(SITES).resolve("metrics")
    assert resolution.reason is Reason.AMBIGUOUS
    assert resolution.site is None
    assert resolution.rule is Rule.EXACT
    assert sorted(resolution.candidates) == ["beta-docs/metrics/", "gamma-docs/metrics/"]


async def test_cross_site_ambiguity_merges_an_ambiguous_sites_candidates() -> None:
    indexes = {"alpha": ALPHA, "beta-docs": site_index("beta-docs", "dup/"), "gamma-docs": GAMMA_DUP}
    resolution = await resolver(indexes).resolve("DUP.md")
    assert resolution.reason is Reason.AMBIGUOUS
    assert sorted(resolution.candidates) == ["beta-docs/dup/", "gamma-docs/Dup/", "gamma-docs/dup/"]


@pytest.mark.parametrize("location", ["DUP", "DUP.md", "dUp/", "DUP/index.html"])
def test_case_twins_asked_in_neither_spelling_are_ambiguous_however_written(location: str) -> None:
    outcome = resolve_in_site(GAMMA_DUP, location.strip("/"))
    assert outcome.reason is Reason.AMBIGUOUS
    assert sorted(page.path for page in outcome.candidates) == ["Dup/", "dup/"]


@pytest.mark.parametrize(
    ("location", "page"), [("dup", "dup/"), ("Dup", "Dup/"), ("dup.md", "dup/"), ("Dup.md", "Dup/")]
)
def test_a_case_twin_spelled_exactly_resolves_to_itself(location: str, page: str) -> None:
    outcome = resolve_in_site(GAMMA_DUP, location)
    assert outcome.reason is Reason.RESOLVED and outcome.page is not None and outcome.page.path == page


def test_percent_encoded_index_locations_resolve_from_their_decoded_request() -> None:
    index = site_index("alpha", "caf%C3%A9%20setup/", "guide/na%C3%AFve/")
    for requested, page in [
        ("café setup", "caf%C3%A9%20setup/"),
        ("guide/naïve.md", "guide/na%C3%AFve/"),
        ("naïve", "guide/na%C3%AFve/"),
    ]:
        outcome = resolve_in_site(index, requested)
        assert outcome.reason is Reason.RESOLVED and outcome.page is not None and outcome.page.path == page


async def test_ambiguity_inside_a_single_non_default_site_is_reported() -> None:
    indexes = {"alpha": ALPHA, "gamma-docs": GAMMA_DUP}
    resolution = await resolver(indexes).resolve("DUP.md")
    assert (resolution.reason, resolution.site, resolution.rule) == (Reason.AMBIGUOUS, None, Rule.VARIANT)
    assert sorted(resolution.candidates) == ["gamma-docs/Dup/", "gamma-docs/dup/"]


async def test_unknown_site_heuristic() -> None:
    unknown = await resolver(SITES).resolve("delta-docs/some/nowhere")
    assert unknown.reason is Reason.UNKNOWN_SITE
    single_word = await resolver(SITES).resolve("delta/some/nowhere")
    assert single_word.reason is Reason.NOT_FOUND
    no_slash = await resolver(SITES).resolve("delta-docs")
    assert no_slash.reason is Reason.NOT_FOUND
    known_dir = await resolver(SITES).resolve("only-gamma/nothing-here")
    assert known_dir.reason is Reason.NOT_FOUND  # a top-level directory of a loaded site is content


async def test_default_site_outage_makes_a_miss_site_unavailable() -> None:
    indexes = {"alpha": None, "beta-docs": BETA}
    resolution = await resolver(indexes).resolve("nothing/here")
    assert resolution.reason is Reason.SITE_UNAVAILABLE
    found = await resolver(indexes).resolve("reference/naming")
    assert (found.reason, found.site) == (Reason.RESOLVED, "beta-docs")


async def test_plain_miss_is_not_found_and_keeps_the_requested_location() -> None:
    resolution = await resolver(SITES).resolve("/nothing/here/#frag")
    assert resolution.reason is Reason.NOT_FOUND
    assert resolution.requested_location == "/nothing/here/#frag"
    assert resolution.rule is Rule.NONE


async def test_a_leaf_shared_on_the_default_site_is_not_found_with_the_pages_as_candidates() -> None:
    resolution = await resolver(SITES).resolve("webhook")
    assert (resolution.reason, resolution.rule, resolution.site, resolution.location) == (
        Reason.NOT_FOUND,
        Rule.NONE,
        None,
        None,
    )
    assert sorted(resolution.candidates) == ["alpha/guide/webhook/", "alpha/ops/webhook/"]


async def test_a_leaf_shared_inside_a_named_site_is_not_found_with_candidates() -> None:
    indexes = {"alpha": ALPHA, "beta-docs": site_index("beta-docs", "a/hook/", "b/hook/")}
    resolution = await resolver(indexes).resolve("beta-docs/hook")
    assert (resolution.reason, resolution.rule, resolution.site, resolution.location) == (
        Reason.NOT_FOUND,
        Rule.NONE,
        None,
        None,
    )
    assert sorted(resolution.candidates) == ["beta-docs/a/hook/", "beta-docs/b/hook/"]
