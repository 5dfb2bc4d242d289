"""A resource that cannot be read is answered in each MCP revision's own code: `-32602` in 2026-07-28 (which
retired `-32002`), `-32002` in 2025-11-25, for a page that does not exist and for a page of a site that cannot be
read alike, the reason first in the message and in `data`; never `-32603`, never an ERROR line."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from shared.api import create_app
from tests.api.test_mcp_revisions import LEGACY, MODERN, call
from tests.support.sites import fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin

UNPUBLISHED = "ghost-docs"


@pytest.fixture
def server(static_origin: StaticOrigin) -> Iterator[UvicornServer]:
    settings = fixture_settings(static_origin.url, Search__Semantic="false", Sites=f"alpha,{UNPUBLISHED}")
    with UvicornServer(create_app(settings, embedding=None)) as running:
        yield running


@pytest.mark.parametrize(("era", "code"), [(MODERN, -32602), (LEGACY, -32002)])
@pytest.mark.parametrize(
    ("uri", "reason"),
    [("docs://alpha/no/such/page", "not_found"), (f"docs://{UNPUBLISHED}/guide/install", "site_unavailable")],
    ids=["missing page", "unpublished site"],
)
def test_a_resource_that_cannot_be_read_has_the_revisions_code(
    server: UvicornServer, caplog: pytest.LogCaptureFixture, era: str, code: int, uri: str, reason: str
) -> None:
    caplog.set_level(logging.INFO)
    answer = call(server.url, era, "resources/read", {"uri": uri}).json()
    assert answer["error"]["code"] == code, answer
    assert answer["error"]["message"].startswith(reason) and answer["error"]["data"]["error"]["code"] == reason
    assert not [record for record in caplog.get_records("call") if record.levelno >= logging.ERROR]
