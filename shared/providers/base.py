"""The provider contract: what the chain needs from every documentation provider, and nothing more.

A provider answers in its own way (a search index service, another deployment, the MkDocs sites themselves) and
reports failure by raising from `shared.errors`:

- `search` returns a list, empty when it has nothing; `get` returns a Document or raises `ResolutionError` with
  the spec's reason when the location does not lead to a page it can serve.
- Anything it cannot do at all (unconfigured, unreachable, cooling down, a `site` outside its scope) is a
  `ProviderError` (`ProviderDeclinedError` when it chose not to try); the chain logs it and falls through.
- `sites` names the sites it serves; the chain checks a caller's `site` against the union of every provider's
  `sites` once, and passes it only to providers that declare it, in their own spelling.
- `health` is free-form and must not do I/O; `aclose` releases what the provider opened.

Providers never import each other or the chain; the composition root (`shared.compose`) builds them.
"""

from __future__ import annotations

from typing import Protocol

from shared.models import Document, SearchResult


class DocumentationProvider(Protocol):
    """One link of the chain. Search-only providers set `supports_fetch = False` and are never asked to get."""

    name: str
    """Attribution: what `provider` in answers and the `docs.*.provider` tags say."""
    order: int
    """Position in the chain, ascending; ties keep registration order."""
    supports_fetch: bool
    sites: tuple[str, ...]

    async def search(self, query: str, *, limit: int, site: str | None = None) -> list[SearchResult]:
        """Up to `limit` results, best first; `site`, when given, is one of `sites`."""
        ...

    async def get(self, location: str, *, outline: bool = False) -> Document:
        """The whole page at a validated location; raises ResolutionError on a miss. With `outline`, the document
        carries the page's headings (`Document.outline`, anchors from the site's search index); a provider that
        cannot tell them raises a miss, so the chain asks the next one."""
        ...

    def health(self) -> dict[str, object]:
        """What this provider wants operators to see, without doing I/O."""
        ...

    async def aclose(self) -> None:
        """Release clients and stop background work."""
        ...
