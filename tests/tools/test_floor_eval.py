"""tools/floor_eval.py's counts: what each floor empties, drops and lets through, by the question's length."""

from __future__ import annotations

from shared.providers.mkdocs.scoring.text import Query, analyze_query
from tools.floor_eval import Asked, report


def test_a_floor_scaled_by_length_keeps_a_long_question_s_hit_and_still_empties_what_scores_below_it() -> None:
    short, long = analyze_query("rotate the admin password"), Query(tuple(f"term{n}" for n in range(40)), ())
    found = [  # 40 terms: `length` 8 / 40 = 0.2
        Asked("answerable", short, [0.5, 0.02], rank=1),
        Asked("answerable", long, [0.012, 0.004], rank=1),  # a long question's best page below 0.015
        Asked("long-far", long, [0.006], rank=None),
        Asked("long-near", long, [0.013], rank=None),
    ]

    absolute, scaled = report(found, 0.015, 0.0), report(found, 0.015, 0.5)

    assert absolute[1:] == [
        "    <=8 terms:    1 answerable,  0 answered with nothing,  0 of 1 top-5 hits dropped",
        "    >32 terms:    1 answerable,  1 answered with nothing,  1 of 1 top-5 hits dropped",
        "  off-topic answered: long-far 0/1, long-near 0/1",
    ]
    # 0.015 * 0.2 ** 0.5 = 0.0067: the long question's hit and the near off-topic one pass, the far one does not
    assert scaled[2:] == [
        "    >32 terms:    1 answerable,  0 answered with nothing,  0 of 1 top-5 hits dropped",
        "  off-topic answered: long-far 0/1, long-near 1/1",
    ]
