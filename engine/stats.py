"""Counters per task, the latency reservoir behind ``LocalCluster.stats``, per-batch
execute times of bolt executors and each task's most recent errors."""

from __future__ import annotations

import time
import traceback
from bisect import bisect_left
from collections import deque
from typing import Any

__all__ = ["LATENCY_BUCKETS", "BatchTimes", "LatencyHistogram", "LatencyReservoir",
           "RecentErrors", "TaskStats"]

# Upper bounds (seconds) of the latency histograms' buckets, 10 us to 30 s in steps of 1-5-10
# (a bucket costs a series per component in every scrape); one more bucket holds
# everything above. Fixed, so that histograms of several processes add up.
LATENCY_BUCKETS = (0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5,
                   1.0, 5.0, 30.0)


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


class LatencyHistogram:
    """Latencies counted into the fixed ``LATENCY_BUCKETS`` (one count per bucket, not
    cumulative; the last bucket is everything above 30 s). Constant memory, one bisect
    per ``add``."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts = [0] * (len(LATENCY_BUCKETS) + 1)

    def add(self, seconds: float, weight: int = 1) -> None:
        """Count ``weight`` latencies of ``seconds`` (a bucket holds values <= its bound)."""
        self.counts[bisect_left(LATENCY_BUCKETS, seconds)] += weight


class LatencyReservoir:
    """The most recent ``size`` latencies (seconds), for percentiles; ``count``, ``total``
    (seconds) and ``histogram`` (when kept) cover every latency ever added."""

    __slots__ = ("_samples", "count", "histogram", "total")

    def __init__(self, size: int = 4096, histogram: bool = True) -> None:
        self._samples: deque[float] = deque(maxlen=size)
        self.count = 0
        self.total = 0.0
        self.histogram: LatencyHistogram | None = LatencyHistogram() if histogram else None

    def add(self, seconds: float) -> None:
        """Record one latency."""
        self._samples.append(seconds)
        self.count += 1
        self.total += seconds
        if self.histogram is not None:
            self.histogram.add(seconds)

    def percentiles_ms(self, *quantiles: float) -> list[float | None]:
        """The given quantiles (0..1) in milliseconds, ``None`` with no samples."""
        if not self._samples:
            return [None for _ in quantiles]
        ordered = sorted(self._samples)
        last = len(ordered) - 1
        return [round(ordered[min(last, int(q * len(ordered)))] * 1000, 3) for q in quantiles]

    def values(self) -> list[float]:
        """The samples held now (seconds), oldest first."""
        return list(self._samples)

    def clear(self) -> None:
        """Forget the samples (the count stays)."""
        self._samples.clear()


class BatchTimes:
    """Where a bolt executor's time goes, measured once per batch, never per tuple.

    ``execute_secs`` sums the time spent executing batches (Storm's executed x execute
    latency, the numerator of capacity); ``process_secs`` sums, over every tuple, the time
    from its batch being taken to the end of that batch, when its acks leave. The
    reservoirs hold per-batch samples: the mean execute time per tuple and the batch time.
    The histograms count every tuple: its batch's mean execute time, and its batch time.
    """

    __slots__ = ("batches", "clock", "execute", "execute_histogram", "execute_secs",
                 "process", "process_histogram", "process_secs", "tuples")

    def __init__(self, size: int = 64) -> None:
        self.clock = time.perf_counter
        self.batches = 0
        self.tuples = 0
        self.execute_secs = 0.0
        self.process_secs = 0.0
        # Per-batch samples: the histograms below count per tuple instead.
        self.execute = LatencyReservoir(size, histogram=False)
        self.process = LatencyReservoir(size, histogram=False)
        self.execute_histogram = LatencyHistogram()
        self.process_histogram = LatencyHistogram()

    def add(self, n: int, started: float, ended: float) -> None:
        """Record one batch of ``n`` tuples executed from ``started`` to ``ended``."""
        if n <= 0:
            return
        spent = ended - started
        self.batches += 1
        self.tuples += n
        self.execute_secs += spent
        self.process_secs += spent * n
        self.execute.add(spent / n)
        self.process.add(spent)
        self.execute_histogram.add(spent / n, n)
        self.process_histogram.add(spent, n)


class RecentErrors:
    """The last ``size`` errors a task reported: wall time, task, the exception itself.

    Tracebacks are formatted when read (``entries``), not when an error happens.
    """

    __slots__ = ("_items",)

    def __init__(self, size: int = 10) -> None:
        self._items: deque[tuple[float, int, BaseException]] = deque(maxlen=size)

    def add(self, task_id: int, exc: BaseException) -> None:
        """Remember ``exc`` as reported by ``task_id`` now."""
        self._items.append((time.time(), task_id, exc))

    def __len__(self) -> int:
        return len(self._items)

    def entries(self, detail: bool = True) -> list[dict[str, Any]]:
        """Oldest first: ``time`` (epoch seconds), ``task``, ``error`` and ``traceback``.

        ``detail`` False leaves the exception's text out, for readers who may not see it:
        ``error`` is its type alone and ``traceback`` None.
        """
        out: list[dict[str, Any]] = []
        for at, task_id, exc in self._items:
            name = type(exc).__name__
            if not detail:
                out.append({"time": at, "task": task_id, "error": name, "traceback": None})
                continue
            frames = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-5)
            out.append({"time": at, "task": task_id, "error": f"{name}: {exc}",
                        "traceback": "".join(frames).rstrip()})
        return out
