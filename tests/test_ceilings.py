"""A caller's ceiling in the chain (`shared.service`): sites above it are, to that caller, not configured, whatever a
provider that does not honour `hidden` itself gives back."""

from __future__ import annotations

import pytest

from shared.errors import InvalidRequestError, ResolutionError
from shared.models import Document, Found, Reason, Resolution, Rule, SearchResult, SiteAnswer, SiteSearched
from shared.providers.base import Capabilities
from shared.requests import ANONYMOUS, Caller, ReadRequest, SearchRequest
from shared.service import DocumentationService

ORIGIN = "https://docs.example.com"
PLAIN, SEC = Caller("token:a", frozenset()), Caller("token:b", frozenset({"sec"}))


class Remote:
    """A provider that knows nothing of ceilings: it answers for every site it serves."""

    name, order = "remote", 50
    sites = ("forge", "runbooks")
    capabilities = Capabilities(fetch=True)

    def __init__(self, *, page_site: str = "runbooks", miss: Resolution | None = None) -> None:
        self.asked: list[frozenset[str]] = []
        self._page_site, self._miss = page_site, miss

    async def search(self, request: SearchRequest) -> Found:
        self.asked.append(request.hidden)
        results = [
            SearchResult(location=f"{site}/{n}/", title="t", url="u", site=site, preview_text="p", score=1.0,
                         provider=self.name)
            for n in range(2) for site in ("runbooks", "forge")
        ]  # fmt: skip
        states = {site: SiteSearched(state=SiteAnswer.SEARCHED) for site in self.sites}
        return Found(results, sites=states)

    async def get(self, request: ReadRequest) -> Document:
        self.asked.append(request.hidden)
        if self._miss is not None:
            raise ResolutionError(self._miss)
        resolved = Resolution(requested_location=request.location, reason=Reason.RESOLVED, rule=Rule.EXACT)
        return Document(
            requested_location=request.location, location=request.location, site=self._page_site, url="u",
            provider=self.name, content="# Page\n", resolution=resolved.model_copy(update={"site": self._page_site}),
        )  # fmt: skip

    async def versions(self, site: str) -> None:
        return None

    def health(self) -> object:
        raise NotImplementedError

    async def aclose(self) -> None:
        return None


def service(provider: Remote) -> DocumentationService:
    return DocumentationService([provider], origin=ORIGIN, audiences={"runbooks": ["sec"]})  # type: ignore[list-item]


async def test_results_and_site_states_above_the_ceiling_are_dropped() -> None:
    remote = Remote()
    chain = service(remote)
    plain = await chain.search(SearchRequest("q", caller=PLAIN))
    assert {r.site for r in plain.results} == {"forge"} and set(plain.sites or {}) == {"forge"}
    assert remote.asked[-1] == frozenset({"runbooks"})
    sec = await chain.search(SearchRequest("q", caller=SEC))
    assert {r.site for r in sec.results} == {"forge", "runbooks"} and remote.asked[-1] == frozenset()
    inside = await chain.search(SearchRequest("q"))  # the command line, the timer: every site
    assert {r.site for r in inside.results} == {"forge", "runbooks"}


async def test_naming_a_site_above_the_ceiling_is_naming_no_site() -> None:
    chain = service(Remote())
    for named in ("runbooks", "runbook"):
        with pytest.raises(InvalidRequestError) as refused:
            await chain.search(SearchRequest("q", site=named, caller=PLAIN))
        assert "runbooks" not in str(refused.value)
        with pytest.raises(InvalidRequestError):
            await chain.versions(named, PLAIN)
    assert (await chain.search(SearchRequest("q", site="runbooks", caller=SEC))).results
    assert chain.sites_for(PLAIN) == ("forge",) and chain.sites_for(SEC) == chain.sites_for(ANONYMOUS)


async def test_a_page_above_the_ceiling_is_not_found_and_misses_lead_nowhere_near_it() -> None:
    with pytest.raises(ResolutionError) as missed:
        await service(Remote()).get(ReadRequest("runbooks/rotate/", caller=PLAIN))
    assert missed.value.resolution.reason is Reason.NOT_FOUND and missed.value.resolution.site is None
    assert (await service(Remote()).get(ReadRequest("runbooks/rotate/", caller=SEC))).site == "runbooks"
    offered = Resolution(
        requested_location="rotate",
        reason=Reason.AMBIGUOUS,
        candidates=["runbooks/rotate/", "forge/rotate/"],
        suggestions=["runbooks/rotation/", "forge/rotation/"],
    )
    with pytest.raises(ResolutionError) as narrowed:
        await service(Remote(miss=offered)).get(ReadRequest("rotate", caller=PLAIN))
    assert narrowed.value.resolution.candidates == ["forge/rotate/"]
    assert narrowed.value.resolution.suggestions == ["forge/rotation/"]
    only_hidden = offered.model_copy(update={"candidates": ["runbooks/rotate/"]})
    with pytest.raises(ResolutionError) as gone:
        await service(Remote(miss=only_hidden)).get(ReadRequest("rotate", caller=PLAIN))
    assert gone.value.resolution.reason is Reason.NOT_FOUND and gone.value.resolution.candidates == []
