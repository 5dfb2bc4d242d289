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

    def malloc_trim(self, pad: int) -> int:
        raise AssertionError("not trimmed here")


@pytest.fixture
def libc() -> RecordingLibc:
    return RecordingLibc()


@pytest.fixture
def heap(libc: RecordingLibc) -> memory.Heap:
    """A fresh heap (the threshold at its default) over the recording library."""
    return memory.Heap(lambda: libc)


def thresholds(libc: RecordingLibc) -> list[int]:
    return [value for option, value in libc.calls if option == memory.M_MMAP_THRESHOLD]


def test_the_threshold_rises_to_twice_the_arrays_and_never_falls(heap: memory.Heap, libc: RecordingLibc) -> None:
    heap.heap_for(64 * 1024)  # small arrays: the heap already takes them
    heap.heap_for(350 * 1024)
    heap.heap_for(100 * 1024)
    heap.heap_for(500 * 1024)
    heap.tune()
    assert thresholds(libc) == [700 * 1024, 1000 * 1024, 1000 * 1024]
    trims = [value for option, value in libc.calls if option == memory.M_TRIM_THRESHOLD]
    assert trims == [1400 * 1024, 2000 * 1024]  # freed arrays at the top of the heap are kept for the next query


def test_the_threshold_stops_at_the_largest_glibc_takes(heap: memory.Heap, libc: RecordingLibc) -> None:
    heap.heap_for(1 << 30)
    heap.heap_for(1 << 31)
    assert thresholds(libc) == [memory.MMAP_THRESHOLD_MAX]


def test_without_glibc_nothing_is_asked() -> None:
    without = memory.Heap(lambda: None)
    without.heap_for(1 << 20)  # no error, no call
    assert without.threshold == memory.MMAP_THRESHOLD


def test_the_real_glibc_takes_it() -> None:
    real = memory.Heap()  # this process's glibc, the threshold at its default
    real.heap_for(memory.MMAP_THRESHOLD)  # twice the default: a real mallopt call on this machine
    assert real.threshold == 2 * memory.MMAP_THRESHOLD or memory.glibc() is None
