"""What a client may cache, said the same way on both protocols: how long, and whether one cached copy may serve
other callers.

- The tool list, the resource templates and `server/discover` change only with a deployment (or a restart with new
  settings): `DEPLOYMENT_TTL_SECONDS`.
- A page read is fresh no longer than the service's own copy of it would be (`Document.fresh_for`: what is left of
  its page cache's freshness, at most the index check interval), so a cached page is never staler than a new read.
- The scope is `public` only when nothing checks the caller; any gate (a Functions key, `Inbound__Tokens`, Entra
  sign-in) makes it `private`, so no shared cache hands one caller's answer to another.

REST `get` carries the same as `Cache-Control` and a weak `ETag` (the front matter's `retrieved` differs between two
reads of one copy of a page, which is why the tag is weak) made from the page's `contentHash` and what was asked,
answered `304` on `If-None-Match`.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Literal

from shared.models import Document
from shared.reading import Read

DEPLOYMENT_TTL_SECONDS = 3_600
"""How long the tool list, the templates and discover may be cached: an hour, so a changed site list (a settings
change restarts the app) reaches clients the same day without a client re-listing on every call."""

Scope = Literal["public", "private"]


def scope(gated: bool) -> Scope:
    return "private" if gated else "public"


def fresh_seconds(document: Document) -> int:
    """Whole seconds a client may keep this read (rounded down: never past the service's own freshness)."""
    return max(0, math.floor(document.fresh_for))


def cache_control(document: Document, *, gated: bool) -> str:
    return f"{scope(gated)}, max-age={fresh_seconds(document)}"


def etag(document: Document, read: Read) -> str:
    """A weak validator for this answer: the page's content and where it resolved, and the part that was asked."""
    content = document.content_hash or hashlib.sha256(document.content.encode()).hexdigest()
    asked = [
        content,
        document.site,
        document.location,
        document.provider,
        read.section,
        read.offset,
        read.max_chars,
        read.view.value,
    ]
    digest = hashlib.sha256(json.dumps(asked).encode()).hexdigest()[:32]
    return f'W/"{digest}"'


def matches(if_none_match: str | None, tag: str) -> bool:
    """Whether an `If-None-Match` header names `tag` (weak comparison, RFC 9110 13.1.2; `*` matches any)."""
    if not if_none_match:
        return False
    wanted = tag.removeprefix("W/")
    for candidate in if_none_match.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == wanted:
            return True
    return False
