"""The record of a site's missing pages: pages its index lists that the origin does not serve (pure, no I/O).

An MkDocs index can keep an entry for a page the site no longer publishes; such a page can rank first and
then only ever answer `fetch_failed`. One record per site, for one version of its index, is kept beside the index
in the shared store (`shared.cache.missing_name`), so every instance drops what any instance found:

    {"format": 1,
     "index": "<sha256 of the index payload>",
     "missing": ["legacy/phantom/"],
     "checked": ["", "guide/install/", ...],
     "complete": true,
     "validators": {"guide/install/": {"etag": "\\"5f-1a\\"", "lastModified": "Tue, 01 Jul 2025 10:00:00 GMT"}}}

- `missing`: page paths, as the index spells them, that the origin answered 404 or 410 (both the raw Markdown and
  the HTML page, for a `get`; the HTML page and then the raw Markdown, for the warm-up's check).
- `checked`: pages the warm-up found served for this index version; `complete` once every page was decided.
- `validators`: the ETag and Last-Modified each page was last served with. They are about the page, not the
  index, so they outlive a version: the next version's check sends them and an unchanged page costs a `304`.

A record for another index is ignored by readers (a new version starts with nothing missing) and replaced by
writers, keeping only its validators. Two records for the same index merge by union, so instances writing at
once (conditionally, merging on a conflict) never lose each other's findings. A page, once found missing, stays
missing until the next index version.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

FORMAT = 1
GONE = frozenset({404, 410})
"""Statuses that say a page does not exist; anything else (5xx, 403, 429, a timeout) says nothing about it."""


class Verdict(StrEnum):
    """What one answer from the origin says about a page."""

    SERVED = "served"
    MISSING = "missing"
    UNKNOWN = "unknown"


def verdict(status: int) -> Verdict:
    """A 2xx or a 304 (the validators still match) is a served page; 404 and 410 a missing one; else unknown."""
    if 200 <= status < 300 or status == 304:
        return Verdict.SERVED
    return Verdict.MISSING if status in GONE else Verdict.UNKNOWN


@dataclass(frozen=True, slots=True)
class Validators:
    """What the origin said a page's current representation is, for a conditional request next time."""

    etag: str | None = None
    last_modified: str | None = None

    def headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers

    def __bool__(self) -> bool:
        return bool(self.etag or self.last_modified)


@dataclass(frozen=True, slots=True)
class MissingRecord:
    """The missing pages of one index version, and how far the warm-up's check of its pages got."""

    index: str
    """The digest of the index payload these findings belong to."""
    missing: frozenset[str] = frozenset()
    checked: frozenset[str] = frozenset()
    complete: bool = False
    validators: Mapping[str, Validators] = field(default_factory=dict)
    revived: frozenset[str] = frozenset()
    """Pages once found missing that a later check found served (a page uploaded after its index, a cached 404):
    shown again. Recorded beside `missing` because writers merge by union and never remove a finding."""

    @property
    def hidden(self) -> frozenset[str]:
        """The pages to leave out of answers: found missing and not found served since."""
        return self.missing - self.revived

    def merge(self, other: MissingRecord) -> MissingRecord:
        """Both records' findings for the same index; `other`'s validators win where both have a page's."""
        if other.index != self.index:
            raise ValueError("records of different index versions do not merge")
        return MissingRecord(
            self.index,
            self.missing | other.missing,
            self.checked | other.checked,
            self.complete or other.complete,
            {**self.validators, **other.validators},
            self.revived | other.revived,
        )

    def with_missing(self, pages: Iterable[str]) -> MissingRecord:
        return replace(self, missing=self.missing | frozenset(pages))

    def unchecked(self, pages: Iterable[str]) -> list[str]:
        """The pages (in the order given) neither found served nor missing yet for this index version."""
        return [page for page in pages if page not in self.checked and page not in self.missing]

    def dumps(self) -> bytes:
        validators = {
            page: {
                key: value
                for key, value in (("etag", found.etag), ("lastModified", found.last_modified))
                if value is not None
            }
            for page, found in sorted(self.validators.items())
        }
        document = {
            "format": FORMAT,
            "index": self.index,
            "missing": sorted(self.missing),
            "checked": sorted(self.checked),
            "complete": self.complete,
            "validators": validators,
            "revived": sorted(self.revived),
        }
        return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    @classmethod
    def loads(cls, payload: bytes) -> MissingRecord | None:
        """The record, or None when the payload is not one this format describes (it is then treated as absent)."""
        try:
            document = json.loads(payload)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return None
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            return None
        index, complete = document.get("index"), document.get("complete", False)
        missing, checked = _strings(document.get("missing", [])), _strings(document.get("checked", []))
        revived = _strings(document.get("revived", []))
        validators = _validators(document.get("validators", {}))
        if not isinstance(index, str) or not index or not isinstance(complete, bool):
            return None
        if missing is None or checked is None or validators is None or revived is None:
            return None
        return cls(index, missing, checked, complete, validators, revived)


def start(previous: MissingRecord | None, index: str) -> MissingRecord:
    """The record to add findings for `index` to: `previous` when it is for that index, else a new one that keeps
    only `previous`'s validators."""
    if previous is not None and previous.index == index:
        return previous
    return MissingRecord(index, validators=previous.validators if previous is not None else {})


def missing_for(record: MissingRecord | None, index: str) -> frozenset[str]:
    """The pages `record` says are missing from the index with this digest (none when it is about another one)."""
    return record.hidden if record is not None and record.index == index else frozenset()


def _strings(value: object) -> frozenset[str] | None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return None
    return frozenset(value)


def _validators(value: object) -> dict[str, Validators] | None:
    if not isinstance(value, dict):
        return None
    found: dict[str, Validators] = {}
    for page, fields in value.items():
        if not isinstance(fields, dict):
            return None
        etag, last_modified = fields.get("etag"), fields.get("lastModified")
        if not isinstance(etag, str | None) or not isinstance(last_modified, str | None):
            return None
        found[str(page)] = Validators(etag, last_modified)
    return found
