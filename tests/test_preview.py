"""The preview output contract: normalization, the UTF-16 budget, ellipses and window choice."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.preview import ELLIPSIS, _best_candidate, _occurrences, _terms, _Units, make_preview


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def body(preview: str) -> str:
    return preview.removeprefix(ELLIPSIS).removesuffix(ELLIPSIS)


def filler(words: int, word: str = "lorem") -> str:
    return " ".join(f"{word}{i}" for i in range(words))


def test_short_text_is_returned_whole_collapsed_and_trimmed() -> None:
    assert make_preview("  Hello\t\tworld \r\n again  ", "world") == "Hello world again"


@pytest.mark.parametrize("space", ["\t", "\r\n", "\n\n\n", "\u00a0", "\u2003", "\u3000", "\f", " \u00a0\t "])
def test_every_whitespace_run_collapses_to_one_space(space: str) -> None:
    assert make_preview(f"alpha{space}beta{space}gamma", "beta") == "alpha beta gamma"


def test_collapsing_happens_before_the_budget() -> None:
    text = "start" + "\n" * 500 + filler(100)
    preview = make_preview(text, "")
    assert preview.startswith("start lorem0 lorem1")
    assert utf16_len(body(preview)) <= 200
    assert utf16_len(body(preview)) >= 190


def test_budget_counts_utf16_units_and_an_emoji_counts_two() -> None:
    text = "\U0001f600" * 150  # 300 units
    preview = make_preview(text, "")
    assert preview == "\U0001f600" * 100 + ELLIPSIS


def test_a_surrogate_pair_is_never_split_at_the_budget_edge() -> None:
    text = "a" + "\U0001f680" * 150  # the pair straddling unit 200 must be left out whole
    preview = make_preview(text, "")
    assert body(preview) == "a" + "\U0001f680" * 99
    assert utf16_len(body(preview)) == 199


def test_text_fitting_only_when_counted_in_code_points_is_cut() -> None:
    text = "\U0001f600" * 101  # 101 code points, 202 units
    assert make_preview(text, "") == "\U0001f600" * 100 + ELLIPSIS


def test_ellipses_sit_outside_the_budget_on_both_ends() -> None:
    text = filler(100) + " needle " + filler(100, "ipsum")
    preview = make_preview(text, "needle")
    assert preview.startswith(ELLIPSIS) and preview.endswith(ELLIPSIS)
    assert utf16_len(body(preview)) <= 200
    assert len(preview) <= 206
    assert "needle" in preview


def test_window_opens_a_little_before_the_match_on_a_word_boundary() -> None:
    text = filler(100) + " needle " + filler(100, "ipsum")
    shown = body(make_preview(text, "needle"))
    lead = shown[: shown.index("needle")]
    assert 0 < len(lead) <= 31
    assert text.find(" " + shown) >= 0 or text.startswith(shown)  # starts on a whole word


def test_no_match_and_empty_query_start_at_the_beginning() -> None:
    text = filler(200)
    for query in ("", "   ", "absent"):
        preview = make_preview(text, query)
        assert preview.startswith("lorem0 ") and preview.endswith(ELLIPSIS)


def test_match_near_the_end_uses_the_whole_budget_and_has_no_trailing_ellipsis() -> None:
    text = filler(200) + " needle end"
    preview = make_preview(text, "needle")
    assert preview.startswith(ELLIPSIS) and not preview.endswith(ELLIPSIS)
    assert preview.endswith("needle end")
    assert utf16_len(body(preview)) >= 195


def test_matching_is_case_insensitive() -> None:
    text = filler(100) + " NeedLe " + filler(100)
    assert "NeedLe" in make_preview(text, "nEEDle")


def test_the_window_with_most_distinct_terms_wins_over_an_earlier_single_term() -> None:
    text = "alpha " + filler(100) + " alpha beta gamma " + filler(100)
    shown = make_preview(text, "alpha beta gamma")
    assert "alpha beta gamma" in shown
    assert shown.startswith(ELLIPSIS)


def test_ties_go_to_the_earliest_window() -> None:
    text = filler(30) + " first " + filler(100) + " second " + filler(100)
    assert "first" in make_preview(text, "first second")
    text = filler(30) + " second " + filler(100) + " first " + filler(100)
    assert "second" in make_preview(text, "first second")


def test_repeated_term_counts_once() -> None:
    text = "alpha alpha alpha " + filler(100) + " alpha beta " + filler(100)
    assert "alpha beta" in make_preview(text, "alpha alpha beta")


def test_short_terms_are_skipped_when_a_longer_term_exists() -> None:
    text = "Skip to content " + filler(100) + " configure the webhook " + filler(100)
    preview = make_preview(text, "to webhook")
    assert "webhook" in preview and not preview.startswith("Skip")


def test_short_terms_are_used_when_no_longer_term_exists() -> None:
    text = filler(100) + " go on " + filler(100)
    assert "go on" in make_preview(text, "go on")


def test_only_the_first_twenty_occurrences_of_a_term_are_considered() -> None:
    pad = filler(60)
    early = " ".join(["alpha"] * 20)
    text = early + " " + pad + " alpha beta " + pad + " beta"
    # The pair "alpha beta" is the 21st alpha: outside the cap, so beta alone anchors the window.
    shown = make_preview(text, "alpha beta")
    assert "alpha beta" not in shown
    text = " ".join(["alpha"] * 19) + " " + pad + " alpha beta " + pad
    assert "alpha beta" in make_preview(text, "alpha beta")


def test_rejects_a_budget_below_one() -> None:
    with pytest.raises(ValueError):
        make_preview("text", "text", max_length=0)


def test_custom_budget() -> None:
    preview = make_preview(filler(50), "", max_length=20)
    assert utf16_len(body(preview)) <= 20


def _reference_best(hits: list[tuple[int, int, int]], units: _Units, budget: int) -> tuple[int, int] | None:
    """The window choice as the contract states it, every candidate tried (no early stop)."""
    best, best_count = None, 0
    for i, (start, _, _) in enumerate(hits):
        limit = units.offset(start) + budget
        seen: set[int] = set()
        last_end = start
        for hit_start, hit_end, number in hits[i:]:
            if units.offset(hit_start) >= limit:
                break
            if units.offset(hit_end) <= limit and number not in seen:
                seen.add(number)
                last_end = max(last_end, hit_end)
        if len(seen) > best_count:
            best, best_count = (start, last_end), len(seen)
    return best


WORDS = ["sync", "window", "ingress", "tls", "x", "to", "é", "😀", "policy", "Rbac"]


@settings(max_examples=400, deadline=None)
@given(
    text=st.lists(st.sampled_from(WORDS), max_size=200).map(" ".join),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join),
    budget=st.sampled_from([8, 40, 120, 200]),
)
def test_the_window_is_the_earliest_with_the_most_distinct_terms(text: str, query: str, budget: int) -> None:
    units = _Units(text)
    hits = _occurrences(text, _terms(query))
    assert _best_candidate(hits, units, budget) == _reference_best(hits, units, budget)
