"""The stored layouts' common frame (pure): a magic line, a JSON header, the parts, then a SHA-256 of all that
(`vectors.SiteVectors`, `vectors.ScanRows`, `pieces.Pieces`; drawn in docs/how-it-works/formats.md)."""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any


def framed(magic: bytes, header: dict[str, object], *parts: bytes) -> bytes:
    """A stored layout: `magic`, the header's length (uint32, little-endian), the header (compact JSON), the parts,
    then the SHA-256 of all that."""
    head = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    body = b"".join((magic, struct.pack("<I", len(head)), head, *parts))
    return body + hashlib.sha256(body).digest()


def unframed(payload: bytes, magic: bytes, version: int, model_id: str) -> tuple[Any, memoryview, int] | None:
    """`framed`'s header, the checked body and where its parts start; None when the checksum fails, or the payload
    is of another layout, layout version or model. Raises ValueError, struct.error and the like on a header that does
    not parse (the callers refuse those with everything else that does not add up)."""
    body, checksum = memoryview(payload)[:-32], payload[-32:]  # a view: the body is not copied
    if body[: len(magic)] != magic or hashlib.sha256(body).digest() != checksum:
        return None
    (size,) = struct.unpack_from("<I", body, len(magic))
    start = len(magic) + 4 + size
    header = json.loads(bytes(body[len(magic) + 4 : start]))
    if header.get("format") != version or header.get("model") != model_id:
        return None
    return header, body, start


def counts_of(header: Any, *names: str) -> tuple[int, ...] | None:
    """These header fields as integers, or None when any is missing or not one (a JSON `true` included)."""
    values = tuple(header.get(name) for name in names)
    if not all(isinstance(value, int) and not isinstance(value, bool) for value in values):
        return None
    return values
