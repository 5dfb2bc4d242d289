"""Hand freed heap back to the operating system after bursts of allocation (glibc; a no-op elsewhere).

Embedding a site allocates and frees activations batch after batch and tokenizes every entry at once; building a
ranker allocates and drops its working lists. glibc keeps what was freed as heap for later use, so without help
the process stays at its high-water mark: measured over the sample corpus, the model plus every site's vectors
need 132 MB, yet the process kept 264 MB after embedding them. Standard glibc controls fix that, and keep a
search's own arrays cheap:

- `tune()`: a fixed mmap threshold (256 KB). glibc otherwise raises it after each large free, so the next
  batch's activations come from the heap and fragment it; with it fixed they are mapped and unmapped whole.
  And at most `ARENAS` heaps: glibc otherwise gives threads up to eight per core, each keeping its own freed
  memory (loads, parses and queries run on worker threads), which left a serving instance's memory 25 MB higher
  after 2,000 requests than before them and different from one run to the next;
- `trim()`: `malloc_trim(0)` after bulk work returns the free heap at once (a few milliseconds);
- `heap_for(size)`: the threshold raised so a search's own arrays (one float per entry of every site searched,
  several per query) stay on the heap. Mapped, each was a system call and a page fault per 4 KB, zeroed, on every
  query: at eight times the sample corpus (44,000 entries, 350 KB arrays) that made the lexical part of a search
  1.5 ms in isolation and 4 to 5 ms in the service; with them on the heap it took 1.5 ms in the service too.

The three act on the process's heap (`HEAP`); a `Heap` over another C library (`Libc`) is how tests watch them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from collections.abc import Callable
from functools import cache
from typing import Protocol

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 256 * 1024
M_ARENA_MAX = -8
ARENAS = 2
"""Heaps glibc may keep for the process's threads (the standard advice for Python services: `MALLOC_ARENA_MAX=2`)."""


class Libc(Protocol):
    """What the heap controls call of the C library."""

    def mallopt(self, option: int, value: int) -> int: ...

    def malloc_trim(self, pad: int) -> int: ...


@cache
def glibc() -> Libc | None:
    """This process's glibc, or None where the C library is another (musl, macOS): nothing to do there."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    if libc is None or not hasattr(libc, "malloc_trim") or not hasattr(libc, "mallopt"):
        return None
    return libc


MMAP_THRESHOLD_MAX = 32 * 1024 * 1024
"""glibc's largest mmap threshold on 64-bit systems."""


class Heap:
    """The heap controls over the C library `libc` returns (looked up on first use; None: every call a no-op)."""

    def __init__(self, libc: Callable[[], Libc | None] = glibc) -> None:
        self._libc = libc
        self.threshold = MMAP_THRESHOLD
        """The threshold set last (`tune`, `heap_for`): it only ever rises from `MMAP_THRESHOLD`."""

    def tune(self) -> None:
        """Fix the mmap threshold, so large temporary buffers go back to the system when freed, and cap the heaps
        threads get (it holds for threads started afterwards: call it first)."""
        libc = self._libc()
        if libc is not None and not libc.mallopt(M_MMAP_THRESHOLD, self.threshold):
            log.info("could not set the mmap threshold")
        if libc is not None and not libc.mallopt(M_ARENA_MAX, ARENAS):
            log.info("could not cap the heaps")

    def heap_for(self, size: int) -> None:
        """Keep allocations of up to twice `size` bytes on the heap (the mmap threshold raised, never lowered, and
        at most glibc's maximum): for arrays made and freed on every request, which mapped would fault in every
        page each time. Bulk work's larger buffers (a batch's activations: several MB) are still mapped and
        unmapped whole."""
        wanted = min(max(2 * size, MMAP_THRESHOLD), MMAP_THRESHOLD_MAX)
        libc = self._libc()
        if libc is None or wanted <= self.threshold:
            return
        # The top of the heap is handed back once this much of it is free: kept below the arrays' size, every query
        # would give their pages back on free and fault them in again on the next.
        if libc.mallopt(M_MMAP_THRESHOLD, wanted) and libc.mallopt(M_TRIM_THRESHOLD, 2 * wanted):
            self.threshold = wanted
        else:
            log.info("could not raise the mmap threshold")

    def trim(self) -> None:
        """Return the free heap to the system."""
        libc = self._libc()
        if libc is not None:
            libc.malloc_trim(0)


HEAP = Heap()
"""The process's heap: `tune`, `heap_for` and `trim` act on it."""
tune = HEAP.tune
heap_for = HEAP.heap_for
trim = HEAP.trim


CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
"""Where a container's memory limit is (cgroup v2, then v1): a Flex Consumption instance's size shows there."""
UNLIMITED = 1 << 60
"""A cgroup v1 "no limit" is a huge number rather than `max`."""


@cache
def limit_mb(paths: tuple[str, ...] = CGROUP_LIMITS) -> int | None:
    """The process's memory limit in MB, or None when there is none (or it cannot be read); read once: health asks
    for it without doing I/O, and an instance's size does not change while it runs."""
    for path in paths:
        try:
            with open(path, encoding="ascii") as limit:
                value = limit.read().strip()
        except OSError:
            continue
        if value == "max" or not value.isdigit() or int(value) >= UNLIMITED:
            return None
        return int(value) // (1024 * 1024)
    return None
