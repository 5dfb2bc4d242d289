"""A site's ranker, prebuilt: what a cold instance would otherwise parse and build, as arrays it loads at once.

The warm-up stores one beside each index version (`shared.cache.ranking_name`); an instance with warm storage loads
it instead of parsing the index JSON and building the ranker. The layout, little-endian, no pickle:

    MAGIC (8 bytes) | manifest length (uint32) | manifest (UTF-8 JSON) | arrays, each 8-byte aligned | SHA-256 (32)

The manifest names the format, the index version it was built from (the index's SHA-256), the code that built it
(a digest of the modules that decide tokens and scores: another build never serves it), and each array's dtype,
shape and offset. The trailing SHA-256 covers everything before it. Arrays:

    entries     location, page, anchor, title, page_title, text: UTF-8 blobs with int64 offsets (in characters of
                the decoded text, so a column decodes once and is sliced); `anchor_set`
                (uint8) tells a null anchor from an empty one; `boost` (float64)
    vocabulary  terms (NUL-joined UTF-8), numbered in order: the site's one vocabulary, shared by its views
    page_view, section_view
                offsets (int64, one per term the view numbered, plus one), numbers (int32), values (float64), and
                the view's document count; IDF is worked out from the offsets on load
    titles      offsets, numbers, values (title coverage postings)

What depends on configuration (the page-kind rules) is not stored: `Ranker.assemble` works it out on load, with
the default ranking parameters, the only ones an artifact is built with (their code is in the digest). An
artifact that fails its checksum, its format, its index version or its code digest is refused (`ArtifactError`):
the caller builds the ranker itself and never serves it.
"""

from __future__ import annotations

import array as pyarray
import hashlib
import json
import struct
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import numpy as np
import numpy.typing as npt

from shared.providers.mkdocs.index import IndexEntry, SiteIndex
from shared.providers.mkdocs.kinds import PathWeights
from shared.providers.mkdocs.parameters import DEFAULT
from shared.providers.mkdocs.ranking import Postings, Ranker, _View

MAGIC = b"DOCRANK\x01"
FORMAT = 2
_HEADER = struct.Struct("<8sI")
_ALIGN = 8
_TEXT_FIELDS = ("location", "page", "anchor", "title", "page_title", "text")
_SEPARATOR = "\x00"


class ArtifactError(ValueError):
    """The bytes are not a usable artifact for this index and this code."""


def dumps(ranker: Ranker, index: SiteIndex, *, index_digest: str, code: str) -> bytes:
    """The artifact of a built ranker over `index` (the copy whose SHA-256 is `index_digest`); a ValueError for one
    built with other than the default parameters, which `loads` assembles it with."""
    if ranker.parameters != DEFAULT:
        raise ValueError("a prebuilt ranker is built with the default ranking parameters")
    arrays: dict[str, npt.NDArray[Any]] = {}
    entries = index.entries
    for name in _TEXT_FIELDS:
        values = [getattr(entry, name) or "" for entry in entries]
        arrays[f"entries.{name}"], arrays[f"entries.{name}.offsets"] = _strings(values)
    arrays["entries.anchor_set"] = np.array([entry.anchor is not None for entry in entries], dtype=np.uint8)
    arrays["entries.boost"] = np.array([entry.boost for entry in entries], dtype=np.float64)
    scalars: dict[str, int] = {}
    vocabulary = ranker.vocabulary
    terms = [""] * len(vocabulary)
    for term, number in vocabulary.items():
        terms[number] = term
    if any(_SEPARATOR in term for term in terms):
        raise ValueError("a term holds the separator")
    arrays["vocabulary.terms"] = np.frombuffer(_SEPARATOR.join(terms).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    scalars["vocabulary.terms"] = len(terms)
    for name, postings in (
        ("page_view", ranker.page_view.postings),
        ("section_view", ranker.section_view.postings),
        ("titles", ranker.titles),
    ):
        arrays[f"{name}.offsets"] = np.frombuffer(postings.offsets, dtype=np.int64)
        arrays[f"{name}.numbers"] = postings.numbers.astype(np.int32, copy=False)
        arrays[f"{name}.values"] = postings.values.astype(np.float64, copy=False)
        scalars[f"{name}.documents"] = postings.documents
    table: dict[str, dict[str, Any]] = {}
    chunks: list[bytes] = []
    offset = 0
    for name, array in arrays.items():
        data = np.ascontiguousarray(array).tobytes()
        table[name] = {"dtype": array.dtype.str, "shape": list(array.shape), "offset": offset, "bytes": len(data)}
        padding = (-len(data)) % _ALIGN
        chunks.append(data + b"\0" * padding)
        offset += len(data) + padding
    manifest = {
        "format": FORMAT,
        "site": index.site,
        "index": index_digest,
        "code": code,
        "entries": len(entries),
        "scalars": scalars,
        "arrays": table,
    }
    head = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    head += b" " * ((-(_HEADER.size + len(head))) % _ALIGN)
    body = _HEADER.pack(MAGIC, len(head)) + head + b"".join(chunks)
    return body + hashlib.sha256(body).digest()


def loads(
    payload: bytes, *, site: str, index_digest: str, code: str, kinds: PathWeights | None
) -> tuple[SiteIndex, Ranker]:
    """The index and its ranker from an artifact, checked; raises ArtifactError when it is not this index's, or
    when anything in it does not fit (a manifest that checks out but names shapes, types or keys that are not
    there is refused the same way, never raised as another error)."""
    try:
        return _loads(payload, site=site, index_digest=index_digest, code=code, kinds=kinds)
    except ArtifactError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ArtifactError(f"does not fit together ({type(exc).__name__})") from None


def _loads(
    payload: bytes, *, site: str, index_digest: str, code: str, kinds: PathWeights | None
) -> tuple[SiteIndex, Ranker]:
    manifest, data = _checked(payload)
    if manifest.get("format") != FORMAT or manifest.get("code") != code:
        raise ArtifactError("built by another version of the ranking code")
    if manifest.get("index") != index_digest or manifest.get("site") != site:
        raise ArtifactError("built from another index version")
    table: dict[str, dict[str, Any]] = manifest["arrays"]
    scalars: dict[str, int] = manifest["scalars"]

    def array(name: str, *, owned: bool = True) -> npt.NDArray[Any]:
        spec = table.get(name)
        if spec is None:
            raise ArtifactError(f"no array {name}")
        start, size = int(spec["offset"]), int(spec["bytes"])
        if start < 0 or start + size > len(data):
            raise ArtifactError(f"array {name} lies outside the artifact")
        dtype = np.dtype(spec["dtype"])
        if dtype.hasobject:
            raise ArtifactError("object arrays are never loaded")
        view = np.frombuffer(data, dtype=dtype, count=size // dtype.itemsize, offset=start).reshape(spec["shape"])
        return view.copy() if owned else view  # what is kept is owned, so the payload is freed once loaded

    count = int(manifest["entries"])
    columns = {
        name: _unstrings(array(f"entries.{name}", owned=False), array(f"entries.{name}.offsets", owned=False))
        for name in _TEXT_FIELDS
    }
    anchors = array("entries.anchor_set", owned=False).tolist()
    boosts = array("entries.boost", owned=False).tolist()
    if any(len(column) != count for column in columns.values()) or len(anchors) != count or len(boosts) != count:
        raise ArtifactError("the entry columns disagree in length")
    rows = zip(
        columns["location"],
        _shared(columns["page"]),  # one string per page, not one per entry
        [anchor if has_anchor else None for anchor, has_anchor in zip(columns["anchor"], anchors, strict=True)],
        columns["title"],
        _shared(columns["page_title"]),
        columns["text"],
        boosts,
        strict=True,
    )
    entries = list(map(IndexEntry._make, rows))
    index = SiteIndex.build(site, entries)
    raw = _text(array("vocabulary.terms", owned=False))
    terms = raw.split(_SEPARATOR) if raw else []
    if len(terms) != int(scalars["vocabulary.terms"]):
        raise ArtifactError("the vocabulary does not add up")
    vocabulary = dict(zip(terms, range(len(terms)), strict=True))
    if len(vocabulary) != len(terms):
        raise ArtifactError("the vocabulary repeats a term")
    page_view, section_view, titles = (
        _unpostings(array, name, int(scalars[f"{name}.documents"]), vocabulary)
        for name in ("page_view", "section_view", "titles")
    )
    views = _View.of(page_view.documents, page_view), _View.of(section_view.documents, section_view)
    return index, Ranker.assemble(index, kinds, views[0], views[1], titles)


def _checked(payload: bytes) -> tuple[dict[str, Any], memoryview]:
    if len(payload) < _HEADER.size + 32:
        raise ArtifactError("too short")
    body, checksum = payload[:-32], payload[-32:]
    if hashlib.sha256(body).digest() != checksum:
        raise ArtifactError("checksum mismatch")
    magic, length = _HEADER.unpack_from(body)
    if magic != MAGIC or _HEADER.size + length > len(body):
        raise ArtifactError("not a ranking artifact")
    try:
        manifest = json.loads(body[_HEADER.size : _HEADER.size + length])
    except ValueError:
        raise ArtifactError("unreadable manifest") from None
    if not isinstance(manifest, dict):
        raise ArtifactError("unreadable manifest")
    return manifest, memoryview(body)[_HEADER.size + length :]


def _strings(values: Sequence[str]) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum([len(value) for value in values], out=offsets[1:])
    return np.frombuffer("".join(values).encode("utf-8", "surrogatepass"), dtype=np.uint8), offsets


def _text(blob: npt.NDArray[np.uint8]) -> str:
    try:
        return str(blob.data, "utf-8", "surrogatepass")
    except UnicodeDecodeError:
        raise ArtifactError("undecodable text") from None


def _unstrings(blob: npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64]) -> list[str]:
    text = _text(blob)
    bounds = offsets.tolist()
    if bounds and (bounds[0] != 0 or bounds[-1] != len(text)):
        raise ArtifactError("string offsets do not fit their text")
    return [text[start:end] for start, end in pairwise(bounds)]


def _shared(values: list[str]) -> list[str]:
    """The same strings, each repeated value one object."""
    seen: dict[str, str] = {}
    return [seen.setdefault(value, value) for value in values]


def _unpostings(array: Any, name: str, documents: int, vocabulary: dict[str, int]) -> Postings:
    offsets = array(f"{name}.offsets", owned=False).astype(np.int64, copy=False)  # copied into the Postings
    numbers = array(f"{name}.numbers")
    values = array(f"{name}.values")
    if not 1 <= len(offsets) <= len(vocabulary) + 1 or int(offsets[0]) != 0 or int(offsets[-1]) != len(numbers):
        raise ArtifactError(f"{name}: postings do not add up")
    if len(numbers) != len(values) or (len(offsets) > 1 and bool((np.diff(offsets) < 0).any())):
        raise ArtifactError(f"{name}: postings do not add up")
    if len(numbers) and (int(numbers.min()) < 0 or int(numbers.max()) >= documents):
        raise ArtifactError(f"{name}: a posting names a document that is not there")
    return Postings(documents, vocabulary, pyarray.array("q", offsets.tobytes()), numbers, values)
