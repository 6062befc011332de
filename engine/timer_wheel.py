"""A hashed timer wheel (pure: time is an argument, nothing here awaits or reads a clock).

Guarantee: a key added at time ``t`` is returned by the first ``advance(now)`` with
``now >= deadline``, where ``deadline`` lies in ``[t + timeout, t + timeout + 2 * tick)``;
never earlier. Called every ``tick``, a key therefore comes out before
``t + timeout + 3 * tick`` (0.6 s past the timeout with the default tick).

Insert is O(1) (append to a bucket); cancel is O(1) and lazy: the owner forgets the key in
its own map and skips it when it comes out. ``advance`` costs O(buckets passed + keys
expired). Prior art: Varghese & Lauck's hashed wheel, Storm's ``RotatingMap`` (which trades
precision for the same O(1): a timeout lands between T and 2T there).
"""

from __future__ import annotations

from math import ceil, floor
from typing import Generic, TypeVar

__all__ = ["DEFAULT_TICK_SECS", "TimerWheel"]

K = TypeVar("K")
"""The key type: the acker uses 64-bit root ids."""

DEFAULT_TICK_SECS = 0.2
MAX_BUCKETS = 65536


class TimerWheel(Generic[K]):
    """Buckets of keys indexed by deadline tick modulo the wheel size."""

    __slots__ = ("_buckets", "_current", "_due", "_n", "_span", "tick", "timeout")

    def __init__(self, timeout: float, now: float, tick: float | None = None) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0, got {timeout!r}")
        self.timeout = timeout
        self.tick = tick if tick is not None else max(DEFAULT_TICK_SECS, timeout / MAX_BUCKETS)
        # deadline = tick(t) + span ticks, so deadline * tick > t + timeout.
        self._span = ceil(timeout / self.tick) + 1
        self._n = self._span + 1
        self._buckets: list[list[K]] = [[] for _ in range(self._n)]
        self._current = floor(now / self.tick)
        self._due: list[K] = []

    def add(self, key: K, now: float) -> None:
        """Schedule ``key`` to come out ``timeout`` after ``now``."""
        at = floor(now / self.tick)
        if at > self._current:
            self._roll(at)
        deadline = at + self._span
        if deadline <= self._current:  # ``now`` lies far in the past: already due
            self._due.append(key)
        else:
            self._buckets[deadline % self._n].append(key)

    def bucket(self, now: float) -> list[K]:
        """The list ``add(key, now)`` appends to: for callers adding many keys at one ``now``.

        Valid until the next ``add`` or ``advance`` with a later ``now``.
        """
        at = floor(now / self.tick)
        if at > self._current:
            self._roll(at)
        deadline = at + self._span
        return self._due if deadline <= self._current else self._buckets[deadline % self._n]

    def advance(self, now: float) -> list[K]:
        """Every key whose deadline tick is at or before ``now``'s, each once per ``add``."""
        self._roll(floor(now / self.tick))
        due, self._due = self._due, []
        return due

    def __len__(self) -> int:
        """Keys still in the wheel, including lazily cancelled ones."""
        return len(self._due) + sum(len(b) for b in self._buckets)

    def _roll(self, target: int) -> None:
        if target <= self._current:
            return
        steps = min(target - self._current, self._n)
        buckets, n = self._buckets, self._n
        for k in range(target - steps + 1, target + 1):
            bucket = buckets[k % n]
            if bucket:
                buckets[k % n] = []
                if self._due:
                    self._due.extend(bucket)
                else:
                    self._due = bucket
        self._current = target
