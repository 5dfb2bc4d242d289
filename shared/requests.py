"""What a caller asks of the chain, as one value each: a search and a read, built once at the edge (REST, MCP, the
command line) and passed unchanged through the service to every provider.

A request carries everything a provider may need to answer it: the words or the location, the scope (`site`,
`version`), the shape (`kind`, `language`; the read's section, part or outline) and who asks (`caller`), so a new
concern travels as one more field, never one more keyword copied through every provider. The service checks a
request once (`shared.validation`, `shared.reading.check_read`) and narrows its `site` to each provider's own
spelling with `scoped`; providers never change one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from shared.models import SearchKind
from shared.reading import WHOLE, Read


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks: nothing yet beyond that a caller exists (audiences and usage attribution ride here)."""


ANONYMOUS = Caller()


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """A search: the words (`*` lists pages), how many results, the scope and the kind of result."""

    query: str
    limit: int = 10
    site: str | None = None
    version: str | None = None
    kind: SearchKind = SearchKind.PAGE
    language: str | None = None
    caller: Caller = field(default=ANONYMOUS, compare=False)

    def scoped(self, site: str | None) -> SearchRequest:
        """The same request with `site` in a provider's own spelling."""
        return self if site == self.site else replace(self, site=site)


@dataclass(frozen=True, slots=True)
class ReadRequest:
    """A read of one page: its location (any spelling the resolution rules take), what of it, and which version."""

    location: str
    read: Read = WHOLE
    version: str | None = None
    caller: Caller = field(default=ANONYMOUS, compare=False)

    @property
    def outline(self) -> bool:
        """Whether the provider is to give the page's headings with it (a section or an outline is asked)."""
        return self.read.needs_outline
