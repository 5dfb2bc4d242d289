"""Build MkDocs sites into a static documentation origin laid out as `{out}/{site}/`.

    python tools/build_origin.py --out build/origin            # this project's docs as site `docs`
    python tools/build_origin.py --out build/origin --site handbook --config path/to/mkdocs.yml

A build is skipped when a digest of its inputs (the config file, its docs directory, any extra inputs and
the MkDocs versions) matches the one stored beside the last build. The new site is built in a temporary
directory and swapped in whole, so a server already serving the origin never sees a half-built site.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIGEST_FILE = ".source-digest"


def source_digest(inputs: Iterable[Path]) -> str:
    """A digest over every file under the inputs (path and content) plus the MkDocs toolchain's versions."""
    digest = hashlib.sha256()
    for package in ("mkdocs", "mkdocs-material"):
        digest.update(f"{package}=={metadata.version(package)}\n".encode())
    for root in sorted({Path(p).resolve() for p in inputs}):
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for file in files:
            if "__pycache__" in file.parts:
                continue
            digest.update(str(file.relative_to(root.parent)).encode() + b"\0")
            digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def build_site(config_file: Path, site_dir: Path, *, extra_inputs: Sequence[Path] = (), force: bool = False) -> bool:
    """Build one MkDocs site into `site_dir` unless it is up to date; True when it was built.

    The inputs are the config file, the `docs` directory beside it and `extra_inputs` (for example a hook kept
    outside the docs directory).
    """
    config_file = config_file.resolve()
    digest = source_digest([config_file, config_file.parent / "docs", *extra_inputs])
    stamp = site_dir / DIGEST_FILE
    if not force and stamp.is_file() and stamp.read_text().strip() == digest:
        return False
    site_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{site_dir.name}-", dir=site_dir.parent))
    try:
        _mkdocs_build(config_file, staging)
        (staging / DIGEST_FILE).write_text(digest + "\n")
        _swap_in(staging, site_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return True


def cached_build(cache_root: Path, digest: str, build: Callable[[Path], None], *, force: bool = False) -> Path:
    """`cache_root/digest`, built by `build` into a staging folder and renamed into place once complete (a folder
    marked `.complete`), unless it is there already; other builds under `cache_root` are removed."""
    origin = cache_root / digest
    if not force and (origin / ".complete").is_file():
        return origin
    cache_root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=cache_root))
    try:
        build(staging)
        (staging / ".complete").write_text(digest + "\n")
        if not (origin / ".complete").is_file():  # another session may have finished the same build first
            shutil.rmtree(origin, ignore_errors=True)
            staging.rename(origin)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for stale in cache_root.iterdir():
        if stale != origin and not stale.name.startswith("."):
            shutil.rmtree(stale, ignore_errors=True)
    return origin


def _mkdocs_build(config_file: Path, site_dir: Path) -> None:
    # A subprocess keeps MkDocs' global logging and plugin state out of the caller (pytest, run_local).
    command = [sys.executable, "-m", "mkdocs", "build", "--quiet", "--config-file", str(config_file)]
    command += ["--site-dir", str(site_dir)]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(command, cwd=config_file.parent, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"mkdocs build of {config_file} failed:\n{result.stdout}{result.stderr}")


def _swap_in(staging: Path, site_dir: Path) -> None:
    retired = site_dir.with_name(f".{site_dir.name}-retired")
    shutil.rmtree(retired, ignore_errors=True)
    if site_dir.exists():
        site_dir.rename(retired)
    staging.rename(site_dir)
    shutil.rmtree(retired, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "origin", help="origin directory")
    parser.add_argument("--site", default="docs", help="site name, the directory under the origin")
    parser.add_argument("--config", type=Path, default=ROOT / "mkdocs.yml", help="the site's mkdocs.yml")
    parser.add_argument("--force", action="store_true", help="rebuild even when the sources are unchanged")
    args = parser.parse_args(argv)
    site_dir = args.out / args.site
    try:
        built = build_site(args.config, site_dir, force=args.force)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"{'built' if built else 'up to date:'} {site_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
