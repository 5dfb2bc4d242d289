"""Shared fixtures: a hermetic environment, the built fixture origin, a static server over it, and Azurite."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from shared.cache import open_store
from shared.cache.blob import BlobStore
from shared.settings import DocumentationSettings
from tests.support.sites import ROOTED_OVERRIDE, build_fixture_origin, fixture_settings
from tests.support.stores import CountingStore
from tests.support.versioned import build_versioned_origin
from tools.azurite import Azurite, AzuriteError
from tools.static_origin import StaticOrigin

# Properties explore the same examples on every run, so a red CI is a regression, never a lucky draw; new
# examples are explored by running with HYPOTHESIS_PROFILE=explore.
hypothesis_settings.register_profile("deterministic", derandomize=True, deadline=None)
hypothesis_settings.register_profile("explore", deadline=None, max_examples=2000)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

_APP_SETTING_PREFIXES = ("forge__documentation__", "azurewebjobsstorage")


@pytest.fixture(autouse=True)
def _hermetic_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's app settings; each sets what it needs."""
    for name in list(os.environ):
        if name.lower().startswith(_APP_SETTING_PREFIXES):
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def built_origin() -> Path:
    """The fixture sites built by MkDocs into one origin directory (read-only: copy it to change it)."""
    return build_fixture_origin()


@pytest.fixture
def origin_copy(built_origin: Path, tmp_path: Path) -> Path:
    """A private, writable copy of the built origin, for tests that change published files."""
    return Path(shutil.copytree(built_origin, tmp_path / "origin"))


@pytest.fixture
def static_origin(built_origin: Path) -> Iterator[StaticOrigin]:
    """A running static server over the built origin, with a request log of this test only."""
    with StaticOrigin(built_origin) as origin:
        yield origin


@pytest.fixture(scope="module")
def versioned_origin() -> Iterator[StaticOrigin]:
    """A static server over the origin the real mike and zensical built (`tests/support/versioned.py`)."""
    with StaticOrigin(build_versioned_origin()) as origin:
        yield origin


@pytest.fixture
def outside_host() -> Iterator[StaticOrigin]:
    """A second server that serves nothing: its request log proves nothing was fetched off the origin."""
    with StaticOrigin() as host:
        yield host


@pytest.fixture(scope="session")
def azurite() -> Iterator[Azurite]:
    """One Azurite Blob service for the session; give each test its own container (see `blob_container`)."""
    try:
        emulator = Azurite().start()
    except AzuriteError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield emulator
    finally:
        emulator.stop()


@pytest.fixture
def blob_container(azurite: Azurite) -> Iterator[str]:
    """A container name unique to this test, deleted afterwards if anything created it."""
    from azure.storage.blob import BlobServiceClient

    name = f"test-{uuid.uuid4().hex[:20]}"
    yield name
    with BlobServiceClient.from_connection_string(azurite.connection_string) as client:
        container = client.get_container_client(name)
        if container.exists():
            container.delete_container()


@pytest.fixture
def blob_settings(static_origin: StaticOrigin, azurite: Azurite, blob_container: str) -> DocumentationSettings:
    """Settings for the fixture origin with the index cache in a fresh Azurite container."""
    return fixture_settings(
        static_origin.url,
        {"AzureWebJobsStorage": azurite.connection_string},
        SearchIndexOverrides=ROOTED_OVERRIDE,
        Cache__Container=blob_container,
    )


@pytest.fixture
async def counting_store(blob_settings: DocumentationSettings) -> AsyncIterator[CountingStore]:
    """The real blob store for `blob_settings`, counting what it is asked."""
    opened = open_store(blob_settings)
    assert isinstance(opened, BlobStore)
    counting = CountingStore(opened)
    yield counting
    await counting.aclose()
