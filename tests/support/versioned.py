"""A documentation origin of a versioned site built by the real `mike`, a Zensical site and bad `versions.json`.

`build_versioned_origin()` returns one directory laid out as a static host serves it:

    vdocs/     mike over a throw-away git repository: 2.0, then 2.1 aliased `latest`, default `latest`
    zdocs/     `zensical build` of tests/fixtures/zensical: `search.json` at the root, no `search/`
    vbad-*/    hand-written `versions.json` files a versioned site must refuse (nothing else)
    beta-docs/ the plain MkDocs fixture site of tests/fixtures/sites, beside them (bare paths cross sites)

mike deploys with `--alias-type redirect`: `vdocs/latest/` holds one redirect page per HTML page of 2.1 and no
search index or Markdown, which is what a host without symlinks serves, and it leaves a reader no way to reach
the alias's content except through `versions.json` to the concrete folder (`2.1/`), the folder every URL must
name. (A symlink alias does not survive a blob upload; a copy would serve `latest/` as a second full site.)

Zensical runs no MkDocs hooks, so the builder copies each page's Markdown next to it after the build, with the
same mapping as docs/hooks/copy_markdown.py (`X/index.md` also as `X.md`). Theme assets are removed from both
sites, as tests/support/sites.py does. The result is cached under build/versioned-origin/<digest>/, keyed by
the fixture sources, the hook, this module and the versions of MkDocs, Material, mike and Zensical.
tests/fixtures/versioned/README.md catalogues what each site and version holds.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

from tools.build_origin import build_site, cached_build, source_digest

ROOT = Path(__file__).resolve().parents[2]
VERSIONED_FIXTURE = ROOT / "tests" / "fixtures" / "versioned"
ZENSICAL_FIXTURE = ROOT / "tests" / "fixtures" / "zensical"
PLAIN_FIXTURE = ROOT / "tests" / "fixtures" / "sites" / "beta-docs"
HOOK = ROOT / "docs" / "hooks" / "copy_markdown.py"
CACHE_ROOT = ROOT / "build" / "versioned-origin"

VERSIONED_SITE = "vdocs"
VERSIONS = ("2.1", "2.0")
"""In `versions.json` order: mike lists the newest first."""
DEFAULT_VERSION = "2.1"
LATEST_ALIAS = "latest"
ALIAS_TYPE = "redirect"
NEW_PAGE = "guide/new-feature"
"""In 2.1 only."""
CHANGED_PAGE = "guide/install"
"""In both versions with different text: `CHANGED_TEXT[version]` is in that version's page only."""
CHANGED_TEXT = {
    "2.0": "Version 2.0 installs with apt",
    "2.1": "Version 2.1 installs with the installer script",
}

ZENSICAL_SITE = "zdocs"
BAD_VERSIONED_SITES = ("vbad-notlist", "vbad-dup", "vbad-dots", "vbad-missing")
PLAIN_SITE = "beta-docs"
"""A plain MkDocs site (`search/search_index.json`), built from tests/fixtures/sites; `faq` is one of its pages."""
SITES = (VERSIONED_SITE, ZENSICAL_SITE, PLAIN_SITE, *BAD_VERSIONED_SITES)

_TOOLS = ("mike", "zensical")
_GIT_LOCATION = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY")
"""Set when the tests run inside a git hook; they would point the throw-away repository's git elsewhere."""
_GIT_IDENTITY = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "fixture",
    "GIT_AUTHOR_EMAIL": "fixture@example.test",
    "GIT_COMMITTER_NAME": "fixture",
    "GIT_COMMITTER_EMAIL": "fixture@example.test",
}


def build_versioned_origin(cache_root: Path = CACHE_ROOT, *, force: bool = False) -> Path:
    """The built origin directory (`{origin}/{site}/...`), rebuilt only when its inputs or tools changed."""

    def build(staging: Path) -> None:
        with ThreadPoolExecutor(3) as pool:
            builds = [
                pool.submit(_build_mike_site, staging / VERSIONED_SITE),
                pool.submit(_build_zensical_site, staging / ZENSICAL_SITE),
                pool.submit(_build_plain_site, staging / PLAIN_SITE),
            ]
            for built in builds:
                built.result()
        shutil.copytree(VERSIONED_FIXTURE / "bad", staging, dirs_exist_ok=True)

    return cached_build(cache_root, _digest(), build, force=force)


def _digest() -> str:
    inputs = source_digest([VERSIONED_FIXTURE, ZENSICAL_FIXTURE, PLAIN_FIXTURE, HOOK, Path(__file__)])
    tools = "".join(f"{tool}=={metadata.version(tool)}\n" for tool in _TOOLS)
    return hashlib.sha256(f"{inputs}\n{tools}".encode()).hexdigest()[:16]


def _build_plain_site(site_dir: Path) -> None:
    build_site(PLAIN_FIXTURE / "mkdocs.yml", site_dir, extra_inputs=[HOOK], force=True)
    shutil.rmtree(site_dir / "assets")


def _build_mike_site(site_dir: Path) -> None:
    """Deploy 2.0, then 2.1 as `latest`, each from its own commit, and export the gh-pages tree to `site_dir`."""
    with tempfile.TemporaryDirectory(prefix="mike-") as tmp:
        repo = Path(tmp)
        shutil.copyfile(VERSIONED_FIXTURE / "mkdocs.yml", repo / "mkdocs.yml")
        (repo / "hooks").mkdir()
        shutil.copyfile(HOOK, repo / "hooks" / HOOK.name)
        _run(["git", "init", "--quiet", "--initial-branch", "main"], repo)
        for version, aliases in (("2.0", []), ("2.1", [LATEST_ALIAS])):
            shutil.rmtree(repo / "docs", ignore_errors=True)
            shutil.copytree(VERSIONED_FIXTURE / version, repo / "docs")
            _run(["git", "add", "mkdocs.yml", "hooks", "docs"], repo)
            _run(["git", "commit", "--quiet", "--message", f"docs {version}"], repo)
            _run([*_mike(), "deploy", "--alias-type", ALIAS_TYPE, version, *aliases], repo)
        _run([*_mike(), "set-default", LATEST_ALIAS], repo)
        archive = _run(["git", "archive", "--format=tar", "gh-pages"], repo)
    site_dir.mkdir()
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(site_dir, filter="data")
    for version in VERSIONS:
        shutil.rmtree(site_dir / version / "assets")


def _build_zensical_site(site_dir: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="zensical-") as tmp:
        project = Path(shutil.copytree(ZENSICAL_FIXTURE, Path(tmp) / "project"))
        _run([sys.executable, "-m", "zensical", "build", "--strict", "--clean"], project)
        shutil.move(project / "site", site_dir)
        docs = project / "docs"
        sources = sorted(path.relative_to(docs).as_posix() for path in docs.rglob("*.md"))
        for dest, src in _markdown_copies(sources).items():
            shutil.copyfile(docs / src, site_dir / dest)
    shutil.rmtree(site_dir / "assets")


def _markdown_copies(sources: list[str]) -> dict[str, str]:
    spec = importlib.util.spec_from_file_location("copy_markdown", HOOK)
    assert spec and spec.loader
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    copies: dict[str, str] = hook.markdown_copies(sources)
    return copies


def _mike() -> list[str]:
    return [str(Path(sys.executable).with_name("mike"))]


def _run(command: list[str], cwd: Path) -> bytes:
    # mike runs `mkdocs` from PATH; git must not read the developer's configuration or ask who commits.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {key: value for key, value in os.environ.items() if key not in _GIT_LOCATION}
    env.update(_GIT_IDENTITY, PATH=path, NO_MKDOCS_2_WARNING="1")
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, check=False)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).decode(errors="replace")
        raise RuntimeError(f"{' '.join(command[:3])} in {cwd} failed:\n{output}")
    return result.stdout
