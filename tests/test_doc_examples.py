"""The documentation's example outputs are what running them gives (`tools/doc_examples.py`): a change that alters
an output shown in docs/ fails here until the page is regenerated with `python tools/doc_examples.py`."""

from __future__ import annotations

from tools.doc_examples import blocks, run, same


def test_every_generated_example_is_what_a_run_gives() -> None:
    assert len(list(blocks())) >= 4
    assert run(write=False) == [], "stale examples: run `python tools/doc_examples.py` and review the diff"


def test_numbers_may_differ_by_the_origins_length_and_nothing_else_may() -> None:
    assert same("offset 29,971 of 120,253", "offset 29,972 of 120,254")
    assert not same("offset 29,971 of 120,253", "offset 29,991 of 120,253")
    assert not same("Chapter 1: Backups", "Chapter 1: Restores")
