"""A provider double that meets the provider contract: scripted results, misses and failures, and a record of calls."""

from __future__ import annotations

from shared.errors import ProviderDeclinedError, ResolutionError
from shared.models import Document, Found, Reason, Resolution, Rule, SearchResult, VersionSet
from shared.providers.base import Capabilities, ProviderHealth
from shared.requests import ReadRequest, SearchRequest


def result(location: str, provider: str) -> SearchResult:
    return SearchResult(
        location=location, title=location, url="u", site="s", preview_text="p", score=1.0, provider=provider
    )


class FakeProvider:
    def __init__(
        self,
        name: str,
        order: int,
        *,
        results: int = 0,
        error: BaseException | None = None,
        document: bool = False,
        miss: Reason | None = None,
        supports_fetch: bool = True,
        sites: tuple[str, ...] = ("forge",),
        supports_versions: bool = False,
    ) -> None:
        self.name, self.order, self.sites = name, order, sites
        self.capabilities = Capabilities(fetch=supports_fetch, versions=supports_versions)
        self._results, self._error, self._document, self._miss = results, error, document, miss
        self.calls: list[tuple[str, int]] = []
        self.sites_asked: list[str | None] = []
        self.closed = False

    async def search(self, request: SearchRequest) -> Found:
        self.calls.append((request.query, request.limit))
        self.sites_asked.append(request.site)
        if self._error:
            raise self._error
        return Found([result(f"{self.name}-{i}", self.name) for i in range(self._results)])

    async def get(self, request: ReadRequest) -> Document:
        location = request.location
        self.calls.append((location, 0))
        if self._error:
            raise self._error
        resolution = Resolution(
            requested_location=location, reason=self._miss or Reason.RESOLVED, rule=Rule.EXACT, detail=self.name
        )
        if not self._document:
            raise ResolutionError(resolution)
        return Document(
            requested_location="inner",
            location=location,
            site="s",
            url="u",
            provider=self.name,
            content="# Page\n",
            resolution=resolution,
        )

    async def versions(self, site: str) -> VersionSet | None:
        raise ProviderDeclinedError("a fake lists no versions")

    def health(self) -> ProviderHealth:
        return ProviderHealth()

    async def aclose(self) -> None:
        self.closed = True
