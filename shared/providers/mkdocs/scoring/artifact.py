"""A site's ranker, prebuilt: what a cold instance would otherwise parse and build, as arrays it loads at once.

The warm-up stores one beside each index version (`shared.cache.ranking_name`); an instance with warm storage loads
it instead of parsing the index JSON and building the ranker. The layout is little-endian and executes nothing on
load (no pickle): `MAGIC`, a JSON manifest (the format, the index version and the code digest it was built from,
each array's dtype, shape and offset), the arrays, and a SHA-256 of all that. What depends on configuration (the
page-kind rules) is not stored: `Ranker.assemble` works it out on load. An artifact that fails its checksum, its
format, its index version or its code digest is refused (`ArtifactError`): the caller builds the ranker itself.

The full specification (every array, and why this shape) is in `docs/how-it-works/formats.md`.
"""

from __future__ import annotations

import array as pyarray
import hashlib
import json
import struct
from collections.abc import Sequence
from itertools import pairwise
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from shared.providers.mkdocs.codeblocks.code import CodeBlock
from shared.providers.mkdocs.codeblocks.coderank import CodeRanker
from shared.providers.mkdocs.indexes.index import (
    TEXT_FIELDS,
    EntryColumns,
    IndexEntry,
    IndexFormat,
    SiteIndex,
    page_groups,
)
from shared.providers.mkdocs.indexes.kinds import PathWeights
from shared.providers.mkdocs.scoring.parameters import DEFAULT
from shared.providers.mkdocs.scoring.postings import FieldView, Postings
from shared.providers.mkdocs.scoring.ranking import RankedPage, Ranker

MAGIC = b"DOCRANK\x01"
FORMAT = 6
_SMALL = 65_536
"""What a uint16 can number: documents and distinct values up to this many are stored in two bytes."""
_HEADER = struct.Struct("<8sI")
_ALIGN = 8
_PIECE = 64 * 1024
"""About how many bytes of a text column `_decodes` checks at a time."""
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
    _vocabulary("vocabulary", ranker.vocabulary, arrays, scalars)
    for name, postings in (
        ("page_view", ranker.page_view.postings),
        ("section_view", ranker.section_view.postings),
        ("titles", ranker.titles),
    ):
        _postings(name, postings, arrays, scalars)
    code_view = CodeRanker.build(index).view  # with the default code parameters, as `CodeColumns.view` is used
    _vocabulary("code_vocabulary", code_view.postings.terms, arrays, scalars)
    _postings("code_view", code_view.postings, arrays, scalars)
    groups = page_groups(entries)  # the ranker's pages (`ranking._pages`)
    arrays["pages.heads"] = np.array([head for head, _ in groups], dtype=np.int32)
    arrays["pages.sections"] = np.array([n for _, sections in groups for n in sections], dtype=np.int32)
    arrays["pages.offsets"] = np.cumsum([0, *(len(sections) for _, sections in groups)], dtype=np.int64)
    chars = [index.page_chars[entries[sections[0]].page] for _, sections in groups]
    arrays["pages.chars"] = np.array(chars, dtype=np.int64)
    blocks = json.dumps([list(block) for block in index.code], ensure_ascii=False, separators=(",", ":"))
    arrays["code.json"] = np.frombuffer(blocks.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    scalars["code.blocks"] = len(index.code)
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
        "indexFormat": index.format.value,
        "index": index_digest,
        "code": code,
        "entries": len(entries),
        "size": offset,
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

    count = int(manifest["entries"])
    columns = {name: _column(array(f"entries.{name}"), array(f"entries.{name}.offsets")) for name in TEXT_FIELDS}
    entries = EntryColumns(
        {name: column for name, (column, _) in columns.items()},
        {name: bounds for name, (_, bounds) in columns.items()},
        array("entries.anchor_set").astype(bool).tolist(),
        pyarray.array("d", array("entries.boost").astype(np.float64).tobytes()),
    )
    if len(entries) != count:
        raise ArtifactError("the entry columns disagree in length")
    groups = _groups(array, count)
    chars = array("pages.chars").tolist()
    if len(chars) != len(groups):
        raise ArtifactError("the page columns disagree in length")
    cut: dict[int, IndexEntry] = {}  # the entries a load needs (each page's first and representative), cut once

    def entry(number: int) -> IndexEntry:
        found = cut.get(number)
        if found is None:
            found = cut[number] = entries[number]
        return found

    paged = [(entry(sections[0]), sections, length) for (_, sections), length in zip(groups, chars, strict=True)]
    code_view = {name: array(name).copy() for name in table if name.startswith(("code_view.", "code_vocabulary."))}
    code_scalars = {name: int(scalars[name]) for name in ("code_view.documents", "code_vocabulary.terms")}
    blocks = CodeColumns(bytes(array("code.json")), int(scalars["code.blocks"]), code_view, code_scalars)
    index = SiteIndex.build(site, entries, paged=paged, format=IndexFormat(manifest["indexFormat"]), code=blocks)
    vocabulary = _terms(array("vocabulary.terms"), int(scalars["vocabulary.terms"]))
    page_view, section_view, titles = (
        _unpostings(array, name, int(scalars[f"{name}.documents"]), vocabulary)
        for name in ("page_view", "section_view", "titles")
    )
    views = FieldView.of(page_view.documents, page_view), FieldView.of(section_view.documents, section_view)
    pages = [RankedPage(entry(head), sections) for head, sections in groups]
    return index, Ranker.assemble(index, kinds, views[0], views[1], titles, pages)


class CodeColumns(Sequence[CodeBlock]):
    """A prebuilt ranker's code blocks: their count at once, the blocks themselves decoded on first use (a code search
    or an embedding run), from the artifact's JSON; a JSON that does not give exactly that many blocks of the right
    shape gives none (the count stays, so stored vectors still line up, and code search finds nothing there). Their
    BM25F view (`coderank.CodeRanker`) is stored too, and decoded by the first code search (`view`): a few
    milliseconds where building it took 0.2 to 0.4 s for forge's 2,150 blocks."""

    __slots__ = ("_arrays", "_count", "_decoded", "_payload", "_scalars")

    def __init__(
        self, payload: bytes, count: int, arrays: dict[str, Any] | None = None, scalars: dict[str, int] | None = None
    ) -> None:
        self._payload = payload
        self._count = count
        self._decoded: list[CodeBlock] | None = None
        self._arrays = arrays or {}
        self._scalars = scalars or {}

    def view(self) -> FieldView | None:
        """The blocks' stored BM25F view (built with the default code parameters), or None when it does not fit."""
        try:
            vocabulary = _terms(self._arrays["code_vocabulary.terms"], self._scalars["code_vocabulary.terms"])
            documents = self._scalars["code_view.documents"]
            postings = _unpostings(self._arrays.__getitem__, "code_view", documents, vocabulary)
        except (ArtifactError, KeyError, TypeError, ValueError, IndexError):
            return None
        return FieldView.of(documents, postings) if documents == self._count else None

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, key: int) -> CodeBlock: ...

    @overload
    def __getitem__(self, key: slice) -> list[CodeBlock]: ...

    def __getitem__(self, key: int | slice) -> CodeBlock | list[CodeBlock]:
        return self._blocks()[key]

    def _blocks(self) -> list[CodeBlock]:
        if self._decoded is None:
            self._decoded = _decoded_blocks(self._payload, self._count)
            self._payload = b""
        return self._decoded


def _decoded_blocks(payload: bytes, count: int) -> list[CodeBlock]:
    fields = len(CodeBlock._fields)
    try:
        rows = json.loads(payload.decode("utf-8", "surrogatepass")) if payload else []
        blocks = [
            CodeBlock._make(row)
            for row in rows
            if isinstance(row, list)
            and len(row) == fields
            and all(isinstance(value, str) or (value is None and number == 2) for number, value in enumerate(row))
        ]
    except (ValueError, TypeError):
        blocks = []
    return blocks if len(blocks) == count else [_EMPTY_BLOCK] * count


_EMPTY_BLOCK = CodeBlock("", "", None, "", "", "", "", "", "")


def _vocabulary(name: str, vocabulary: dict[str, int], arrays: dict[str, Any], scalars: dict[str, int]) -> None:
    terms = [""] * len(vocabulary)
    for term, number in vocabulary.items():
        terms[number] = term
    if any(_SEPARATOR in term for term in terms):
        raise ValueError("a term holds the separator")
    arrays[f"{name}.terms"] = np.frombuffer(_SEPARATOR.join(terms).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    scalars[f"{name}.terms"] = len(terms)


def _postings(name: str, postings: Postings, arrays: dict[str, Any], scalars: dict[str, int]) -> None:
    distinct, codes = np.unique(postings.values, return_inverse=True)
    arrays[f"{name}.offsets"] = np.frombuffer(postings.offsets, dtype=np.int64)
    arrays[f"{name}.numbers"] = postings.numbers.astype(_numbering(postings.documents))
    arrays[f"{name}.distinct"] = distinct.astype(np.float64, copy=False)
    arrays[f"{name}.codes"] = codes.astype(_numbering(len(distinct)))
    scalars[f"{name}.documents"] = postings.documents


def _terms(blob: npt.NDArray[np.uint8], count: int) -> dict[str, int]:
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


def _column(blob: npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64]) -> tuple[bytes, pyarray.array[int]]:
    """A column's UTF-8 and its cut points, checked: every cut falls between characters and never goes backwards,
    and the whole decodes, so each entry's slice decodes too (`EntryColumns` checks the ends).

    Kept as UTF-8, not decoded: a Python string takes the width of its widest character, so one emoji in forge's
    text made the whole column four bytes a character (12 MB, about 90 MB at eight times the sample corpus)."""
    if len(offsets) > 1 and bool((np.diff(offsets) < 0).any()):
        raise ArtifactError("string offsets go backwards")
    inside = offsets[(offsets >= 0) & (offsets < len(blob))]
    if len(inside) and bool(((blob[inside] & 0xC0) == 0x80).any()):  # a UTF-8 continuation byte
        raise ArtifactError("a string offset falls inside a character")
    column = blob.tobytes()
    _decodes(column, inside.tolist())
    return column, pyarray.array("q", offsets.astype(np.int64).tobytes())


def _decodes(column: bytes, cuts: list[int]) -> None:
    """Raise ArtifactError unless the column decodes: checked a piece of about `_PIECE` bytes at a time, cut at its
    entries' bounds (between characters, and in order: `_column` checked), so no string of a whole column is made
    (forge's text with its one emoji: 4.7 ms whole, 0.7 ms in pieces)."""
    if column.isascii():
        return
    step = max(1, len(cuts) * _PIECE // len(column))
    view = memoryview(column)
    for start, end in pairwise([0, *cuts[::step], len(column)]):
        try:
            str(view[start:end], "utf-8", "surrogatepass")
        except UnicodeDecodeError:
            raise ArtifactError("undecodable text") from None


def _unpostings(array: Any, name: str, documents: int, vocabulary: dict[str, int]) -> Postings:
    offsets = array(f"{name}.offsets").astype(np.int64, copy=False)  # copied into the Postings
    numbers = array(f"{name}.numbers").astype(np.int32)
    distinct = array(f"{name}.distinct").astype(np.float64, copy=False)
    codes = array(f"{name}.codes")
    if len(codes) and (int(codes.min()) < 0 or int(codes.max()) >= len(distinct)):
        raise ArtifactError(f"{name}: a posting names a value that is not there")
    values = distinct[codes]  # the very floats the ranker was built with
    if not 1 <= len(offsets) <= len(vocabulary) + 1 or int(offsets[0]) != 0 or int(offsets[-1]) != len(numbers):
        raise ArtifactError(f"{name}: postings do not add up")
    if len(numbers) != len(values) or (len(offsets) > 1 and bool((np.diff(offsets) < 0).any())):
        raise ArtifactError(f"{name}: postings do not add up")
    if len(numbers) and (int(numbers.min()) < 0 or int(numbers.max()) >= documents):
        raise ArtifactError(f"{name}: a posting names a document that is not there")
    return Postings(documents, vocabulary, pyarray.array("q", offsets.tobytes()), numbers, values)
