"""Retry schedule for failed Kafka records (pure: time is an argument).

Prior art: storm-kafka-client's ``KafkaSpoutRetryExponentialBackoff``: the n-th failure of a
record retries after ``initial * 2**(n-1)`` seconds, capped at ``maximum``, and scheduling is
refused once a record failed more than ``max_retries`` times. What Storm then does (ack and
drop) is the spout's business; ours writes the record to the failed topic.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["Backoff", "RetryQueue"]

K = TypeVar("K", bound=Hashable)
"""The retried item's key (the spout uses ``(topic, partition, offset)``)."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff: failure ``n`` (1-based) waits ``min(initial * 2**(n-1), maximum)``."""

    initial: float = 0.5
    maximum: float = 30.0
    max_retries: int = 3

    def __post_init__(self) -> None:
        if self.initial < 0 or self.maximum < self.initial:
            raise ValueError(f"retry_backoff_secs must be (initial, maximum) with "
                             f"0 <= initial <= maximum, got ({self.initial}, {self.maximum})")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")

    def delay(self, failures: int) -> float | None:
        """Seconds to wait after the ``failures``-th failure; None when retries are used up."""
        if failures < 1:
            raise ValueError(f"failures must be >= 1, got {failures}")
        if failures > self.max_retries:
            return None
        # min() on the exponent first keeps 2**n from growing without bound.
        return min(self.initial * 2 ** min(failures - 1, 64), self.maximum)


@dataclass(slots=True)
class RetryQueue(Generic[K]):
    """Keys waiting for their retry time; each key is scheduled at most once at a time.

    Guarantee: ``pop_ready(now)`` returns every key whose time is ``<= now``, earliest first,
    each once; a ``discard``-ed key is never returned.
    """

    _due: dict[K, float] = field(default_factory=dict)
    _heap: list[tuple[float, int, K]] = field(default_factory=list)
    _seq: itertools.count = field(default_factory=itertools.count)

    def schedule(self, key: K, at: float) -> None:
        """Make ``key`` ready at time ``at`` (replacing an earlier schedule of it)."""
        self._due[key] = at
        heapq.heappush(self._heap, (at, next(self._seq), key))

    def discard(self, key: K) -> None:
        """Forget ``key`` if it is scheduled."""
        self._due.pop(key, None)

    def pop_ready(self, now: float) -> list[K]:
        """Keys due at or before ``now``, in due order."""
        ready: list[K] = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            at, _, key = heapq.heappop(heap)
            if self._due.get(key) == at:  # else discarded or rescheduled: a stale entry
                del self._due[key]
                ready.append(key)
        return ready

    def next_due(self) -> float | None:
        """The earliest due time still scheduled, or None."""
        heap = self._heap
        while heap and self._due.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def __len__(self) -> int:
        return len(self._due)

    def __contains__(self, key: object) -> bool:
        return key in self._due
