"""The publish hook over HTTP: its own credential, its answers, its rate, and a publish seen by a second instance
sharing the storage. Real apps under uvicorn, the fixture origin, Azurite."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from shared.api import create_app
from shared.api.admin import BURST
from tests.support.sites import ROOTED_OVERRIDE, fixture_settings
from tests.support.uvicorn_server import UvicornServer
from tools.azurite import Azurite
from tools.static_origin import StaticOrigin

TOKEN = "publish-secret-1"
READ_TOKEN = "read-secret"
SITE = "beta-docs"
INDEX = f"/{SITE}/search/search_index.json"
NEW_PAGE = "release-train/"
HOOK = "/api/admin/refresh"


def hook_headers(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def settings_for(origin: StaticOrigin, azurite: Azurite, container: str, **extra: str) -> Any:
    return fixture_settings(
        origin.url,
        {"AzureWebJobsStorage": azurite.connection_string},
        SearchIndexOverrides=ROOTED_OVERRIDE,
        Cache__Container=container,
        Refresh__Tokens=f"{TOKEN},publish-secret-2",
        Inbound__Tokens=READ_TOKEN,
        Search__Semantic="false",
        **extra,
    )


@pytest.fixture
def instance(static_origin: StaticOrigin, azurite: Azurite, blob_container: str) -> Iterator[httpx.Client]:
    settings = settings_for(static_origin, azurite, blob_container)
    with UvicornServer(create_app(settings)) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def publish_new_page(origin: StaticOrigin, built_origin: Path) -> None:
    """The docs pipeline publishes: a new page and the index that lists it."""
    published = json.loads((built_origin / SITE / "search" / "search_index.json").read_bytes())
    entry = {"location": NEW_PAGE, "title": "Release train", "text": "<p>The release train leaves every Tuesday.</p>"}
    origin.respond(
        INDEX, body=json.dumps({**published, "docs": [*published["docs"], entry]}), content_type="application/json"
    )
    origin.respond(f"/{SITE}/{NEW_PAGE}", body="<html><body><h1>Release train</h1><p>Every Tuesday.</p></body></html>")


def found(client: httpx.Client, query: str = "release train tuesday") -> list[str]:
    response = client.get("/api/docs/search", params={"q": query, "site": SITE}, headers=hook_headers(READ_TOKEN))
    assert response.status_code == 200, response.text
    return [result["location"] for result in response.json()["results"]]


def test_the_hook_refuses_callers_without_its_own_token(instance: httpx.Client) -> None:
    missing = instance.post(HOOK)
    assert missing.status_code == 401 and missing.headers["WWW-Authenticate"] == "Bearer"
    assert missing.json()["error"]["code"] == "unauthorized"
    assert instance.post(HOOK, headers=hook_headers("wrong")).status_code == 401
    assert instance.post(HOOK, headers=hook_headers(READ_TOKEN)).status_code == 401  # reading is not publishing
    # ... and the hook's token does not read.
    assert instance.get("/api/docs/search", params={"q": "x"}, headers=hook_headers()).status_code == 401


def test_other_methods_are_refused(instance: httpx.Client) -> None:
    for method in ("GET", "PUT", "DELETE", "PATCH"):
        response = instance.request(method, HOOK, headers=hook_headers())
        assert response.status_code == 405, method
        assert response.json()["error"]["code"] == "method_not_allowed"


def test_bad_bodies_are_refused_with_a_reason(instance: httpx.Client) -> None:
    cases = {
        b"not json": "must be JSON",
        b"[1]": "JSON object",
        b'{"sites": "beta-docs"}': "list of site names",
        b'{"sites": ["beta-dcos"]}': "beta-docs",
        b'{"site": ["beta-docs"]}': "this takes: sites",
        b"[" * 10_000: "nested too deeply",
        b'{"sites": ' + b"[" * 5_000 + b"]" * 5_000 + b"}": "nested too deeply",
        b'{"sites": [["beta-docs"]]}': "list of site names",
        b'{"\\ud800": 1}': "field names must be text",
        b'{"sites": ["\\udfff"]}': "sites must be text",
        b'{"sites": ["beta-docs\xff"]}': "UTF-8",
        b'{"\\u0000x": 1, "sites": []}': "no field one here",
    }
    for body, said in cases.items():
        response = instance.post(HOOK, content=body, headers=hook_headers())
        assert response.status_code == 400, body[:40]
        assert said in response.json()["error"]["message"], (body[:40], response.json())


def test_a_body_is_refused_by_its_size_before_it_is_read_whole(instance: httpx.Client) -> None:
    """200 MB sent to the hook, declared and streamed: refused after a few kilobytes, never held in memory."""
    address = urlsplit(str(instance.base_url))
    chunk = b"x" * (1024 * 1024)
    request = f"POST {HOOK} HTTP/1.1\r\nHost: {address.netloc}\r\nAuthorization: Bearer {TOKEN}\r\n"
    with ResidentPeak() as peak:
        answers = []
        for framing in ("Content-Length: 209715200\r\n\r\n", "Transfer-Encoding: chunked\r\n\r\n"):
            chunked = framing.startswith("Transfer")
            with socket.create_connection((address.hostname, address.port), timeout=30) as connection:
                connection.sendall((request + framing).encode())
                answers.append(_send_until_answered(connection, chunk, 200, chunked=chunked))
    assert [answer.split(b"\r\n", 1)[0] for answer in answers] == [b"HTTP/1.1 400 Bad Request"] * 2
    assert all(b"larger than 16,384 bytes" in answer for answer in answers)
    assert peak.grown_mb < 60, peak.grown_mb


def _send_until_answered(connection: socket.socket, chunk: bytes, chunks: int, *, chunked: bool) -> bytes:
    """Send up to `chunks` chunks, stopping once the server answers (or stops reading); its answer."""
    framed = b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk
    for _ in range(chunks):
        if select.select([connection], [], [], 0)[0]:
            break
        try:
            connection.sendall(framed)
        except OSError:  # the server answered and closed
            break
    answer = b""
    while b"\r\n\r\n" not in answer or not answer.endswith(b"}"):
        received = connection.recv(65536)
        if not received:
            break
        answer += received
    return answer


class ResidentPeak:
    """The most this process's resident memory grew while inside the block (sampled every few milliseconds)."""

    def __init__(self) -> None:
        self._start = self._peak = _resident_mb()
        self._done = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)

    @property
    def grown_mb(self) -> float:
        return self._peak - self._start

    def _sample(self) -> None:
        while not self._done.wait(0.005):
            self._peak = max(self._peak, _resident_mb())

    def __enter__(self) -> ResidentPeak:
        self._sampler.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._sampler.join()
        self._peak = max(self._peak, _resident_mb())


def _resident_mb() -> float:
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmRSS:", 1)[1].split()[0]) / 1024


def test_wrong_tokens_are_throttled_per_address_before_any_token_is_compared(instance: httpx.Client) -> None:
    statuses = [instance.post(HOOK, headers=hook_headers(f"guess-{number}")).status_code for number in range(60)]
    assert statuses[:BURST] == [401] * BURST
    assert set(statuses[BURST:]) == {429}
    # Meanwhile even the right token is not compared: a 200 would tell the guesser it had found one.
    refused = instance.post(HOOK, json={"sites": [SITE]}, headers=hook_headers())
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1


def test_a_new_forwarded_address_per_guess_does_not_escape_the_throttle(instance: httpx.Client) -> None:
    statuses = [
        instance.post(HOOK, headers={**hook_headers(f"guess-{n}"), "X-Forwarded-For": f"10.9.{n}.1"}).status_code
        for n in range(30)
    ]
    assert statuses[:BURST] == [401] * BURST and set(statuses[BURST:]) == {429}


def test_a_publish_is_refreshed_and_answered_per_site_with_its_index_time(
    instance: httpx.Client, static_origin: StaticOrigin, built_origin: Path
) -> None:
    assert NEW_PAGE.rstrip("/") not in " ".join(found(instance))  # the instance has loaded the old index
    publish_new_page(static_origin, built_origin)

    response = instance.post(HOOK, json={"sites": ["Beta-Docs"]}, headers=hook_headers("publish-secret-2"))

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "done" and set(body["sites"]) == {SITE}
    outcome = body["sites"][SITE]
    assert outcome["outcome"] == "changed" and outcome["pages"] == "checked: 0 missing"
    fetched_at = datetime.fromisoformat(outcome["fetchedAt"])
    # The instance that refreshed serves it without waiting for its check interval.
    results = instance.get(
        "/api/docs/search", params={"q": "release train tuesday", "site": SITE}, headers=hook_headers(READ_TOKEN)
    ).json()
    assert any(NEW_PAGE.rstrip("/") in result["location"] for result in results["results"])
    assert datetime.fromisoformat(results["sites"][SITE]["indexedAt"]) >= fetched_at.replace(microsecond=0)
    again = instance.post(HOOK, json={"sites": [SITE]}, headers=hook_headers()).json()
    assert again["sites"][SITE]["outcome"] == "unchanged"


def test_an_empty_body_refreshes_every_site(instance: httpx.Client) -> None:
    body = instance.post(HOOK, headers=hook_headers()).json()
    assert set(body["sites"]) == {"alpha", "beta-docs", "gamma-docs", "rooted-docs", "missing-docs"}
    assert body["sites"]["missing-docs"]["outcome"] == "failed"  # not published: said, not hidden
    assert {body["sites"][site]["outcome"] for site in ("alpha", "beta-docs")} == {"changed"}
    for empty in (b"[]", b"{}", b'{"sites": []}'):  # as docs/api/index.md says
        answer = instance.post(HOOK, content=empty, headers={**hook_headers(), "Prefer": "respond-async"})
        assert answer.status_code == 202, (empty, answer.text)
        assert len(answer.json()["sites"]) == 5, empty


def test_a_caller_that_will_not_wait_reads_the_outcome_where_it_is_told(instance: httpx.Client) -> None:
    response = instance.post(HOOK, json={"sites": [SITE]}, headers={**hook_headers(), "Prefer": "respond-async"})
    assert response.status_code == 202
    location = response.headers["Location"]
    assert location == response.json()["location"] and location.startswith(HOOK + "/runs/")
    assert instance.get(location).status_code == 401  # the outcome is the hook's too

    deadline = time.monotonic() + 30
    while (report := instance.get(location, headers=hook_headers()).json())["status"] != "done":
        assert time.monotonic() < deadline, report
    assert report["sites"][SITE]["outcome"] in ("changed", "unchanged")
    assert instance.get(HOOK + "/runs/" + "0" * 32, headers=hook_headers()).status_code == 404
    assert instance.get(HOOK + "/runs/not-a-run", headers=hook_headers()).status_code == 400


def test_a_caller_calling_too_often_is_told_when_to_come_back(instance: httpx.Client) -> None:
    async_headers = {**hook_headers(), "Prefer": "respond-async"}
    statuses = [instance.post(HOOK, json={"sites": [SITE]}, headers=async_headers).status_code for _ in range(BURST)]
    assert set(statuses) == {202}
    refused = instance.post(HOOK, json={"sites": [SITE]}, headers=async_headers)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
    # Another caller (another token) has its own allowance.
    other = instance.post(
        HOOK, json={"sites": [SITE]}, headers={**hook_headers("publish-secret-2"), "Prefer": "respond-async"}
    )
    assert other.status_code == 202


def test_without_refresh_tokens_the_hook_is_off(static_origin: StaticOrigin) -> None:
    settings = fixture_settings(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE)
    with UvicornServer(create_app(settings)) as server, httpx.Client(base_url=server.url) as client:
        response = client.post(HOOK, headers=hook_headers())
    assert response.status_code == 401 and "Refresh__Tokens" in response.json()["error"]["message"]


def test_a_publish_hooked_on_one_instance_is_searched_on_another_sharing_the_storage(
    static_origin: StaticOrigin, built_origin: Path, azurite: Azurite, blob_container: str
) -> None:
    settings = settings_for(static_origin, azurite, blob_container, Cache__CheckIntervalSeconds="0.5")
    with (
        UvicornServer(create_app(settings)) as first_server,
        UvicornServer(create_app(settings)) as second_server,
        httpx.Client(base_url=first_server.url, timeout=60) as first,
        httpx.Client(base_url=second_server.url, timeout=60) as second,
    ):
        assert not any(NEW_PAGE.rstrip("/") in location for location in found(second))  # loaded, old index
        publish_new_page(static_origin, built_origin)
        assert first.post(HOOK, json={"sites": [SITE]}, headers=hook_headers()).json()["sites"][SITE]["outcome"] == (
            "changed"
        )
        deadline = time.monotonic() + 30
        while not any(NEW_PAGE.rstrip("/") in location for location in found(second)):
            assert time.monotonic() < deadline, "the second instance never served the published page"
