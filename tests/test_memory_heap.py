"""A search's own arrays stay on the heap (`memory.heap_for`): the mmap threshold rises to cover them, never falls,
never passes glibc's maximum, and `tune` keeps what was raised; the trim threshold rises with it."""

from __future__ import annotations

import pytest

from shared import memory


class RecordingLibc:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def mallopt(self, option: int, value: int) -> int:
        self.calls.append((option, value))
        return 1


@pytest.fixture
def libc(monkeypatch: pytest.MonkeyPatch) -> RecordingLibc:
    recording = RecordingLibc()
    monkeypatch.setattr(memory, "_libc", lambda: recording)
    monkeypatch.setattr(memory, "_threshold", [memory.MMAP_THRESHOLD])
    return recording


def thresholds(libc: RecordingLibc) -> list[int]:
    return [value for option, value in libc.calls if option == memory.M_MMAP_THRESHOLD]


def test_the_threshold_rises_to_twice_the_arrays_and_never_falls(libc: RecordingLibc) -> None:
    memory.heap_for(64 * 1024)  # small arrays: the heap already takes them
    memory.heap_for(350 * 1024)
    memory.heap_for(100 * 1024)
    memory.heap_for(500 * 1024)
    memory.tune()
    assert thresholds(libc) == [700 * 1024, 1000 * 1024, 1000 * 1024]
    trims = [value for option, value in libc.calls if option == memory.M_TRIM_THRESHOLD]
    assert trims == [1400 * 1024, 2000 * 1024]  # freed arrays at the top of the heap are kept for the next query


def test_the_threshold_stops_at_the_largest_glibc_takes(libc: RecordingLibc) -> None:
    memory.heap_for(1 << 30)
    memory.heap_for(1 << 31)
    assert thresholds(libc) == [memory.MMAP_THRESHOLD_MAX]


def test_without_glibc_nothing_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "_libc", lambda: None)
    memory.heap_for(1 << 20)  # no error, no call


def test_the_real_glibc_takes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "_threshold", [memory.MMAP_THRESHOLD])
    memory.heap_for(memory.MMAP_THRESHOLD)  # twice the default: a real mallopt call on this machine
