"""What a caller asks of the chain, as one value each: a search and a read, built once at the edge (REST, MCP, the
command line) and passed unchanged through the service to every provider.

A request carries everything a provider may need to answer it: the words or the location, the scope (`site`,
`version`), the shape (`kind`, `language`; the read's section, part or outline) and who asks (`caller`), so a new
concern travels as one more field, never one more keyword copied through every provider. The service checks a
request once (`shared.validation`, `shared.reading.check_read`) and narrows its `site` to each provider's own
spelling with `scoped`; providers never change one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

from shared.models import SearchKind
from shared.reading import WHOLE, Read


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks, as the edge's gate knows it (audiences ride here too).

    `identity` names the credential or the client, never holding a secret: `token:<SHA-256 of the bearer token>`,
    `entra:<object id>`, `address:<client address>`; None for the command line and the timer. It is never logged or
    stored as it is: usage insights keep only a keyed hash of it (`shared.insights`).
    """

    identity: str | None = field(default=None, repr=False)
    audiences: frozenset[str] | None = None
    """The audiences the caller holds (`docs/audiences.md`), which open the sites `SiteAudiences` restricts to them;
    None: a caller inside the process (the command line, the timer), who reads every site."""


ANONYMOUS = Caller()

_CALLER: ContextVar[Caller] = ContextVar("docs_caller", default=ANONYMOUS)


@contextmanager
def calling(caller: Caller) -> Iterator[None]:
    """Inside, the request being answered is `caller`'s (set by the inbound gate, read by the edges that build
    requests: `current_caller`)."""
    token = _CALLER.set(caller)
    try:
        yield
    finally:
        _CALLER.reset(token)


def current_caller() -> Caller:
    """Who the request being answered comes from (ANONYMOUS outside one)."""
    return _CALLER.get()


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
    hidden: frozenset[str] = frozenset()
    """Sites (lower case) above the caller's ceiling, set by the service: a provider answers as if they were not
    configured (the service drops whatever of theirs comes back all the same)."""

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
    hidden: frozenset[str] = frozenset()
    """As `SearchRequest.hidden`: a page of such a site resolves as a page of a site that is not configured."""
    cleaned: bool = False
    """The page without what can carry instructions unseen (`shared.safe_content`): what an agent reads over MCP;
    REST and the command line read it as published."""

    @property
    def outline(self) -> bool:
        """Whether the provider is to give the page's headings with it (a section or an outline is asked)."""
        return self.read.needs_outline
