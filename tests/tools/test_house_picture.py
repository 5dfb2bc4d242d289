"""tools/house.py: the import heights it reports are the package's own."""

from __future__ import annotations

from pathlib import Path

from tools.house import heights, main, module_names

ROOT = Path(__file__).resolve().parents[2]


def test_a_pipeline_stands_below_what_it_does_not_import() -> None:
    known = module_names(ROOT, "shared")
    measured = heights("shared.providers.mkdocs", known)

    assert measured["shared.providers.mkdocs.scoring.text"] == 1
    assert measured["shared.providers.mkdocs.fetching.unserved_check"] < measured["shared.providers.mkdocs.provider"]
    assert measured["shared.providers.mkdocs.provider"] == max(measured.values())
    assert main(["--root", str(ROOT)]) == 0
