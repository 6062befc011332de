"""Counters per task and the latency reservoir behind ``LocalCluster.stats``."""

from __future__ import annotations

from collections import deque

__all__ = ["LatencyReservoir", "TaskStats"]


_COUNTERS = ("acked", "emitted", "errors", "executed", "failed")
# A spout's fails by reason kind; their sum is ``failed``.
_FAIL_KINDS = ("failed_error", "failed_explicit", "failed_timeout")


class TaskStats:
    """Monotonic counters of one task (plain ints on the hot path)."""

    __slots__ = _COUNTERS + _FAIL_KINDS

    def __init__(self) -> None:
        self.emitted = 0
        self.executed = 0
        self.acked = 0
        self.failed = 0
        self.errors = 0
        self.failed_error = 0
        self.failed_explicit = 0
        self.failed_timeout = 0

    def count_fail(self, kind: str) -> None:
        """One tree of this spout task failed, for a reason of ``kind``."""
        self.failed += 1
        if kind == "timeout":
            self.failed_timeout += 1
        elif kind == "error":
            self.failed_error += 1
        else:
            self.failed_explicit += 1

    def as_dict(self, spout: bool = False) -> dict[str, int]:
        """The counters by name; a spout's include its fails by kind."""
        names = _COUNTERS + _FAIL_KINDS if spout else _COUNTERS
        return {name: getattr(self, name) for name in names}


class LatencyReservoir:
    """The most recent ``size`` complete latencies (seconds), for percentiles."""

    __slots__ = ("_samples", "count")

    def __init__(self, size: int = 4096) -> None:
        self._samples: deque[float] = deque(maxlen=size)
        self.count = 0

    def add(self, seconds: float) -> None:
        """Record one complete latency."""
        self._samples.append(seconds)
        self.count += 1

    def percentiles_ms(self, *quantiles: float) -> list[float | None]:
        """The given quantiles (0..1) in milliseconds, ``None`` with no samples."""
        if not self._samples:
            return [None for _ in quantiles]
        ordered = sorted(self._samples)
        last = len(ordered) - 1
        return [round(ordered[min(last, int(q * len(ordered)))] * 1000, 3) for q in quantiles]

    def clear(self) -> None:
        """Forget the samples (the count stays)."""
        self._samples.clear()
