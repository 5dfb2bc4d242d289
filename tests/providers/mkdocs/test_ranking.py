"""The tokenizer and the per-site ranker, on small hand-built indexes."""

from __future__ import annotations

import pytest

from shared.providers.mkdocs.indexes.index import SiteIndex
from shared.providers.mkdocs.scoring.parameters import DEFAULT
from shared.providers.mkdocs.scoring.semantics import relevance_floor
from shared.providers.mkdocs.scoring.text import analyze, analyze_query, identifier_share, written_words
from tests.support.pages import FILLER, page, ranker
from tests.support.ranking import search


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("policy.default", {"policy.default", "polici", "default"}),
        ("--dry-run", {"dry-run", "dri", "run"}),
        ("argocd_app_info", {"argocd_app_info", "argocd", "app", "info"}),
        ("CreateNamespace=true", {"createnamespace=true", "createnamespace", "creat", "namespac", "true"}),
        ("argocd.argoproj.io/skip-reconcile", {"argocd.argoproj.io/skip-reconcile", "skip-reconcile", "reconcil"}),
        ("route53:ChangeResourceRecordSets", {"route53", "changeresourcerecordsets", "record"}),
        ("SAIFTRBL-0042", {"saiftrbl-0042", "saiftrbl", "0042"}),
    ],
)
def test_identifiers_are_kept_whole_and_split(token: str, expected: set[str]) -> None:
    assert expected <= set(analyze(token))


def test_words_are_stemmed_and_stop_words_dropped() -> None:
    assert analyze("How do I create the namespaces?") == ["creat", "namespac"]


def test_query_terms_are_distinct_and_adjacent_words_also_join() -> None:
    query = analyze_query("back up the backup, then log in")
    assert query.words == ("back", "backup", "log")
    assert "login" in query.joined
    assert "backup" not in query.joined


@pytest.mark.parametrize(
    ("query", "share"),
    [
        ("resource.respectRBAC strict vs normal", 1 / 4),
        ("set password_history_count on the default policy", 1 / 6),
        ("git ignores insteadOf", 1 / 3),
        ('The CustomResourceDefinition "applicationsets.argoproj.io" is invalid', 1 / 5),
        ("CN=k8s_admins,CN=Users", 2 / 2),
        ("built-in GitHub app, e.g. for 2.14 or v1.2.x", 0.0),  # words, names, abbreviations, versions
        ("how do I sync", 0.0),
        ("", 0.0),
    ],
)
def test_the_identifier_share_counts_names_a_reader_copied_not_words(query: str, share: float) -> None:
    assert identifier_share(query) == pytest.approx(share)


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("Module: Hub-Networking", ["modul", "hub", "network"]),
        ("VNet Peering with vWAN", ["vnet", "peer", "vwan"]),
        ("argocd.argoproj.io/skip-reconcile", ["argocd", "argoproj", "io", "skip", "reconcil"]),
        ("OneLogin", ["onelogin"]),
    ],
)
def test_a_title_counts_each_written_word_once(title: str, expected: list[str]) -> None:
    assert written_words(title) == expected


def test_title_coverage_is_shared_among_the_words_a_title_writes() -> None:
    index = ranker(page("peering/", "VNet Peering", "Network setup notes."), *FILLER)
    shares = {term: share for term in index.titles.terms for number, share in index.titles.of(term) if number == 0}
    assert set(shares) == {"vnet", "peer"}  # not also `v` and `net`: a query writing "VNet" covers half the title
    assert sum(shares.values()) == pytest.approx(1.0)


def test_a_rare_joined_spelling_weighs_no_more_than_the_query_s_best_word() -> None:
    crd = page("crd/", "Custom resources", "The DNSRecord resource is stored in the cluster.")
    ttl = page("ttl/", "Time to live", "Set a custom ttl on the dns records of a service.")
    noise = [page(f"dns/{n}/", f"Provider {n}", "custom dns records and their ttl") for n in range(6)]
    index = ranker(crd, ttl, *noise, *FILLER)
    query = analyze_query("custom TTL on DNS records")
    assert "dnsrecord" in query.joined
    for view in (index.page_view, index.section_view):
        weights = view.weights(query)
        assert weights["dnsrecord"] == pytest.approx(max(weights[word] for word in query.words))
        assert weights["dnsrecord"] < view.idf_of("dnsrecord") / sum(view.idf_of(word) for word in query.words)


def test_one_result_per_page_carrying_its_best_section() -> None:
    guide = page(
        "guide/",
        "Deployment guide",
        "How deployments work.",
        ("install", "Install", "Run the installer."),
        ("rollback", "Rolling back a widget", "Use widget rollback to return to the previous widget revision."),
    )
    hits = search(ranker(guide, *FILLER), "widget rollback", 10)
    assert [hit.entry.location for hit in hits] == ["guide/"]
    hit = hits[0]
    assert hit.section is not None and hit.section.location == "guide/#rollback"
    assert hit.breadcrumb == ("Deployment guide", "Rolling back a widget")
    assert "previous widget revision" in hit.preview_source


def test_preview_source_falls_back_to_the_page_text_when_the_best_section_is_empty() -> None:
    doc = page("doc/", "Widget", "", ("widget", "Widget", ""), ("more", "More", "Widgets are small tools."))
    hit = search(ranker(doc, *FILLER), "widget", 1)[0]
    assert hit.preview_source == "Widgets are small tools."


def test_boost_multiplies_the_score() -> None:
    text = "The widget controller reconciles widgets."
    plain = search(ranker(page("a/", "Alpha", text), page("b/", "Beta", text), *FILLER), "widget", 10)
    boosted = search(ranker(page("a/", "Alpha", text), page("b/", "Beta", text, boost=2.0), *FILLER), "widget", 10)
    hidden = search(ranker(page("a/", "Alpha", text, boost=0.0), page("b/", "Beta", text), *FILLER), "widget", 10)
    assert plain[0].score == pytest.approx(plain[1].score)
    assert boosted[0].entry.location == "b/"
    assert boosted[0].score == pytest.approx(2 * boosted[1].score)
    assert [hit.entry.location for hit in hidden] == ["b/", "a/"]
    assert hidden[1].score == 0.0


def test_a_title_match_beats_a_body_match() -> None:
    titled = page("titled/", "Widget", "Setting things up.")
    mentioned = page("mentioned/", "Setup", "Setting things up, including the widget.")
    hits = search(ranker(mentioned, titled, *FILLER), "widget", 10)
    assert [hit.entry.location for hit in hits] == ["titled/", "mentioned/"]


def test_a_page_covering_more_of_the_query_wins_over_repetition() -> None:
    repeats = page("repeats/", "Notes", "widget " * 30)
    covers = page("covers/", "Notes two", "The widget rollback command restores a widget.")
    hits = search(ranker(repeats, covers, *FILLER), "widget rollback", 10)
    assert hits[0].entry.location == "covers/"


def test_a_star_inside_a_query_is_dropped_and_the_rest_scored() -> None:
    index = ranker(page("w/", "Widget", "All about widgets."), *FILLER)
    star = search(index, "* widget", 10)
    plain = search(index, "widget", 10)
    assert [(hit.entry.location, hit.score) for hit in star] == [(hit.entry.location, hit.score) for hit in plain]
    assert star and star[0].entry.location == "w/"


def test_queries_without_terms_return_nothing() -> None:
    index = ranker(page("w/", "Widget", "All about widgets."), *FILLER)
    assert search(index, "*", 10) == []
    assert search(index, "the of and", 10) == []
    assert search(index, "widget", 0) == []


def test_listing_returns_page_entries_in_index_order() -> None:
    index = ranker(
        page("b/", "Bee", "", ("one", "One", "x")),
        page("a/", "Ay", "", ("two", "Two", "y")),
    )
    listed = index.listing()
    assert [hit.entry.location for hit in listed] == ["b/", "a/"]
    assert [hit.preview_source for hit in listed] == ["x", "y"]  # the page's text, not its empty page entry


def test_limit_caps_the_results_best_first() -> None:
    pages = [page(f"p{n}/", f"Page {n}", "widget " * (n + 1) + "filler " * 20) for n in range(8)]
    hits = search(ranker(*pages, *FILLER), "widget", 3)
    assert len(hits) == 3
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)


def test_a_site_about_the_query_outscores_a_site_that_mentions_it_once() -> None:
    about = ranker(*[page(f"dns/{n}/", f"DNS record {n}", "external-dns manages dns records") for n in range(5)])
    mentions = ranker(page("misc/", "Misc", "we once tried external-dns for records"), *FILLER)
    query = "external-dns records"
    assert search(about, query, 1)[0].score > search(mentions, query, 1)[0].score


def test_every_matching_page_is_scored_whole_so_a_smaller_limit_is_a_prefix_of_a_larger_one() -> None:
    """A long page whose one section answers the question, among many short pages that mention its words in
    passing, wins on its section: ranking scores every matching page with its best section (not only a shortlist
    of the best by the page view), so `limit` cuts a list, never changes it."""
    passing = [
        page(f"p{n}/", f"Note {n}", "widget rollback mentioned in passing " + "filler " * (10 + n)) for n in range(12)
    ]
    deep = page(
        "deep/",
        "Operations handbook",
        "filler " * 400,
        ("rollback", "Widget rollback", "Widget rollback returns a widget to its previous revision."),
        *[(f"s{n}", f"Chapter {n}", "unrelated operations text " * 40) for n in range(6)],
    )
    index = ranker(*passing, deep, *FILLER)
    everything = search(index, "widget rollback", 50)
    assert everything[0].entry.location == "deep/"
    assert everything[0].section is not None and everything[0].section.location == "deep/#rollback"
    for limit in range(1, 6):
        assert [(hit.entry.location, hit.score) for hit in search(index, "widget rollback", limit)] == [
            (hit.entry.location, hit.score) for hit in everything[:limit]
        ]


def test_a_ranker_whose_views_number_terms_apart_is_refused() -> None:
    """Federated ranking and the prebuilt artifact look a term up once per site: its views share one vocabulary."""
    import dataclasses

    from shared.providers.mkdocs.scoring.ranking import Ranker

    built = ranker(page("w/", "Widget", "All about widgets."), *FILLER)
    index = SiteIndex.build("docs", built.entries)
    apart = dataclasses.replace(built.titles, terms=dict(built.titles.terms))
    with pytest.raises(ValueError, match="share one vocabulary"):
        Ranker.assemble(index, None, built.page_view, built.section_view, apart)
    assert (
        Ranker.assemble(index, None, built.page_view, built.section_view, built.titles).vocabulary is built.vocabulary
    )


def test_the_floor_falls_with_a_long_question_only_when_it_is_ranked_by_terms() -> None:
    short = analyze_query("install the agent")
    long = analyze_query(
        "signing key trust package install apt enable agent service survive reboot check started reports healthy "
        "rollout monitoring stack fleet debian virtual machines provisioned platform team mirror root sudo role "
        "configuration management exact steps commands order"
    )
    shrink = (DEFAULT.balance_words / len(long.words)) ** DEFAULT.floor_power

    assert len(short.words) <= DEFAULT.balance_words < len(long.words)
    assert relevance_floor(0.02, short, DEFAULT, by_meaning=False) == 0.02
    assert relevance_floor(0.02, long, DEFAULT, by_meaning=True) == 0.02  # the credit holds a long question up
    assert relevance_floor(0.02, long, DEFAULT, by_meaning=False) == pytest.approx(0.02 * shrink)
