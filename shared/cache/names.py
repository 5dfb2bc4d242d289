"""The names a cache store holds: each site's index under the spec's cache file name, its embeddings under the
reserved `embeddings/` prefix and whatever else is derived from it under `derived/`, so no site name can ever
collide with another site's artifacts.

The prefixes themselves are `shared.settings.RESERVED_PREFIXES`: the settings refuse a cache file name template that
would reach under one, at start-up.
"""

from __future__ import annotations

import re

from shared.settings import DERIVED_PREFIX, EMBEDDINGS_PREFIX

_INVALID_FILE_CHARS = re.compile(r'[<>:"/\\|?*\x00-\x1f]')


def safe_name(value: str) -> str:
    """A name with the characters invalid in a file name replaced by `-` (the spec's site-name substitution)."""
    return _INVALID_FILE_CHARS.sub("-", value)


def index_name(template: str, site: str) -> str:
    """The spec's cache file name: `{site}` substituted (sanitized), or the site prepended when absent."""
    if "{site}" in template:
        return template.replace("{site}", safe_name(site))
    return f"{safe_name(site)}-{template}"


def vectors_name(site: str, model_id: str) -> str:
    """Where a site's entry embeddings from one model are kept: `embeddings/{site}/{model}.json`."""
    return f"{EMBEDDINGS_PREFIX}{safe_name(site)}/{safe_name(model_id)}.json"


def scan_name(site: str, model_id: str) -> str:
    """Where the rows a serving instance scans (int8, with their neighbour similarities: `vectors.ScanRows`) of a
    site's vectors from one model are kept, beside the vectors: `embeddings/{site}/{model}.scan`."""
    return f"{EMBEDDINGS_PREFIX}{safe_name(site)}/{safe_name(model_id)}.scan"


def pieces_name(site: str, model_id: str) -> str:
    """Where the word-piece signs of a site's entries (`pieces.Pieces`, the rerank's) from one model are kept, beside
    the scan rows: `embeddings/{site}/{model}.pieces`."""
    return f"{EMBEDDINGS_PREFIX}{safe_name(site)}/{safe_name(model_id)}.pieces"


def missing_name(site: str) -> str:
    """Where a site's record of pages its index lists but the origin does not serve is kept:
    `derived/{site}/missing/pages.json`."""
    return f"{DERIVED_PREFIX}{safe_name(site)}/missing/pages.json"


def ranking_name(site: str) -> str:
    """Where a site's prebuilt ranker is kept (`providers.mkdocs.artifact`): `derived/{site}/ranking/ranker.bin`
    (never under `missing/`), with the index version and code it was built from in its metadata."""
    return f"{DERIVED_PREFIX}{safe_name(site)}/ranking/ranker.bin"


def code_ranking_name(site: str) -> str:
    """Where a site's prebuilt ranker's code part is kept (`codeblocks/prebuilt.py`: its code blocks and their view,
    read by the first code search): `derived/{site}/ranking/code.bin`, beside the ranker, built from the same."""
    return f"{DERIVED_PREFIX}{safe_name(site)}/ranking/code.bin"


def graph_name(file: str) -> str:
    """Where the embedding model's rewritten graph is shared between instances (`shared.embedding`):
    `embeddings/encoder/graphs/{file}` (three levels, where a site's vectors are two, so no site collides)."""
    return f"{EMBEDDINGS_PREFIX}encoder/graphs/{safe_name(file)}"


def refresh_run_name(run: str) -> str:
    """Where the outcome of a publish refresh that outlasted its caller is kept: `derived/refresh/runs/{run}.json`
    (three levels, like `missing_name`, but never under `missing/` or `ranking/`, so no site can collide)."""
    return f"{DERIVED_PREFIX}refresh/runs/{safe_name(run)}.json"
