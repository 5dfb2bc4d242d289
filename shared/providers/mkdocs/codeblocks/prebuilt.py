"""A prebuilt ranker's code part: a site's code blocks and their BM25F view, stored apart from the page ranker
(`scoring/artifact.py`) and framed the same way, so a cold instance downloads, checks and holds only what page
search reads, and a site's first code search reads the rest (pure: bytes in, blocks out).

Stored beside the page ranker by the warm-up (`shared.cache.code_ranking_name`), for the same index version and
ranking code: a part that fails its checksum, its format, its index version or its code digest is refused
(`ArtifactError`), and the caller takes the blocks from the index instead.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from shared.providers.mkdocs.codeblocks.code import CodeBlock
from shared.providers.mkdocs.codeblocks.coderank import CodeRanker
from shared.providers.mkdocs.indexes.index import SiteIndex
from shared.providers.mkdocs.scoring.artifact import (
    ArtifactError,
    packed,
    postings_arrays,
    terms,
    unpacked,
    unpostings,
    vocabulary_arrays,
)
from shared.providers.mkdocs.scoring.postings import FieldView

PART = "code"
"""What the manifest says this is (`part`), where a page ranker says nothing."""


def code_dumps(index: SiteIndex, *, index_digest: str, code: str) -> bytes:
    """The code part of `index` (the copy whose SHA-256 is `index_digest`): its blocks as JSON and their view, built
    with the default code parameters (as `code_loads` hands it to `CodeRanker.build`)."""
    blocks = index.code
    view = CodeRanker.build(index).view
    arrays: dict[str, np.ndarray] = {}
    scalars: dict[str, int] = {"code.blocks": len(blocks)}
    vocabulary_arrays("code_vocabulary", view.postings.terms, arrays, scalars)
    postings_arrays("code_view", view.postings, arrays, scalars)
    written = json.dumps([list(block) for block in blocks], ensure_ascii=False, separators=(",", ":"))
    arrays["code.json"] = np.frombuffer(written.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    return packed(arrays, scalars, site=index.site, index_digest=index_digest, code=code, part=PART)


def code_loads(
    payload: bytes, *, site: str, index_digest: str, code: str, count: int
) -> tuple[Sequence[CodeBlock], FieldView]:
    """The blocks and their view from a code part, checked; ArtifactError when it is not this index's, or does not
    hold exactly `count` blocks (what the page ranker counted) of the right shape."""
    try:
        manifest, array = unpacked(payload, site=site, index_digest=index_digest, code=code)
        if manifest.get("part") != PART:
            raise ArtifactError("not a code part")
        scalars: dict[str, int] = manifest["scalars"]
        blocks = _decoded(bytes(array("code.json")), count)
        vocabulary = terms(array("code_vocabulary.terms"), int(scalars["code_vocabulary.terms"]))
        documents = int(scalars["code_view.documents"])
        view = FieldView.of(documents, unpostings(array, "code_view", documents, vocabulary, held=False))
    except ArtifactError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ArtifactError(f"does not fit together ({type(exc).__name__})") from None
    if documents != count:
        raise ArtifactError("the view does not number the blocks")
    return blocks, view


def _decoded(payload: bytes, count: int) -> list[CodeBlock]:
    fields = len(CodeBlock._fields)
    rows = json.loads(payload.decode("utf-8", "surrogatepass")) if payload else []
    blocks = [
        CodeBlock._make(row)
        for row in rows
        if isinstance(row, list)
        and len(row) == fields
        and all(isinstance(value, str) or (value is None and number == 2) for number, value in enumerate(row))
    ]
    if len(blocks) != count or len(rows) != count:
        raise ArtifactError("the blocks are not the ones counted")
    return blocks
