"""HTML from the origin is handled in time linear in its size: the scanner's own operation count doubles with the
input, and the whole conversion's (and the index text's) CPU time, measured in a subprocess, grows like the input,
not its square. Nothing here reads a wall clock."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shared.errors import Unconvertible
from shared.providers.mkdocs.fetching.markup import MAX_TAGS, scan

ROOT = Path(__file__).resolve().parents[3]

HOSTILE = {
    "unterminated tags": "<a",
    "a run of <": "<",
    "comments that never end": "<!--",
    "scripts that never end": "<script>",
    "unpaired quotes": '<a b="x>',
    "marked sections": "<![CDATA[>",
    "end tags that never close": "</a",
    "declarations that never close": "<!x",
}


@pytest.mark.parametrize("unit", HOSTILE.values(), ids=HOSTILE.keys())
def test_the_scan_does_twice_the_work_for_twice_the_input(unit: str) -> None:
    small, large = scan(unit * 20_000), scan(unit * 40_000)
    assert large.steps <= 2 * small.steps + 10
    assert small.escaped == 20_000 and large.escaped == 40_000  # each read as the text it is


def test_what_closes_is_kept_and_what_does_not_is_escaped() -> None:
    page = '<p class="x">a < b</p><!-- c --><script>if (a<b) {}</script><br/><a href="don\'t">x<y'
    scanned = scan(page)
    assert scanned.html == '<p class="x">a &lt; b</p><!-- c --><script>if (a<b) {}</script><br/><a href="don\'t">x&lt;y'
    assert (scanned.tags, scanned.escaped, scanned.depth) == (6, 2, 1)


def test_a_page_denser_than_any_real_one_is_refused_before_any_work_per_tag() -> None:
    with pytest.raises(Unconvertible, match="more than 100,000"):
        scan("<b>" * (MAX_TAGS + 1))


CPU = """
import gc, json, sys, time
from shared.providers.mkdocs.fetching.convert import convert
from shared.providers.mkdocs.indexes.index import html_to_text
unit, count, which = sys.argv[1], int(sys.argv[2]), sys.argv[3]
handle = html_to_text if which == "index" else convert
pages = {"single": unit * count, "double": unit * (2 * count)}
try:
    handle(unit * 2)  # imports and first-use set-up are not the page's work
except Unconvertible:
    pass
gc.disable()  # a collection landing in one run and not the other is not the page's work
best = {}
for _ in range(5):  # the two sizes in turn, so both meet the same load on the machine
    for size, page in pages.items():
        started = time.process_time()
        try:
            handle(page)
        except Unconvertible:
            pass
        spent = time.process_time() - started
        best[size] = min(best.get(size, spent), spent)
print(json.dumps([best["single"], best["double"]]))
"""


def cpu_seconds(unit: str, count: int, which: str) -> tuple[float, float]:
    """The best CPU time of `count` units and of twice as many, measured in turn in one fresh process."""
    finished = subprocess.run(
        [sys.executable, "-c", CPU, unit, str(count), which],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    single, double = json.loads(finished.stdout)
    return float(single), float(double)


@pytest.mark.parametrize(
    ("unit", "count", "which"),
    [
        ("<a", 40_000, "convert"),  # 40,000 took 5.8 s and 80,000 23 s before the scan
        ("<![CDATA[>", 10_000, "convert"),
        ("<", 400_000, "index"),  # 400,000 in one index entry took 45 s
        ("<p", 200_000, "index"),
    ],
    ids=["a page of unterminated tags", "a page of marked sections", "an index entry of <", "of unterminated <p"],
)
def test_cpu_time_grows_like_the_input_not_its_square(unit: str, count: int, which: str) -> None:
    single, double = cpu_seconds(unit, count, which)
    assert double < 3 * max(single, 0.01), (single, double)  # quadratic would be 4 times
