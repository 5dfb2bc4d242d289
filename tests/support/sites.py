"""The MkDocs fixture sites under tests/fixtures/sites, built into one documentation origin with their messes.

`build_fixture_origin()` runs a real `mkdocs build` (Material, search plugin, the project's copy-Markdown hook)
for every published site, then applies what a build cannot express: the root-published index, the deleted
Markdown twin and the phantom index entry. The result is cached under build/test-origin/<digest>/, keyed by the
fixture sources, the hook, this module and the MkDocs versions, so an unchanged tree is never rebuilt.
tests/fixtures/README.md catalogues what each site and page is for.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from shared.settings import PREFIX, DocumentationSettings, load_settings
from tools.build_origin import build_site, cached_build, source_digest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_SITES = ROOT / "tests" / "fixtures" / "sites"
HOOK = ROOT / "docs" / "hooks" / "copy_markdown.py"
MOVED_HOOK = ROOT / "tests" / "fixtures" / "hooks" / "moved_from.py"
"""Turns `moved_from` and `troubleshoot_id` front matter into `mkdocs-redirects` stubs, as the spec's build does."""
CACHE_ROOT = ROOT / "build" / "test-origin"

DEFAULT_SITE = "alpha"
PUBLISHED_SITES = ("alpha", "beta-docs", "gamma-docs", "rooted-docs")
ROOTED_SITE = "rooted-docs"
UNPUBLISHED_SITE = "missing-docs"
SITES = (*PUBLISHED_SITES, UNPUBLISHED_SITE)

ROOT_INDEX_PATH = "/search/search_index.json"
"""Where rooted-docs publishes its index: at the origin root, not under /rooted-docs/."""
ROOTED_OVERRIDE = json.dumps({ROOTED_SITE: ROOT_INDEX_PATH})
"""A SearchIndexOverrides value that makes rooted-docs loadable."""

HTML_ONLY_PAGE = "ops/ingress"
"""alpha page whose .md twin is deleted after the build: only its HTML is served."""
PHANTOM_PAGE = "legacy/phantom"
"""alpha index entry with neither HTML nor Markdown behind it."""
PHANTOM_ENTRY = {
    "location": f"{PHANTOM_PAGE}/",
    "title": "Legacy phantom page",
    "text": "<p>This page was removed from the site, but its entry stayed in the search index.</p>",
}


def build_fixture_origin(cache_root: Path = CACHE_ROOT, *, force: bool = False) -> Path:
    """The built origin directory (`{origin}/{site}/...`), rebuilt only when its inputs changed."""

    def build(staging: Path) -> None:
        with ThreadPoolExecutor(len(PUBLISHED_SITES)) as pool:
            builds = [
                pool.submit(
                    build_site, FIXTURE_SITES / site / "mkdocs.yml", staging / site, extra_inputs=[HOOK, MOVED_HOOK]
                )
                for site in PUBLISHED_SITES
            ]
            for built in builds:
                built.result()
        _apply_messes(staging)

    digest = source_digest([FIXTURE_SITES, HOOK, MOVED_HOOK, Path(__file__)])[:16]
    return cached_build(cache_root, digest, build, force=force)


def _apply_messes(origin: Path) -> None:
    for site in PUBLISHED_SITES:
        shutil.rmtree(origin / site / "assets")  # theme assets: megabytes the service never requests
    rooted_index = origin / ROOTED_SITE / "search" / "search_index.json"
    (origin / "search").mkdir()
    rooted_index.rename(origin / "search" / "search_index.json")
    rooted_index.parent.rmdir()
    (origin / DEFAULT_SITE / f"{HTML_ONLY_PAGE}.md").unlink()
    index_file = origin / DEFAULT_SITE / "search" / "search_index.json"
    index = json.loads(index_file.read_text())
    index["docs"].append(PHANTOM_ENTRY)
    index_file.write_text(json.dumps(index))


def fixture_env(origin_url: str, **settings: str) -> dict[str, str]:
    """App settings for the fixture origin; keyword arguments add `Forge__Documentation__<Key>` settings.

    For example `fixture_env(origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__MinScore="0.5")`.
    Semantic matching is off unless a test passes `Search__Semantic="true"`: its background embedding reads and
    writes the store, which tests of the index cache count (tests/mkdocs/test_semantic.py covers it).
    """
    env = {f"{PREFIX}Origin": origin_url, f"{PREFIX}Sites": ",".join(SITES), f"{PREFIX}DefaultSite": DEFAULT_SITE}
    env[f"{PREFIX}Search__Semantic"] = "false"
    env.update({f"{PREFIX}{key}": value for key, value in settings.items()})
    return env


def fixture_settings(
    origin_url: str, environ: Mapping[str, str] | None = None, **settings: str
) -> DocumentationSettings:
    """`load_settings` over `fixture_env(...)`, plus any other variables (such as AzureWebJobsStorage)."""
    return load_settings({**fixture_env(origin_url, **settings), **(environ or {})})


TASK = (
    "I am automating the rollout of our monitoring stack across a fleet of new Debian virtual machines that were "
    "provisioned this morning by the platform team. Each machine already has network access to our internal "
    "package mirror, and I have root through sudo, but nothing of ours is on them yet. Before I write the "
    "configuration management role, I need the exact steps: which signing key to trust and where to put it, "
    "which package to install with apt, how to enable the service so that it comes back after a reboot, and "
    "how to check afterwards that it actually started and reports healthy. Keep it to the commands I would "
    "put into the role, in order, please, and tell me what the status check should say."
)
"""An agent's task description whose answer is alpha's `guide/install/`: 127 words, 702 characters, longer than the
512 the service used to take."""
