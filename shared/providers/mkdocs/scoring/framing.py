"""The stored layouts' common frame (pure): a magic line, a JSON header, the parts, then a SHA-256 of all that
(`vectors.SiteVectors`, `vectors.ScanRows`, `pieces.Pieces`; drawn in docs/how-it-works/formats.md)."""

from __future__ import annotations

import hashlib
import json
import struct
from typing import NamedTuple


def framed(magic: bytes, header: dict[str, object], *parts: bytes) -> bytes:
    """A stored layout: `magic`, the header's length (uint32, little-endian), the header (compact JSON), the parts,
    then the SHA-256 of all that."""
    head = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    body = b"".join((magic, struct.pack("<I", len(head)), head, *parts))
    return body + hashlib.sha256(body).digest()


class Frame(NamedTuple):
    """What `unframed` found: the header's named counts, its `source`, the checked body and where its parts start."""

    counts: tuple[int, ...]
    source: object
    body: memoryview
    start: int


def unframed(payload: bytes, magic: bytes, version: int, model_id: str, *counts: str) -> Frame | None:
    """`framed`'s header fields `counts` (integers), its `source` (checked by the caller), the checked body and where
    its parts start; None when the checksum fails, the payload is of another layout, layout version or model, or a
    count is missing or not an integer (a JSON `true` included). Raises ValueError, struct.error and the like on a
    header that does not parse (the callers refuse those with everything else that does not add up)."""
    body, checksum = memoryview(payload)[:-32], payload[-32:]  # a view: the body is not copied
    if body[: len(magic)] != magic or hashlib.sha256(body).digest() != checksum:
        return None
    (size,) = struct.unpack_from("<I", body, len(magic))
    start = len(magic) + 4 + size
    header = json.loads(bytes(body[len(magic) + 4 : start]))
    if header.get("format") != version or header.get("model") != model_id:
        return None
    values = tuple(header.get(name) for name in counts)
    if not all(isinstance(value, int) and not isinstance(value, bool) for value in values):
        return None
    return Frame(values, header.get("source"), body, start)
