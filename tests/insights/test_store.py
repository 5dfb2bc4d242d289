"""The usage store in Azurite (`shared.insights.store`): two instances' appends read back as one period, one key per
period whoever asks first, retention as deletes, and a blob read member by member."""

from __future__ import annotations

import gzip
from datetime import UTC, date, datetime, timedelta

from azure.storage.blob.aio import BlobServiceClient

from shared.insights.events import ReadEvent, line
from shared.insights.store import UsageStore, _unzipped
from tools.azurite import Azurite

AT = datetime(2026, 12, 6, 10, 30, tzinfo=UTC)


def store(azurite: Azurite, container: str, instance: str) -> UsageStore:
    client = BlobServiceClient.from_connection_string(azurite.connection_string)
    return UsageStore(client, container, source="test", instance=instance)


def event(at: datetime, location: str) -> ReadEvent:
    return ReadEvent(int(at.timestamp() * 1000), "p", "forge", None, location, "exact")


async def test_instances_append_apart_and_a_period_reads_back_whole(azurite: Azurite, blob_container: str) -> None:
    one, two = store(azurite, blob_container, "one"), store(azurite, blob_container, "two")
    try:
        await one.append([line(event(AT, "forge/a/"))], AT)
        await two.append([line(event(AT, "forge/b/")), line(event(AT, "forge/c/"))], AT)
        await one.append([line(event(AT + timedelta(days=1), "forge/d/"))], AT + timedelta(days=1))
        await one.append([line(event(AT - timedelta(days=3), "forge/old/"))], AT - timedelta(days=3))
        found, complete = await two.events(AT - timedelta(hours=1), AT + timedelta(days=2))
        assert complete
        assert sorted(e.location for e in found if isinstance(e, ReadEvent)) == [
            "forge/a/",
            "forge/b/",
            "forge/c/",
            "forge/d/",
        ]
        assert await one.key(7) == await two.key(7) != await two.key(8)  # one key per period, whoever asked first
        deleted = await one.purge(date(2026, 12, 6), 8)
        assert deleted == 2  # the day before the cutoff's events, period 7's key
        left, _ = await two.events(AT - timedelta(days=5), AT)
        assert [e.location for e in left if isinstance(e, ReadEvent)] == [
            "forge/a/",
            "forge/b/",
            "forge/c/",
        ]
    finally:
        await one.aclose()
        await two.aclose()


async def test_a_store_with_nothing_kept_yet_reads_empty(azurite: Azurite, blob_container: str) -> None:
    empty = store(azurite, blob_container, "one")
    try:
        assert await empty.events(AT - timedelta(days=7), AT) == ([], True)
        assert await empty.purge(date(2026, 12, 6), 3) == 0
    finally:
        await empty.aclose()


def test_a_blob_reads_member_by_member_up_to_an_unreadable_tail() -> None:
    blob = gzip.compress(b"one\n") + gzip.compress(b"two\n") + gzip.compress(b"three\n")[:-4]
    assert _unzipped(blob) == b"one\ntwo\n"


async def test_past_the_limit_the_most_recent_days_are_read_and_the_rest_said_missing(
    azurite: Azurite, blob_container: str
) -> None:
    one = store(azurite, blob_container, "one")
    try:
        for days in range(4):
            at = AT - timedelta(days=days)
            await one.append([line(event(at, f"forge/{days}-{n}/")) for n in range(3)], at)
        found, complete = await one.events(AT - timedelta(days=5), AT + timedelta(hours=1), limit=5)
        assert not complete and {e.location[6] for e in found if isinstance(e, ReadEvent)} == {"0", "1"}
    finally:
        await one.aclose()
