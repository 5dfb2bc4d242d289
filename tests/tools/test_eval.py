"""The evaluation harness: its self-test, scoring units, the limit guard and a full run over a fake backend."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tools import eval as harness


def test_the_self_test_passes() -> None:
    assert harness.self_test() == []


def test_self_test_is_its_own_parameter_set_and_refuses_other_options() -> None:
    assert harness.main(["--self-test"]) == 0
    assert harness.main(["--self-test", "--search-limit", "1"]) == 2
    assert harness.main(["--self-test", "--origin", "http://x"]) == 2


def test_self_test_exits_one_on_a_failed_assertion() -> None:
    assert harness.main(["--self-test"], limit_guard=lambda limit: None) == 1


@pytest.mark.parametrize("limit", [4, 51, 0])
def test_out_of_range_limits_exit_two(limit: int, tmp_path: Path) -> None:
    args = ["--search-limit", str(limit), "--eval-set", str(tmp_path / "set.json"), "--origin", "http://x"]
    assert harness.main(args) == 2


def test_a_measurement_run_needs_a_target_and_has_a_default_set() -> None:
    assert harness.main([]) == 2
    assert harness.DEFAULT_EVAL_SET.is_file()
    assert harness.parse_eval_set(harness.DEFAULT_EVAL_SET.read_text(encoding="utf-8")).cases


@pytest.mark.parametrize(
    ("returned", "acceptable", "rank"),
    [
        (["x/", " /FAQ/ "], ["faq/"], 2),
        (["guide/x"], ["guide/x.md"], None),
        (["guide/index"], ["guide"], None),
        (["faq/#a"], ["faq/#b", "faq/"], None),
        ([], ["faq/"], None),
    ],
)
def test_hit_rank_compares_trimmed_case_folded_locations(returned: list[str], acceptable: list[str], rank: int) -> None:
    assert harness.hit_rank(returned, acceptable) == rank


def test_page_level_rank_ignores_fragments() -> None:
    assert harness.hit_rank(["faq/#a"], ["faq/#b"], harness.page_of) == 1


def test_discovery_scores() -> None:
    assert harness.discovery(1) == {
        "hitRank": 1,
        "hitAt1": True,
        "hitAt5": True,
        "reciprocalRankAt10": 1.0,
        "ndcgAt5": 1.0,
    }
    assert harness.discovery(2)["ndcgAt5"] == pytest.approx(1 / math.log2(3))
    assert harness.discovery(10)["reciprocalRankAt10"] == pytest.approx(0.1)
    assert harness.discovery(None) == {
        "hitRank": None,
        "hitAt1": False,
        "hitAt5": False,
        "reciprocalRankAt10": 0.0,
        "ndcgAt5": 0.0,
    }


def test_commit_attribution_never_guesses() -> None:
    assert harness.attribute_commit("abc1234", None) == ("abc1234", "parameter")
    assert harness.attribute_commit(None, "0.1.0+g0123abc") == ("0123abc", "cli-version")
    assert harness.attribute_commit(None, "0.1.0") == (None, "unknown")


class FakeBackend:
    async def search(self, query: str, limit: int) -> harness.Reply:
        results = [{"location": "faq/", "previewText": "reset the admin password", "score": 0.5}]
        return 200, {"query": query, "provider": "mkdocs", "results": results}, None

    async def get(self, location: str) -> harness.Reply:
        return (
            200,
            {"location": location, "content": "# FAQ", "resolution": {"reason": "resolved", "rule": "exact"}},
            None,
        )

    async def version(self) -> str | None:
        return "0.1.0+deadbee"


def test_a_run_writes_a_schema_two_record(tmp_path: Path) -> None:
    eval_set = tmp_path / "set.json"
    case = {"id": "c1", "query": "admin password", "acceptableLocations": ["faq/"], "expectedPreviewTerms": ["admin"]}
    eval_set.write_text(json.dumps({"version": 1, "cases": [case]}))

    async def fake_target(args: Any, parsed: harness.EvalSet) -> tuple[list[dict[str, Any]], str | None]:
        return await harness.measure(FakeBackend(), parsed, args.search_limit)

    output = tmp_path / "runs" / "run.json"
    args = ["--eval-set", str(eval_set), "--base-url", "http://api", "--label", "t", "--output", str(output)]
    assert harness.main(args, target=fake_target) == 0
    record = json.loads(output.read_text())
    assert record["schemaVersion"] == 2 and record["label"] == "t"
    assert (record["commitSha"], record["commitShaSource"]) == ("deadbee", "cli-version")
    assert record["harnessCommitSha"]
    assert record["searchLimit"] == 10 and record["hitAtNDepth"] == 5 and record["evalSetVersion"] == 1
    assert record["knownLimitations"]
    assert record["aggregate"]["hitAt1Rate"] == 1.0 and record["aggregate"]["fetchSuccessRate"] == 1.0
    (only,) = record["cases"]
    assert only["previewText"] == "reset the admin password" and only["expectedPreviewTerms"] == ["admin"]
    assert only["fetch"]["ok"] and only["fetch"]["rule"] == "exact"
    assert record["cliVersion"] == record["serviceVersion"] and record["cliPath"] == "http://api"
    assert record["resolvedCliPath"] == "http://api"


def test_pass_thru_prints_the_whole_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    eval_set = tmp_path / "set.json"
    eval_set.write_text(
        json.dumps({"version": 1, "cases": [{"id": "c1", "query": "q", "acceptableLocations": ["faq/"]}]})
    )

    async def fake_target(args: Any, parsed: harness.EvalSet) -> tuple[list[dict[str, Any]], str | None]:
        return await harness.measure(FakeBackend(), parsed, args.search_limit)

    args = [
        "--eval-set",
        str(eval_set),
        "--base-url",
        "http://api",
        "--output",
        str(tmp_path / "r.json"),
        "--pass-thru",
    ]
    assert harness.main(args, target=fake_target) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["schemaVersion"] == 2 and printed["cases"]


async def test_a_reply_that_is_json_but_not_an_object_is_recorded_not_raised() -> None:
    import httpx

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=["not", "an", "object"])

    backend = harness.HttpBackend("http://api")
    backend._client = httpx.AsyncClient(base_url="http://api", transport=httpx.MockTransport(handler))
    record = await harness.run_case(backend, harness.Case("c", "q", ["faq/"]), 10)
    await backend.aclose()
    assert record["search"]["error"] == "HTTP 200: reply is JSON but not an object"
    assert record["fetch"] == {"ok": False, "error": "nothing to fetch"}
