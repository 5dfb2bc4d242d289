"""The command line's one-shot commands: search over the fixture origin, and when they rank semantically."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from shared.cache import MemoryStore
from shared.cli import _one_shot
from shared.settings import load_settings
from tests.support.sites import ROOTED_OVERRIDE, fixture_env
from tools.static_origin import StaticOrigin

ROOT = Path(__file__).resolve().parents[1]


def test_a_one_shot_command_without_shared_storage_ranks_lexically() -> None:
    settings = load_settings({"Forge__Documentation__Search__Semantic": "true"})

    assert _one_shot(settings, MemoryStore()).search.semantic is False
    shared = MemoryStore(shared=True)
    assert _one_shot(settings, shared).search.semantic is True  # stored embeddings are worth reading
    assert settings.search.semantic is True  # the caller's settings are left alone


def test_cli_search_answers_from_the_origin_with_the_default_settings(static_origin: StaticOrigin) -> None:
    searched = cli(static_origin, "search", "ingress", "--format", "json", semantic=None)  # the default: on

    assert searched.returncode == 0, searched.stderr
    results = json.loads(searched.stdout)["results"]
    assert results and results[0]["location"] == "ops/ingress/"


def test_cli_code_search_prints_the_blocks_with_their_language(static_origin: StaticOrigin) -> None:
    searched = cli(static_origin, "search", "pager receiver", "--kind", "code", "--language", "tf")
    refused = cli(static_origin, "search", "install", "--kind", "code", "--language", "not a language")

    assert searched.returncode == 0, searched.stderr
    assert searched.stdout.startswith(" 1. gamma-docs/tutorials/first-steps/#provision-the-pager-receiver")
    assert "[terraform" in searched.stdout and '    | resource "gamma_receiver" "pager" {' in searched.stdout
    assert refused.returncode == 2 and "language must be" in refused.stderr


def test_serve_refuses_an_unknown_log_level_in_one_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "shared", "serve", "--log-level", "verbose"],
        cwd=ROOT,
        env={key: value for key, value in os.environ.items() if not key.lower().startswith("forge__")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "invalid choice: 'verbose'" in result.stderr and "Traceback" not in result.stderr


def test_trace_is_accepted_like_uvicorn_accepts_it() -> None:
    from shared.cli import _parser

    assert _parser().parse_args(["serve", "--log-level", "TRACE"]).log_level == "trace"


def cli(origin: StaticOrigin, *arguments: str, semantic: str | None = "false") -> subprocess.CompletedProcess[str]:
    """`python -m shared ...` over the fixture origin; `semantic`: `Search__Semantic` (None: left to its default)."""
    env = {**os.environ, **fixture_env(origin.url, SearchIndexOverrides=ROOTED_OVERRIDE)}
    if semantic is None:
        env.pop("Forge__Documentation__Search__Semantic", None)
    else:
        env["Forge__Documentation__Search__Semantic"] = semantic
    command = [sys.executable, "-m", "shared", *arguments]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_cli_get_reads_a_page_in_parts_a_section_and_its_outline(static_origin: StaticOrigin) -> None:
    handbook = "gamma-docs/reference/handbook/"
    whole = json.loads(cli(static_origin, "get", handbook, "--format", "json").stdout)
    parts, offset = [], 0
    while offset is not None:
        part = cli(static_origin, "get", handbook, "--offset", str(offset), "--max-chars", "50000")
        assert part.returncode == 0, part.stderr
        parts.append(part.stdout)
        answer = json.loads(
            cli(
                static_origin, "get", handbook, "--offset", str(offset), "--max-chars", "50000", "--format", "json"
            ).stdout
        )
        offset = answer["nextOffset"]
        assert ("[continues: --offset" in part.stderr) == (offset is not None)
    section = cli(static_origin, "get", handbook, "--section", "the-retention-setting")
    outline = cli(static_origin, "get", handbook, "--view", "outline")
    unknown = cli(static_origin, "get", handbook, "--section", "nowhere")

    def unretrieved(markdown: str) -> str:  # each command is its own process, which fetches the page anew
        return re.sub(r"(?m)^retrieved: .*\n", "", markdown, count=1)

    assert unretrieved("".join(parts)) == unretrieved(whole["content"])
    assert len(parts) == 3
    assert "### The `retention` setting" in section.stdout and "## Chapter" not in section.stdout
    assert "  Chapter 5: Capacity  #chapter-5-capacity  (" in outline.stdout
    assert unknown.returncode == 2 and "no such section" in unknown.stderr
    assert "    Chapter 5: Capacity  #chapter-5-capacity\n" in unknown.stderr  # the sections to choose from
