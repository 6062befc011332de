"""The dead-letter circuit breaker: stop a spout that gives up on too many records.

Prior art: Arroyo's ``DlqLimit`` (a share of invalid messages, or a run of consecutive
ones). After a bad deploy every record fails; without a limit the spout would move the
whole topic to the failed topic. With one, the spout stops consuming and commits nothing
further once the limit is passed, so the records stay where they are for after the fix.

Pure (time is an argument). Records are counted as the spout decides them: ``done`` for a
completed tree, ``given_up`` for a record sent to the failed topic (or dropped).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

__all__ = ["DeadLetterBreaker", "DeadLetterLimit"]


@dataclass(frozen=True, slots=True)
class DeadLetterLimit:
    """When to stop: any limit left ``None`` is not checked.

    - ``max_share``: more than this share (0..1) of the records decided in the last
      ``window_secs`` seconds were given up, counted once at least ``min_records`` were
      decided in that window;
    - ``max_consecutive``: this many records in a row were given up.
    """

    max_share: float | None = None
    window_secs: float = 60.0
    min_records: int = 100
    max_consecutive: int | None = None

    def __post_init__(self) -> None:
        if self.max_share is not None and not 0 <= self.max_share < 1:
            raise ValueError(f"DeadLetterLimit: max_share must be in [0, 1), "
                             f"got {self.max_share}")
        if self.window_secs <= 0 or self.min_records < 1:
            raise ValueError("DeadLetterLimit: window_secs must be > 0 and min_records >= 1")
        if self.max_consecutive is not None and self.max_consecutive < 1:
            raise ValueError(f"DeadLetterLimit: max_consecutive must be >= 1, "
                             f"got {self.max_consecutive}")
        if self.max_share is None and self.max_consecutive is None:
            raise ValueError("DeadLetterLimit: set max_share, max_consecutive or both")


class DeadLetterBreaker:
    """Counts decided records against a ``DeadLetterLimit``; trips at most once.

    Completed records only bump a counter (``done``): the window is kept as snapshots of
    the two counters taken at ``tick`` (about every second) and when a record is given
    up, so the success path stays one integer increment.
    """

    __slots__ = ("_run", "_run_done", "_snaps", "given_up", "limit", "ok", "tripped")

    def __init__(self, limit: DeadLetterLimit) -> None:
        self.limit = limit
        self.ok = 0
        self.given_up = 0
        self._snaps: deque[tuple[float, int, int]] = deque()  # (time, ok, given_up)
        self._run = 0
        self._run_done = -1
        self.tripped: str | None = None

    def done(self) -> None:
        """A record completed."""
        self.ok += 1

    def tick(self, now: float) -> None:
        """Snapshot the counters (at most 100 snapshots per window are kept)."""
        snaps, window = self._snaps, self.limit.window_secs
        if not snaps or now - snaps[-1][0] >= window / 100:
            snaps.append((now, self.ok, self.given_up))
        horizon = now - window
        while len(snaps) > 1 and snaps[1][0] <= horizon:
            snaps.popleft()

    def give_up(self, now: float) -> str | None:
        """A record was given up; returns what was passed (once, when it trips), else None."""
        self.given_up += 1
        if self.tripped is not None:
            return None
        limit = self.limit
        self._run = self._run + 1 if self._run_done == self.ok else 1
        self._run_done = self.ok
        if limit.max_consecutive is not None and self._run >= limit.max_consecutive:
            self.tripped = (f"{self._run} records in a row given up "
                            f"(limit {limit.max_consecutive} in a row)")
            return self.tripped
        if limit.max_share is None:
            return None
        self.tick(now)
        t0, ok0, bad0 = self._snaps[0]
        if t0 <= now - limit.window_secs:  # the last snapshot before the window
            bad = self.given_up - bad0
            total = bad + self.ok - ok0
        else:  # the breaker is younger than the window: count everything
            bad, total = self.given_up, self.given_up + self.ok
        if total >= limit.min_records and bad > limit.max_share * total:
            self.tripped = (f"{bad} of {total} records ({100 * bad / total:.0f} %) given up "
                            f"in the last {limit.window_secs:g} s (limit "
                            f"{100 * limit.max_share:.0f} % of at least {limit.min_records})")
            return self.tripped
        return None
