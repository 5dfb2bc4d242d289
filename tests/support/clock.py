"""A clock the test moves by hand, for what schedules by a clock (store checks, retries, cooldowns)."""

from __future__ import annotations


class Clock:
    """Monotonic seconds that change only when a test sets `now`."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
