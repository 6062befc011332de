"""What the replay job's writing tasks saw, merged across tasks into one ``ReplaySummary``.

Each writing task fills a ``Tally`` for its rows; tallies add up in any order and grouping
(counts add, per-key counts add, samples keep the smallest ``SAMPLE_ROWS`` by position),
so the merged tally does not depend on how rows were split into tasks. Plain Python: no
Spark or Kafka here.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from connectors.spark.summary import SAMPLE_ROWS, Malformed, Planned, ReplaySummary

__all__ = ["Fate", "Tally"]


class Fate(IntEnum):
    """What the job does with one failed-topic record; each record has exactly one."""

    MALFORMED = 0
    DUPLICATE = 1
    OVER_ATTEMPTS = 2
    TRUNCATED = 3
    FILTERED = 4
    REPLAY = 5


_SUMMARY_FIELDS = {Fate.MALFORMED: "malformed", Fate.DUPLICATE: "duplicates",
                   Fate.OVER_ATTEMPTS: "over_attempts", Fate.TRUNCATED: "truncated",
                   Fate.FILTERED: "filtered", Fate.REPLAY: "replayed"}


def _smallest(rows: list[tuple], more: list[tuple]) -> list[tuple]:
    return heapq.nsmallest(SAMPLE_ROWS, rows + more) if more else rows


@dataclass(slots=True)
class Tally:
    """Counts per ``Fate``, replays per reason and per (topic, target), and samples.

    ``malformed`` holds ``(failed_partition, failed_offset, error)`` and ``planned`` holds
    ``(topic, partition, offset, target, attempts, reason)``, each the ``SAMPLE_ROWS``
    smallest seen.
    """

    fates: dict[int, int] = field(default_factory=dict)
    by_reason: dict[str, int] = field(default_factory=dict)
    by_topic: dict[tuple[str, str], int] = field(default_factory=dict)
    malformed: list[tuple] = field(default_factory=list)
    planned: list[tuple] = field(default_factory=list)

    def count(self, fate: int, n: int) -> None:
        """Add ``n`` records of ``fate``."""
        if n:
            self.fates[fate] = self.fates.get(fate, 0) + n

    def sample(self, malformed: Sequence[tuple] = (), planned: Sequence[tuple] = ()) -> None:
        """Offer sample rows; only the smallest ``SAMPLE_ROWS`` of each kind are kept."""
        self.malformed = _smallest(self.malformed, list(malformed))
        self.planned = _smallest(self.planned, list(planned))

    def add(self, other: Tally) -> Tally:
        """Merge ``other`` into this tally and return it."""
        for fate, n in other.fates.items():
            self.count(fate, n)
        for reason, n in other.by_reason.items():
            self.by_reason[reason] = self.by_reason.get(reason, 0) + n
        for route, n in other.by_topic.items():
            self.by_topic[route] = self.by_topic.get(route, 0) + n
        self.sample(other.malformed, other.planned)
        return self

    def fill(self, summary: ReplaySummary) -> None:
        """Set ``summary``'s counts, breakdowns and samples from this tally."""
        summary.read = sum(self.fates.values())
        for fate, name in _SUMMARY_FIELDS.items():
            setattr(summary, name, self.fates.get(fate, 0))
        summary.by_reason = dict(self.by_reason)
        summary.by_topic = dict(self.by_topic)
        summary.malformed_samples = [Malformed(*row) for row in self.malformed]
        summary.planned_samples = [Planned(*row) for row in self.planned]
