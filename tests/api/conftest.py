"""The app under uvicorn over the MkDocs fixture origin, lexical, the way most API tests want it (`server`); a
module that needs other settings defines its own `server`, which wins over this one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.api import create_app
from tests.support.sites import ROOTED_OVERRIDE, fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin


@pytest.fixture
def server(static_origin: StaticOrigin) -> Iterator[UvicornServer]:
    settings = fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false")
    with UvicornServer(create_app(settings, embedding=None)) as running:
        yield running
