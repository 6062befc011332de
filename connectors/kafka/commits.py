"""When the Kafka spout commits (pure: time and counts are arguments).

A commit is due when something is ready to commit and either ``interval`` seconds passed
since the last commit, or ``every`` offsets became committable since then. The second rule
bounds what a crash re-reads by volume, not by time. With an interval alone, tens of
thousands of completed records went uncommitted: aiokafka's ``getmany`` does not return
while a group join is under way (no assignment yet: about 5 s on the test broker), so the
fetch loop, which also commits, found its first interval over when the join ended, with
nothing done yet to commit, and committed next an interval after that. A schedule that
only commits once something is ready commits at the first completed record instead.

After a failed commit the next try waits ``retry`` seconds (not a whole interval, and not
at once: a commit that fails during a rebalance fails again until it ends).

Prior art: storm-kafka-client commits every ``offset.commit.period.ms``; Kafka Streams
commits every ``commit.interval.ms`` and also on demand. What it leaves to others: the
order of commits and the offsets (``fetcher.py``, ``offsets.py``).
"""

from __future__ import annotations

__all__ = ["RETRY_SECS", "CommitSchedule"]

RETRY_SECS = 0.5
"""How long after a failed commit the next one may be tried."""


class CommitSchedule:
    """Says when a commit is due; told when one was made or failed."""

    __slots__ = ("_next", "_not_before", "every", "interval", "retry")

    def __init__(self, interval: float, every: int | None, now: float,
                 retry: float = RETRY_SECS) -> None:
        if interval <= 0 or retry < 0 or (every is not None and every < 1):
            raise ValueError(f"CommitSchedule: interval must be > 0, retry >= 0 and every "
                             f">= 1 or None, got {interval!r}, {retry!r}, {every!r}")
        self.interval = interval
        self.every = every
        self.retry = min(retry, interval)
        self._next = now + interval  # the interval's next commit
        self._not_before = now  # after a failure, no commit before this

    def due(self, now: float, ready: int) -> bool:
        """Whether to commit at ``now`` with ``ready`` offsets committable and not yet
        committed (summed over the partitions)."""
        if ready <= 0 or now < self._not_before:
            return False
        return now >= self._next or (self.every is not None and ready >= self.every)

    def committed(self, now: float) -> None:
        """A commit succeeded (or found nothing to send) at ``now``."""
        self._next = now + self.interval
        self._not_before = now

    def failed(self, now: float) -> None:
        """A commit failed at ``now``: try again ``retry`` seconds later."""
        self._not_before = now + self.retry
        self._next = min(self._next, self._not_before)
