"""Counters per task and the latency reservoir behind ``LocalCluster.stats``."""

from __future__ import annotations

from collections import deque

__all__ = ["LatencyReservoir", "TaskStats"]


_COUNTERS = ("acked", "emitted", "errors", "executed", "failed")


class TaskStats:
    """Monotonic counters of one task (plain ints on the hot path)."""

    __slots__ = _COUNTERS

    def __init__(self) -> None:
        self.emitted = 0
        self.executed = 0
        self.acked = 0
        self.failed = 0
        self.errors = 0

    def as_dict(self) -> dict[str, int]:
        """The counters by name."""
        return {name: getattr(self, name) for name in _COUNTERS}


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
