"""An instance too small for semantic matching ranks lexically and says why, whatever `Search__Semantic` says: the
limit is read from the process's cgroup, where a Flex Consumption instance's size shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.compose import MIN_SEMANTIC_MB, semantic_refused
from shared.memory import limit_mb
from shared.settings import load_settings


@pytest.mark.parametrize(
    ("content", "expected"),
    [("536870912\n", 512), ("2147483648", 2048), ("max\n", None), ("9223372036854771712", None), ("junk", None)],
)
def test_the_limit_is_read_from_cgroup_v2_or_v1(tmp_path: Path, content: str, expected: int | None) -> None:
    limit = tmp_path / "memory.max"
    limit.write_text(content)
    assert limit_mb((str(tmp_path / "absent"), str(limit))) == expected
    assert limit_mb((str(tmp_path / "absent"),)) is None


def test_semantic_matching_is_refused_below_a_gigabyte_and_says_why() -> None:
    on = load_settings({"Forge__Documentation__Search__Semantic": "true"})
    off = load_settings({"Forge__Documentation__Search__Semantic": "false"})
    assert semantic_refused(on, limit_mb=512) == (
        f"the instance has 512 MB of memory, less than the {MIN_SEMANTIC_MB} MB semantic matching needs"
    )
    assert semantic_refused(on, limit_mb=2048) is None and semantic_refused(off, limit_mb=512) is None
