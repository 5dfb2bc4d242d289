"""The insights report and the evaluation set made from usage events (pure: events in, a report out).

- A search's place is the site it asked for, else its best result's site, else none (`site: null`: an unscoped
  search that found nothing, shown in every site's report); its version is the one it asked for (null: default).
- A read follows a search when the same caller searched within `FOLLOW_MS` before it and the page read is among that
  search's first locations (the latest such search, at the page's rank there). Callers are pseudonyms that change
  once per retention period, so a read just after a period began follows no search of the last one.
- A question (scrubbed, case-folded) is shown only when at least `min_callers` distinct callers asked it in the
  period, in every list and in the evaluation set; feedback is shown on its page (its text was scrubbed when kept).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from shared.insights.events import Event, FeedbackEvent, ReadEvent, SearchEvent, page_of

FOLLOW_MS = 30 * 60 * 1000
DAY_MS = 86_400_000
MAX_ENTRIES = 200
"""The most entries a list of the report holds (the most-asked first)."""


class _Out(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class Totals(_Out):
    site: str | None
    version: str | None
    searches: int
    empty: int
    floored: int
    empty_share: float
    floored_share: float
    reads: int
    reads_after_search: int
    feedback: int
    callers: int


class Asked(_Out):
    site: str | None
    version: str | None
    question: str
    callers: int
    searches: int


class LedHere(_Out):
    question: str
    rank: int
    callers: int


class ReadPage(_Out):
    site: str | None
    version: str | None
    location: str
    reads: int
    after_search: int
    questions: list[LedHere]
    hidden_questions: int
    """Questions that led here but were asked by fewer callers than the threshold: counted, not shown."""


class Unfound(_Out):
    site: str | None
    version: str | None
    location: str


class Language(_Out):
    site: str | None
    version: str | None
    language: str | None
    searches: int


class Feedback(_Out):
    site: str | None
    version: str | None
    location: str
    kind: str
    text: str
    at: datetime


class InsightsReport(_Out):
    since: datetime
    until: datetime
    days: int
    site: str | None
    version: str | None
    min_callers: int
    complete: bool
    """False when the period held more events than a report reads (`store.MAX_EVENTS`): the most recent days are
    counted, the earliest left out."""
    totals: list[Totals]
    unanswered: list[Asked]
    read_after_search: list[ReadPage]
    searched_not_read: list[Asked]
    never_found: list[Unfound]
    languages: list[Language]
    feedback: list[Feedback]


@dataclass(frozen=True, slots=True)
class Scope:
    """What a report covers: the last `days` up to `until` (ms since the epoch), one site and version if given."""

    until: int
    days: int
    site: str | None = None
    version: str | None = None
    min_callers: int = 2

    @property
    def since(self) -> int:
        return self.until - self.days * DAY_MS


def place(event: SearchEvent) -> str | None:
    return event.site or event.best_site


def key(question: str) -> str:
    """What makes two questions one: case and spacing aside."""
    return " ".join(question.casefold().split())


class _Period:
    """The events of a scope, with the joins every list needs worked out once."""

    def __init__(self, events: Iterable[Event], scope: Scope) -> None:
        kept = [event for event in events if scope.since <= event.at <= scope.until]
        self.scope = scope
        self.searches = sorted((e for e in kept if isinstance(e, SearchEvent)), key=lambda e: e.at)
        self.reads = sorted((e for e in kept if isinstance(e, ReadEvent)), key=lambda e: e.at)
        self.feedback = [e for e in kept if isinstance(e, FeedbackEvent)]
        askers: dict[str, set[str]] = defaultdict(set)
        spelt: dict[str, Counter[str]] = defaultdict(Counter)
        for search in self.searches:
            askers[key(search.question)].add(search.caller)
            spelt[key(search.question)][search.question] += 1
        self.askers = askers
        self.spelling = {asked: counts.most_common(1)[0][0] for asked, counts in spelt.items()}
        self.followed: dict[int, tuple[SearchEvent, int]] = {}
        """Each read (its index in `reads`) that followed a search: that search and the page's rank in it."""
        self.read_after: set[int] = set()
        """The searches (their `id`) some read followed."""
        by_caller: dict[str, list[SearchEvent]] = defaultdict(list)
        for search in self.searches:
            by_caller[search.caller].append(search)
        for number, read in enumerate(self.reads):
            page = page_of(read.location)
            for search in reversed(by_caller.get(read.caller, [])):
                if search.at > read.at or read.at - search.at > FOLLOW_MS:
                    continue
                pages = [page_of(location) for location in search.locations]
                if page in pages:
                    self.followed[number] = (search, pages.index(page) + 1)
                    self.read_after.add(id(search))
                    break

    def shown(self, question: str) -> bool:
        return len(self.askers.get(key(question), ())) >= self.scope.min_callers

    def in_scope(self, site: str | None, version: str | None, *, unscoped: bool = True) -> bool:
        """Whether an event at `site` and `version` belongs in the report (an unplaced one in every site's)."""
        wanted_site, wanted_version = self.scope.site, self.scope.version
        if wanted_site is not None and not (site == wanted_site or (unscoped and site is None)):
            return False
        return wanted_version is None or version == wanted_version


def build(
    events: Iterable[Event],
    scope: Scope,
    pages: Mapping[str, Sequence[str]] | None = None,
    *,
    complete: bool = True,
) -> InsightsReport:
    """The report of `events` over `scope`; `pages`: each site's page locations (its default version's), for the
    pages no search returned (a site without an entry is left out of that list); `complete`: `events` are all the
    period's."""
    period = _Period(events, scope)
    searches = [s for s in period.searches if period.in_scope(place(s), s.version)]
    reads = [(n, r) for n, r in enumerate(period.reads) if period.in_scope(r.site, r.version, unscoped=False)]
    feedback = [f for f in period.feedback if period.in_scope(f.site, f.version, unscoped=False)]
    return InsightsReport(
        since=_instant(scope.since),
        until=_instant(scope.until),
        days=scope.days,
        site=scope.site,
        version=scope.version,
        min_callers=scope.min_callers,
        complete=complete,
        totals=_totals(period, searches, reads, feedback),
        unanswered=_asked(period, [s for s in searches if not s.results]),
        read_after_search=_read_pages(period, reads),
        searched_not_read=_asked(period, [s for s in searches if s.results and id(s) not in period.read_after]),
        never_found=_never_found(period, searches, pages or {}),
        languages=_languages(searches),
        feedback=[
            Feedback(site=f.site, version=f.version, location=f.location, kind=f.kind, text=f.text, at=_instant(f.at))
            for f in sorted(feedback, key=lambda f: (f.location, f.at))
        ][:MAX_ENTRIES],
    )


def _totals(
    period: _Period, searches: list[SearchEvent], reads: list[tuple[int, ReadEvent]], feedback: list[FeedbackEvent]
) -> list[Totals]:
    places: dict[tuple[str | None, str | None], dict[str, int]] = defaultdict(Counter)
    callers: dict[tuple[str | None, str | None], set[str]] = defaultdict(set)
    for search in searches:
        counts, at = places[(place(search), search.version)], (place(search), search.version)
        counts["searches"] += 1
        counts["empty"] += not search.results and not search.floored
        counts["floored"] += search.floored
        callers[at].add(search.caller)
    for number, read in reads:
        places[(read.site, read.version)]["reads"] += 1
        places[(read.site, read.version)]["after"] += number in period.followed
        callers[(read.site, read.version)].add(read.caller)
    for given in feedback:
        places[(given.site, given.version)]["feedback"] += 1
    totals = []
    for (site, version), counts in places.items():
        asked = counts["searches"]
        totals.append(
            Totals(
                site=site,
                version=version,
                searches=asked,
                empty=counts["empty"],
                floored=counts["floored"],
                empty_share=round(counts["empty"] / asked, 4) if asked else 0.0,
                floored_share=round(counts["floored"] / asked, 4) if asked else 0.0,
                reads=counts["reads"],
                reads_after_search=counts["after"],
                feedback=counts["feedback"],
                callers=len(callers[(site, version)]),
            )
        )
    return sorted(totals, key=lambda t: (t.site is None, t.site or "", t.version or ""))


def _asked(period: _Period, searches: list[SearchEvent]) -> list[Asked]:
    """The questions of `searches` that may be shown, by place: how many callers asked and how often."""
    grouped: dict[tuple[str | None, str | None, str], list[SearchEvent]] = defaultdict(list)
    for search in searches:
        if period.shown(search.question):
            grouped[(place(search), search.version, key(search.question))].append(search)
    asked = [
        Asked(
            site=site,
            version=version,
            question=period.spelling[question],
            callers=len({s.caller for s in found}),
            searches=len(found),
        )
        for (site, version, question), found in grouped.items()
    ]
    return sorted(asked, key=lambda a: (-a.callers, -a.searches, a.question))[:MAX_ENTRIES]


def _read_pages(period: _Period, reads: list[tuple[int, ReadEvent]]) -> list[ReadPage]:
    grouped: dict[tuple[str, str | None, str], list[int]] = defaultdict(list)
    for number, read in reads:
        grouped[(read.site, read.version, page_of(read.location))].append(number)
    pages = []
    for (site, version, _), numbers in grouped.items():
        led: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for number in numbers:
            if number in period.followed:
                search, rank = period.followed[number]
                led[key(search.question)].append((rank, search.caller))
        shown = [question for question in led if period.shown(question)]
        questions = [
            LedHere(
                question=period.spelling[question],
                rank=Counter(rank for rank, _ in led[question]).most_common(1)[0][0],
                callers=len({caller for _, caller in led[question]}),
            )
            for question in shown
        ]
        pages.append(
            ReadPage(
                site=site,
                version=version,
                location=period.reads[numbers[0]].location,
                reads=len(numbers),
                after_search=sum(number in period.followed for number in numbers),
                questions=sorted(questions, key=lambda q: (-q.callers, q.rank, q.question)),
                hidden_questions=len(led) - len(shown),
            )
        )
    return sorted(pages, key=lambda p: (-p.reads, p.location))[:MAX_ENTRIES]


def _never_found(period: _Period, searches: list[SearchEvent], pages: Mapping[str, Sequence[str]]) -> list[Unfound]:
    returned = {page_of(location) for search in searches for location in search.locations}
    unfound = [
        Unfound(site=site, version=None, location=location)
        for site, locations in sorted(pages.items())
        if period.scope.version is None and period.scope.site in (None, site)
        for location in locations
        if page_of(location) not in returned
    ]
    return unfound[:MAX_ENTRIES]


def _languages(searches: list[SearchEvent]) -> list[Language]:
    counts = Counter((place(s), s.version, s.language) for s in searches if s.kind == "code")
    return [
        Language(site=site, version=version, language=language, searches=n)
        for (site, version, language), n in counts.most_common()
    ]


def as_eval(events: Iterable[Event], scope: Scope, *, corpus: str) -> dict[str, object]:
    """An evaluation set in `tools/eval.py`'s format from the searches followed by a read of exactly one page: each
    shown question with the pages read after it as its acceptable locations."""
    period = _Period(events, scope)
    read_after: dict[int, set[str]] = defaultdict(set)
    searched: dict[int, SearchEvent] = {}
    for number, (search, _) in period.followed.items():
        read_after[id(search)].add(period.reads[number].location)
        searched[id(search)] = search
    acceptable: dict[str, set[str]] = defaultdict(set)
    for ident, locations in read_after.items():
        search = searched[ident]
        one_page = len({page_of(location) for location in locations}) == 1
        if one_page and period.shown(search.question) and period.in_scope(place(search), search.version):
            acceptable[key(search.question)].update(locations)
    cases = [
        {
            "id": f"usage-{number + 1:03d}",
            "query": period.spelling[question],
            "acceptableLocations": sorted(locations),
            "callers": len(period.askers[question]),
            "failureMode": "from-usage",
        }
        for number, (question, locations) in enumerate(sorted(acceptable.items()))
    ]
    return {"version": 1, "corpus": corpus, "cases": cases}


def _instant(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)
