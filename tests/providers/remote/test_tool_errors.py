"""A miss crosses from one deployment to another as it was: B's MCP tool error, read by A's remote provider through
the official MCP client, keeps every candidate whole (commas, quotes and any script included)."""

from __future__ import annotations

import pytest

from shared.api import create_app
from shared.errors import ResolutionError
from shared.models import Document, Reason, Resolution
from shared.providers.remote import RemoteProvider
from shared.requests import ReadRequest
from shared.settings import RemoteSettings
from tests.providers.remote.conftest import MCP, b_settings
from tests.support.providers import FakeProvider
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin

CANDIDATES = ["alpha/a, b/", 'alpha/say "hi"/', "alpha/größe/", "beta/页面, ñ/", "beta/plain/"]


class Ambiguous(FakeProvider):
    """Finds every location on several pages, with awkward names."""

    async def get(self, request: ReadRequest) -> Document:
        raise ResolutionError(
            Resolution(
                requested_location=request.location,
                reason=Reason.AMBIGUOUS,
                detail=f"{request.location} matches several pages",
                candidates=CANDIDATES,
            )
        )


@pytest.mark.parametrize("location", ["tricky", "a, b"])
async def test_bs_candidates_reach_a_whole(static_origin: StaticOrigin, location: str) -> None:
    app = create_app(b_settings(static_origin), embedding=None, providers=(Ambiguous("ambiguous", 0),))
    with UvicornServer(app) as b:
        provider = RemoteProvider(RemoteSettings.model_validate({"Endpoint": b.url + MCP}), sites=("alpha",))
        with pytest.raises(ResolutionError) as missed:
            await provider.get(ReadRequest(location))
        await provider.aclose()

    assert missed.value.resolution.reason is Reason.AMBIGUOUS
    assert missed.value.resolution.candidates == CANDIDATES
    assert missed.value.resolution.detail == f"the remote deployment: {location} matches several pages"
