"""One local AI Search stand-in per test (tests/support/ai_search_server.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.ai_search_server import AiSearchServer


@pytest.fixture
def search_server() -> Iterator[AiSearchServer]:
    with AiSearchServer() as server:
        yield server
