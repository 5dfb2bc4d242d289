"""A site's ranker, prebuilt: what a cold instance would otherwise parse and build, as arrays it loads at once.

The warm-up stores one beside each index version (`shared.cache.ranking_name`); an instance with warm storage loads
it instead of parsing the index JSON and building the ranker. The layout is little-endian and executes nothing on
load (no pickle): `MAGIC`, a JSON manifest (the format, the index version and the code digest it was built from,
each array's dtype, shape and offset), the arrays, and a SHA-256 of all that. What depends on configuration (the
page-kind rules) is not stored: `Ranker.assemble` works it out on load. An artifact that fails its checksum, its
format, its index version or its code digest is refused (`ArtifactError`): the caller builds the ranker itself.
The checksum is the one check of the bytes: what matches it is what `dumps` wrote, so no column is checked again.

The code blocks are not in it: a page search never reads them. Their part (the blocks and their BM25F view,
`codeblocks/prebuilt.py`) is stored beside it, framed the same way (`packed`), and read by a site's first code search.

The full specification (every array, and why this shape) is in `docs/how-it-works/formats.md`.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any

import numpy as np
import numpy.typing as npt

from shared.providers.mkdocs.codeblocks.code import CodeColumns
from shared.providers.mkdocs.indexes.columns import TEXT_FIELDS, EntryColumns
from shared.providers.mkdocs.indexes.index import (
    IndexFormat,
    PagedEntries,
    SiteIndex,
    page_groups,
)
from shared.providers.mkdocs.indexes.kinds import PathWeights
from shared.providers.mkdocs.scoring.parameters import DEFAULT
from shared.providers.mkdocs.scoring.postings import CodedValues, FieldView, Postings
from shared.providers.mkdocs.scoring.ranking import RankedPage, Ranker

MAGIC = b"DOCRANK\x01"
FORMAT = 7
_SMALL = 65_536
"""What a uint16 can number: documents and distinct values up to this many are stored in two bytes."""
_HEADER = struct.Struct("<8sI")
_ALIGN = 8
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
    for name in TEXT_FIELDS:
        values = [getattr(entry, name) or "" for entry in entries]
        arrays[f"entries.{name}"], arrays[f"entries.{name}.offsets"] = _strings(values)
    arrays["entries.anchor_set"] = np.array([entry.anchor is not None for entry in entries], dtype=np.uint8)
    arrays["entries.boost"] = np.array([entry.boost for entry in entries], dtype=np.float64)
    scalars: dict[str, int] = {}
    vocabulary_arrays("vocabulary", ranker.vocabulary, arrays, scalars)
    for name, postings in (
        ("page_view", ranker.page_view.postings),
        ("section_view", ranker.section_view.postings),
        ("titles", ranker.titles),
    ):
        postings_arrays(name, postings, arrays, scalars)
    groups = page_groups(entries)  # the ranker's pages (`ranking._pages`)
    arrays["pages.heads"] = np.array([head for head, _ in groups], dtype=np.int32)
    arrays["pages.sections"] = np.array([n for _, sections in groups for n in sections], dtype=np.int32)
    arrays["pages.offsets"] = np.cumsum([0, *(len(sections) for _, sections in groups)], dtype=np.int64)
    chars = [index.page_chars[entries[sections[0]].page] for _, sections in groups]
    arrays["pages.chars"] = np.array(chars, dtype=np.int64)
    scalars["code.blocks"] = len(index.code)  # the blocks themselves are the code part's (`code_artifact.py`)
    described = {"indexFormat": index.format.value, "entries": len(entries)}
    return packed(arrays, scalars, site=index.site, index_digest=index_digest, code=code, **described)


def packed(
    arrays: dict[str, npt.NDArray[Any]],
    scalars: dict[str, int],
    *,
    site: str,
    index_digest: str,
    code: str,
    **more: Any,
) -> bytes:
    """`MAGIC`, the manifest (`FORMAT`, the site, the index version and code digest, `more`, each array's dtype,
    shape and offset), the arrays aligned, and the SHA-256 of all that: a prebuilt ranker, or its code part."""
    table: dict[str, dict[str, Any]] = {}
    chunks: list[bytes] = []
    offset = 0
    for name, array in arrays.items():
        data = np.ascontiguousarray(array).tobytes()
        table[name] = {"dtype": array.dtype.str, "shape": list(array.shape), "offset": offset, "bytes": len(data)}
        padding = (-len(data)) % _ALIGN
        chunks.append(data + b"\0" * padding)
        offset += len(data) + padding
    manifest = {"format": FORMAT, "site": site, "index": index_digest, "code": code, **more}
    manifest |= {"size": offset, "scalars": scalars, "arrays": table}
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
    manifest, array = unpacked(payload, site=site, index_digest=index_digest, code=code)
    scalars: dict[str, int] = manifest["scalars"]
    count = int(manifest["entries"])
    columns = {name: _column(array(f"entries.{name}"), array(f"entries.{name}.offsets")) for name in TEXT_FIELDS}
    entries = EntryColumns(
        {name: column for name, (column, _) in columns.items()},
        {name: bounds for name, (_, bounds) in columns.items()},
        array("entries.anchor_set").astype(np.uint8, copy=False).data,
        array("entries.boost").astype(np.float64, copy=False).data,
    )
    if len(entries) != count:
        raise ArtifactError("the entry columns disagree in length")
    groups = _groups(array, count)
    chars = array("pages.chars").tolist()
    if len(chars) != len(groups):
        raise ArtifactError("the page columns disagree in length")
    # Each page's path and title, cut alone from its first entry (the whole entries are cut when a search or `get`
    # asks for them: `RankedPage.entry`).
    paged = [
        PagedEntries(entries.field(sections[0], "page"), entries.field(sections[0], "page_title"), sections, length)
        for (_, sections), length in zip(groups, chars, strict=True)
    ]
    blocks = CodeColumns(int(scalars["code.blocks"]))  # read from the code part by the first code search
    index = SiteIndex.build(site, entries, paged=paged, format=IndexFormat(manifest["indexFormat"]), code=blocks)
    vocabulary = terms(array("vocabulary.terms"), int(scalars["vocabulary.terms"]))
    page_view, section_view, titles = (
        unpostings(array, name, int(scalars[f"{name}.documents"]), vocabulary)
        for name in ("page_view", "section_view", "titles")
    )
    views = FieldView.of(page_view.documents, page_view), FieldView.of(section_view.documents, section_view)
    pages = [RankedPage(entries, head, sections) for head, sections in groups]
    return index, Ranker.assemble(index, kinds, views[0], views[1], titles, pages)


def unpacked(
    payload: bytes, *, site: str, index_digest: str, code: str
) -> tuple[dict[str, Any], Callable[[str], npt.NDArray[Any]]]:
    """A packed payload's manifest and a reader of its arrays (views of `payload`), once its checksum, format, code
    and index version check out: the SHA-256 is the one check of the bytes (they are what `packed` wrote), the
    manifest's own keys and bounds are still checked, so a wrong one is refused rather than raised as another error."""
    manifest, data = _checked(payload)
    if manifest.get("format") != FORMAT or manifest.get("code") != code:
        raise ArtifactError("built by another version of the ranking code")
    if manifest.get("index") != index_digest or manifest.get("site") != site:
        raise ArtifactError("built from another index version")
    table: dict[str, dict[str, Any]] = manifest["arrays"]
    if int(manifest["size"]) != len(data):
        raise ArtifactError("the arrays are not the size stated")

    def array(name: str) -> npt.NDArray[Any]:
        spec = table.get(name)
        if spec is None:
            raise ArtifactError(f"no array {name}")
        start, size = int(spec["offset"]), int(spec["bytes"])
        if start < 0 or start + size > len(data):
            raise ArtifactError(f"array {name} lies outside the artifact")
        dtype = np.dtype(spec["dtype"])
        if dtype.hasobject:
            raise ArtifactError("object arrays are never loaded")
        return np.frombuffer(data, dtype=dtype, count=size // dtype.itemsize, offset=start).reshape(spec["shape"])

    return manifest, array


def vocabulary_arrays(name: str, vocabulary: dict[str, int], arrays: dict[str, Any], scalars: dict[str, int]) -> None:
    terms = [""] * len(vocabulary)
    for term, number in vocabulary.items():
        terms[number] = term
    if any(_SEPARATOR in term for term in terms):
        raise ValueError("a term holds the separator")
    arrays[f"{name}.terms"] = np.frombuffer(_SEPARATOR.join(terms).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    scalars[f"{name}.terms"] = len(terms)


def postings_arrays(name: str, postings: Postings, arrays: dict[str, Any], scalars: dict[str, int]) -> None:
    distinct, codes = np.unique(postings.values, return_inverse=True)
    arrays[f"{name}.offsets"] = np.frombuffer(postings.offsets, dtype=np.int64)
    arrays[f"{name}.numbers"] = postings.numbers.astype(_numbering(postings.documents))
    arrays[f"{name}.distinct"] = distinct.astype(np.float64, copy=False)
    arrays[f"{name}.codes"] = codes.astype(_numbering(len(distinct)))
    scalars[f"{name}.documents"] = postings.documents


def terms(blob: npt.NDArray[np.uint8], count: int) -> dict[str, int]:
    """A stored vocabulary: term -> its number, checked."""
    raw = _text(blob)
    terms = raw.split(_SEPARATOR) if raw else []
    if len(terms) != count:
        raise ArtifactError("the vocabulary does not add up")
    vocabulary = dict(zip(terms, range(len(terms)), strict=True))
    if len(vocabulary) != len(terms):
        raise ArtifactError("the vocabulary repeats a term")
    return vocabulary


def _checked(payload: bytes) -> tuple[dict[str, Any], memoryview]:
    if len(payload) < _HEADER.size + 32:
        raise ArtifactError("too short")
    body, checksum = memoryview(payload)[:-32], payload[-32:]  # a view: the body is not copied
    if hashlib.sha256(body).digest() != checksum:
        raise ArtifactError("checksum mismatch")
    magic, length = _HEADER.unpack_from(body)
    if magic != MAGIC or _HEADER.size + length > len(body):
        raise ArtifactError("not a ranking artifact")
    try:
        manifest = json.loads(bytes(body[_HEADER.size : _HEADER.size + length]))
    except ValueError:
        raise ArtifactError("unreadable manifest") from None
    if not isinstance(manifest, dict):
        raise ArtifactError("unreadable manifest")
    return manifest, body[_HEADER.size + length :]


def _numbering(count: int) -> type[np.unsignedinteger[Any]] | type[np.signedinteger[Any]]:
    """The narrowest type that numbers `count` things: two bytes for most sites' documents and values."""
    return np.uint16 if count <= _SMALL else np.int32


def _groups(array: Any, count: int) -> list[tuple[int, list[int]]]:
    """The stored pages as `page_groups` gives them: (the representative entry, all its entries in index order)."""
    heads = array("pages.heads").tolist()
    offsets = array("pages.offsets").tolist()
    flat = array("pages.sections")
    if len(offsets) != len(heads) + 1 or offsets[0] != 0 or offsets[-1] != len(flat) or len(flat) != count:
        raise ArtifactError("the pages do not add up")
    if any(a >= b for a, b in pairwise(offsets)) or (len(flat) and (int(flat.min()) < 0 or int(flat.max()) >= count)):
        raise ArtifactError("the pages do not add up")
    numbers = flat.tolist()
    groups = [(head, numbers[start:end]) for head, (start, end) in zip(heads, pairwise(offsets), strict=True)]
    if any(head not in sections for head, sections in groups):
        raise ArtifactError("a page is not represented by one of its entries")
    return groups


def _strings(values: Sequence[str]) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """The values' UTF-8, one after the other, and where each begins (one offset per value, plus one)."""
    encoded = [value.encode("utf-8", "surrogatepass") for value in values]
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum([len(value) for value in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def _text(blob: npt.NDArray[np.uint8]) -> str:
    try:
        return str(blob.data, "utf-8", "surrogatepass")
    except UnicodeDecodeError:
        raise ArtifactError("undecodable text") from None


def _column(blob: npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64]) -> tuple[memoryview, memoryview]:
    """A column's UTF-8 and its cut points, as `dumps` wrote them (its payload's SHA-256 matched: nothing in it is
    checked again, `EntryColumns` checks the ends). Kept as UTF-8, not decoded: a Python string takes the width of
    its widest character, so one emoji in forge's text made the whole column four bytes a character (12 MB, about
    90 MB at eight times the sample corpus). Views of the payload (`_ints`), not copies."""
    return blob.data, _ints(offsets)


def _ints(values: npt.NDArray[Any]) -> memoryview:
    """Stored int64s as a sequence of Python ints: a view of the payload, not a copy. The payload a ranker loads from
    stays held by its views (a site's text, postings and cut points are most of it), so copying them out made a
    cold instance at eight times the sample corpus fill about 50 MB of fresh memory, page by page, while its first
    search waited, and let go of as much."""
    return values.astype(np.int64, copy=False).data


def unpostings(array: Any, name: str, documents: int, vocabulary: dict[str, int], *, held: bool = True) -> Postings:
    """A view's postings, checked; views of the payload when it is `held` anyway (a prebuilt ranker's), else copies
    (a code part's payload is mostly its blocks' JSON, decoded and let go)."""
    offsets = array(f"{name}.offsets").astype(np.int64, copy=False)
    numbers = array(f"{name}.numbers")  # as stored (two bytes for most sites), not widened
    if numbers.dtype not in (np.uint16, np.int32):
        raise ArtifactError(f"{name}: document numbers of another type")
    distinct = array(f"{name}.distinct").astype(np.float64)
    codes = array(f"{name}.codes")
    if not held:
        offsets, numbers, codes = offsets.copy(), numbers.copy(), codes.copy()
    if len(codes) and (int(codes.min()) < 0 or int(codes.max()) >= len(distinct)):
        raise ArtifactError(f"{name}: a posting names a value that is not there")
    values = CodedValues(distinct, codes)  # the very floats the ranker was built with, gathered when read
    if not 1 <= len(offsets) <= len(vocabulary) + 1 or int(offsets[0]) != 0 or int(offsets[-1]) != len(numbers):
        raise ArtifactError(f"{name}: postings do not add up")
    if len(numbers) != len(values) or (len(offsets) > 1 and bool((np.diff(offsets) < 0).any())):
        raise ArtifactError(f"{name}: postings do not add up")
    if len(numbers) and (int(numbers.min()) < 0 or int(numbers.max()) >= documents):
        raise ArtifactError(f"{name}: a posting names a document that is not there")
    return Postings(documents, vocabulary, _ints(offsets), numbers, values)
