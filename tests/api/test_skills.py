"""This server's skill over the Skills extension (SEP-2640), black-box: declared in the capabilities, listed and got
with its manifest, read as a resource, by raw JSON-RPC in both revisions and by the official Python client."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import mcp
import pytest
import yaml
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel, ConfigDict

from shared.api import create_app
from shared.api.mcp.skills import EXTENSION_ID, SKILLS_ROOT
from shared.settings import load_settings
from tests.api.test_mcp_revisions import LEGACY, MODERN, call, result_of
from tests.support.sites import ROOTED_OVERRIDE, fixture_env
from tests.support.uvicorn_server import UvicornServer
from tools.static_origin import StaticOrigin

SKILL = "skill://docs-retrieval/SKILL.md"
ON_DISK = (SKILLS_ROOT / "docs-retrieval" / "SKILL.md").read_text(encoding="utf-8")


@pytest.fixture
def server(static_origin: StaticOrigin) -> Iterator[UvicornServer]:
    settings = load_settings(fixture_env(static_origin.url, SearchIndexOverrides=ROOTED_OVERRIDE))
    with UvicornServer(create_app(settings)) as running:
        yield running


def front_matter(text: str) -> dict[str, Any]:
    head = text.removeprefix("---\n").split("\n---\n", 1)[0]
    loaded: dict[str, Any] = yaml.safe_load(head)
    return loaded


def test_the_skill_on_disk_is_an_agent_skill_that_teaches_the_tools() -> None:
    front = front_matter(ON_DISK)
    assert front["name"] == "docs-retrieval" and len(front["description"]) <= 1024
    for taught in ("search_docs", "get_doc", "kind", "section", "version", "url", "never instructions"):
        assert taught in ON_DISK, taught


def handshake(server: UvicornServer, era: str) -> dict[str, Any]:
    if era == MODERN:
        return result_of(call(server.url, era, "server/discover"))
    params = {"protocolVersion": era, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    return result_of(call(server.url, era, "initialize", params))


@pytest.mark.parametrize("era", [MODERN, LEGACY])
def test_skills_are_declared_listed_got_and_read(server: UvicornServer, era: str) -> None:
    said = handshake(server, era)
    if era == MODERN:  # capabilities.extensions is the 2026-07-28 revision's; the methods answer in both
        assert said["capabilities"]["extensions"][EXTENSION_ID] == {}
    assert "resources" in said["capabilities"] and SKILL in said["instructions"]
    listed = result_of(call(server.url, era, "skills/list"))
    (entry,) = listed["skills"]
    assert entry["uri"] == SKILL and entry["frontmatter"] == front_matter(ON_DISK)
    raw = ON_DISK.encode("utf-8")
    manifest = {"uri": SKILL, "digest": f"sha256:{hashlib.sha256(raw).hexdigest()}", "size": len(raw)}
    assert entry["resources"] == [manifest]
    assert listed["ttlMs"] > 0 and listed["cacheScope"] in ("public", "private")
    assert result_of(call(server.url, era, "skills/get", {"uri": SKILL}))["skill"] == entry
    unknown = call(server.url, era, "skills/get", {"uri": "skill://nothing/SKILL.md"}).json()
    assert unknown["error"]["code"] == -32602
    read = result_of(call(server.url, era, "resources/read", {"uri": SKILL}))
    assert read["contents"][0]["text"] == ON_DISK and read["contents"][0]["mimeType"] == "text/markdown"
    listed_resources = result_of(call(server.url, era, "resources/list"))["resources"]
    assert any(resource["uri"] == SKILL and resource["name"] == "docs-retrieval" for resource in listed_resources)


class Listing(BaseModel):
    model_config = ConfigDict(extra="allow")
    skills: list[dict[str, Any]]


class SkillsList(types.Request[types.PaginatedRequestParams | None, str]):
    method: str = "skills/list"
    params: types.PaginatedRequestParams | None = None


@asynccontextmanager
async def session(url: str) -> AsyncIterator[ClientSession]:
    async with streamable_http_client(url + "/api/mcp") as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        yield client


async def test_the_official_python_client_lists_and_reads_the_skill(server: UvicornServer) -> None:
    async with session(server.url) as client:
        listing = await client.send_request(SkillsList(), Listing)
        assert [skill["uri"] for skill in listing.skills] == [SKILL]
        read = await client.read_resource(SKILL)
        text = read.contents[0].text  # type: ignore[union-attr]
        assert text == ON_DISK and "search_docs" in text and "get_doc" in text and "kind" in text


async def test_the_python_client_on_the_current_revision_sees_the_extension_and_reads_the_skill(
    server: UvicornServer,
) -> None:
    async with mcp.Client(server.url + "/api/mcp") as client:
        capabilities = client.session.server_capabilities
        version = client.protocol_version
        listing = await client.session.send_request(SkillsList(), Listing)
        read = await client.read_resource(SKILL)
    assert version == MODERN and capabilities is not None
    assert EXTENSION_ID in (capabilities.extensions or {})
    assert [skill["uri"] for skill in listing.skills] == [SKILL]
    assert read.contents[0].text == ON_DISK  # type: ignore[union-attr]
