"""Publish every page's Markdown source next to the rendered page, so consumers can fetch `{base}/{path}.md`.

Each source `.md` is copied to the output at its source path (`guide/install.md`). A non-root `X/index.md`
is also copied to the sibling `X.md`, because the retrieval service derives raw-Markdown URLs from the
rendered path (`X/` -> `X.md`), unless a real source file already occupies `X.md`. The site root's
`index.md` gets no sibling: there is no path above it.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path, PurePosixPath

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files

log = logging.getLogger("mkdocs.hooks.copy_markdown")

_sources: dict[str, str] = {}


def markdown_copies(src_uris: list[str]) -> dict[str, str]:
    """Map each output path to the source path it is copied from."""
    copies = {uri: uri for uri in src_uris}
    for uri in src_uris:
        path = PurePosixPath(uri)
        if path.name == "index.md" and path.parent != PurePosixPath("."):
            sibling = f"{path.parent}.md"
            copies.setdefault(sibling, uri)
    return copies


def on_files(files: Files, config: MkDocsConfig) -> Files:
    _sources.clear()
    _sources.update((page.src_uri, page.abs_src_path) for page in files.documentation_pages() if page.abs_src_path)
    return files


def on_post_build(config: MkDocsConfig) -> None:
    site_dir = Path(config.site_dir)
    copies = markdown_copies(sorted(_sources))
    for dest, src in copies.items():
        target = site_dir / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_sources[src], target)
    log.debug("copied %d Markdown sources into %s", len(copies), site_dir)
