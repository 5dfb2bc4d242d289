"""The OpenAPI document is a contract clients generate code from: schemathesis, bounded, runs every one of its
checks against the service it describes (under uvicorn, over the MkDocs fixture origin), with data that fits the
document and data that breaks it. Driven through hypothesis directly: schemathesis' pytest plugin does not run
under pytest 9."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from shared.api import create_app
from tests.support.sites import ROOTED_OVERRIDE, fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin

EXAMPLES = 60
"""Cases per operation and mode: enough to find what a tester finds in a minute, bounded for the test command."""


@pytest.fixture(scope="module")
def served(built_origin: Path) -> Iterator[str]:
    with StaticOrigin(built_origin) as origin:
        app_settings = fixture_settings(origin.url, SearchIndexOverrides=ROOTED_OVERRIDE, Search__Semantic="false")
        with UvicornServer(create_app(app_settings)) as server:
            yield server.url


EXCLUDED: dict[str, list[Any]] = {
    "/api/docs/get": [positive_data_acceptance],
    "/api/docs/search": [positive_data_acceptance],
}
"""Checks a documented 4xx answers: a location that fits the document may still be refused (`.`/`..` segments
after decoding, backslashes, URLs off the origin: 400) or name no page (404), and a `version` that fits it may name
no version of the sites searched, or be given for an unversioned site named alone (400), which no JSON Schema can
express."""

RUNS = [
    ("/api/docs/search", GenerationMode.POSITIVE),
    ("/api/docs/search", GenerationMode.NEGATIVE),
    ("/api/docs/get", GenerationMode.POSITIVE),
    ("/api/docs/get", GenerationMode.NEGATIVE),
    ("/api/docs/versions", GenerationMode.POSITIVE),
    ("/api/docs/versions", GenerationMode.NEGATIVE),
    ("/api/health", GenerationMode.POSITIVE),  # no parameters: nothing to break
]


@pytest.mark.parametrize(("path", "mode"), RUNS, ids=[f"{path} {mode.value}" for path, mode in RUNS])
def test_the_service_does_what_its_openapi_document_says(served: str, path: str, mode: GenerationMode) -> None:
    schema = schemathesis.openapi.from_url(f"{served}/api/openapi.json")
    operation = schema[path]["GET"]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    def check(case: schemathesis.Case) -> None:
        case.call_and_validate(excluded_checks=EXCLUDED.get(path, []))

    check()


def test_an_unsupported_method_is_405_with_allow(served: str) -> None:
    import httpx

    response = httpx.post(f"{served}/api/docs/search", params={"q": "x"})
    assert response.status_code == 405 and response.headers["allow"] == "GET"
    assert response.json()["error"]["code"] == "method_not_allowed"
