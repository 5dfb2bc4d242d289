"""The insights report and evaluation set from usage events (`shared.insights.report`, pure): which questions are
shown, which reads follow which search and at what rank, where each search is counted."""

from __future__ import annotations

from shared.insights.events import FeedbackEvent, FeedbackKind, ReadEvent, SearchEvent, line, parse
from shared.insights.report import FOLLOW_MS, Scope, as_eval, build

NOW = 1_800_000_000_000
MINUTE = 60_000


def searched(
    caller: str,
    question: str,
    locations: list[str] | None = None,
    *,
    at: int = NOW - 10 * MINUTE,
    site: str | None = None,
    floored: bool = False,
    kind: str = "page",
    language: str | None = None,
) -> SearchEvent:
    found = locations or []
    best = found[0].split("/", 1)[0] if found else None
    return SearchEvent(
        at, caller, site, None, kind, language, "mkdocs", len(found), 0.5 if found else None, floored, question,
        found, best,
    )  # fmt: skip


def read(caller: str, location: str, *, at: int = NOW - 9 * MINUTE) -> ReadEvent:
    return ReadEvent(at, caller, location.split("/", 1)[0], None, location, "exact")


def scope(**given: object) -> Scope:
    return Scope(until=NOW, days=7, **given)  # type: ignore[arg-type]


def test_a_question_is_shown_only_when_enough_callers_asked_it() -> None:
    events = [
        searched("a", "rotate the gateway cert"),
        searched("b", "Rotate the  gateway cert"),
        searched("a", "my own secret project"),
        searched("a", "my own secret project"),
    ]
    report = build(events, scope())
    assert [(q.question, q.callers, q.searches) for q in report.unanswered] == [("rotate the gateway cert", 2, 2)]
    assert "secret project" not in report.model_dump_json()
    assert report.totals[0].searches == 4  # counted, not shown
    assert [q.question for q in build(events, scope(min_callers=1)).unanswered] == [
        "rotate the gateway cert",  # the most callers first
        "my own secret project",
    ]


def test_a_read_follows_the_latest_search_by_the_same_caller_that_returned_the_page() -> None:
    pages = ["forge/a/", "forge/b/", "forge/c/"]
    events = [
        searched("a", "older question", ["forge/c/", "forge/b/"], at=NOW - 20 * MINUTE),
        searched("b", "older question", ["forge/c/"], at=NOW - 20 * MINUTE),
        searched("a", "deploy the app", pages, at=NOW - 10 * MINUTE),
        searched("b", "deploy the app", pages, at=NOW - 10 * MINUTE),
        read("a", "forge/b/#section"),
        read("b", "forge/b/"),
        read("a", "forge/z/"),  # not among the search's results
        searched("b", "stale question", ["forge/a/"], at=NOW - 60 * MINUTE),
        read("b", "forge/a/", at=NOW - 60 * MINUTE + FOLLOW_MS + 1),  # too long after
        read("c", "forge/c/"),  # another caller's search
    ]
    report = build(events, scope())
    pages_read = {page.location: page for page in report.read_after_search}
    assert pages_read["forge/b/#section"].reads == 2 and pages_read["forge/b/#section"].after_search == 2
    assert [(q.question, q.rank, q.callers) for q in pages_read["forge/b/#section"].questions] == [
        ("deploy the app", 2, 2)
    ]
    assert pages_read["forge/z/"].after_search == 0 and pages_read["forge/c/"].after_search == 0
    assert pages_read["forge/a/"].after_search == 0
    assert [q.question for q in build(events, scope(min_callers=1)).searched_not_read] == [
        "older question",
        "stale question",
    ]


def test_questions_below_the_threshold_are_counted_on_a_page_not_shown() -> None:
    events = [searched("a", "lonely question", ["forge/a/"]), read("a", "forge/a/")]
    page = build(events, scope()).read_after_search[0]
    assert page.questions == [] and page.hidden_questions == 1 and page.after_search == 1


def test_floored_and_empty_are_told_apart_and_placed_by_site() -> None:
    events = [
        searched("a", "q1", site="forge"),
        searched("b", "q2", site="forge", floored=True),
        searched("a", "q3", ["forge/x/"]),  # unscoped, answered: its best result's site
        searched("a", "q4"),  # unscoped, nothing found: every site's
        searched("a", "q5", site="other"),
    ]
    totals = {(t.site, t.version): t for t in build(events, scope()).totals}
    assert totals[("forge", None)].searches == 3
    assert (totals[("forge", None)].empty, totals[("forge", None)].floored) == (1, 1)
    assert totals[(None, None)].searches == 1
    forge = build(events, scope(site="forge", min_callers=1))
    assert {q.question for q in forge.unanswered} == {"q1", "q2", "q4"}  # q4: unscoped, may be forge's gap


def test_pages_no_search_returned_and_languages_asked_for() -> None:
    events = [
        searched("a", "q", ["forge/a/", "forge/b/"]),
        searched("a", "code q", ["forge/c/"], kind="code", language="bash"),
        searched("b", "code q", ["forge/c/"], kind="code", language="bash"),
    ]
    report = build(events, scope(), {"forge": ["forge/a/", "forge/b/", "forge/c/", "forge/d/"], "other": ["o/x/"]})
    assert [(u.site, u.location) for u in report.never_found] == [("forge", "forge/d/"), ("other", "o/x/")]
    assert [(lang.language, lang.searches) for lang in report.languages] == [("bash", 2)]
    assert build(events, scope(site="forge"), {"forge": ["forge/d/"], "other": ["o/x/"]}).never_found[0].site == "forge"


def test_events_outside_the_period_are_left_out_and_feedback_is_shown_per_page() -> None:
    old = NOW - 8 * 24 * 60 * MINUTE
    events = [
        searched("a", "gone", at=old),
        searched("b", "gone", at=old),
        FeedbackEvent(NOW - MINUTE, "a", "forge", None, "forge/a/", FeedbackKind.WRONG, "the port is 8443"),
    ]
    report = build(events, scope())
    assert report.unanswered == [] and [(f.location, f.kind, f.text) for f in report.feedback] == [
        ("forge/a/", "wrong", "the port is 8443")
    ]


def test_the_evaluation_set_takes_searches_followed_by_one_page() -> None:
    events = [
        searched("a", "deploy the app", ["forge/a/", "forge/b/"]),
        searched("b", "deploy the app", ["forge/a/", "forge/b/"]),
        read("a", "forge/b/"),
        read("b", "forge/b/"),
        searched("a", "two pages read", ["forge/a/", "forge/b/"], at=NOW - 5 * MINUTE),
        searched("b", "two pages read", ["forge/a/", "forge/b/"], at=NOW - 5 * MINUTE),
        read("a", "forge/a/", at=NOW - 4 * MINUTE),
        read("a", "forge/b/", at=NOW - 3 * MINUTE),
        read("b", "forge/a/", at=NOW - 4 * MINUTE),
        searched("c", "one caller only", ["forge/a/"]),
        read("c", "forge/a/"),
    ]
    written = as_eval(events, scope(), corpus="https://docs.example.com")
    cases = written["cases"]
    assert isinstance(cases, list)
    assert [(case["query"], case["acceptableLocations"], case["callers"]) for case in cases] == [
        ("deploy the app", ["forge/b/"], 2),
        ("two pages read", ["forge/a/"], 2),  # b read one page after it; a read two, which is not a case
    ]


def test_an_event_survives_its_line_and_a_torn_line_is_skipped() -> None:
    event = searched("a", "q", ["forge/a/"])
    assert parse(line(event)) == event
    feedback = FeedbackEvent(NOW, "a", "forge", "2.0", "forge/a/", FeedbackKind.UNCLEAR, "which port?")
    assert parse(line(feedback)) == feedback
    assert parse(line(event)[:-5]) is None and parse('{"type": "visit", "at": 1}') is None and parse("[]") is None
