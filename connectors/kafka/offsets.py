"""Per-partition offset bookkeeping for the Kafka spout (pure: no I/O, no clock).

Prior art: storm-kafka-client's ``OffsetManager``. There, emitted and acked offsets live in
two sorted sets and ``findNextCommitOffset`` walks the acked ones upward from the committed
offset, skipping a gap only where the missing offset was never emitted. Here records enter
the tracker in fetch order, so a deque of tracked offsets plus the set still in flight gives
the same answer in amortised O(1) per record:

- every offset below ``committable`` was either done (acked, or finally failed and written
  to the failed topic) or never fetched because the log has no record there (compaction,
  transaction markers): gaps never stall a commit;
- ``committable`` never moves backwards, and an offset below it is never tracked again, so an
  already-committed offset is never re-emitted.

What it leaves to others: retries (``retry.py``), the consumer and the commit call itself
(``spout.py``).
"""

from __future__ import annotations

from collections import deque

__all__ = ["PartitionOffsets"]


class PartitionOffsets:
    """Offsets of one partition between the last commit and the fetch position.

    ``committable`` is Kafka's next-offset commit value: the first offset not yet done, or
    the fetch position when nothing is outstanding.
    """

    __slots__ = ("_fetched_upto", "_inflight", "_order", "committed")

    def __init__(self, start: int) -> None:
        if start < 0:
            raise ValueError(f"start offset must be >= 0, got {start}")
        #: last offset value committed to the broker (next-offset semantics)
        self.committed = start
        self._fetched_upto = start  # every offset below it was fetched or does not exist
        self._order: deque[int] = deque()  # tracked offsets, ascending, not yet committable
        self._inflight: set[int] = set()  # tracked offsets not yet done

    def track(self, offset: int) -> bool:
        """Record that ``offset`` was fetched and will be emitted.

        Returns False (and tracks nothing) for an offset already tracked or below the fetch
        position: a duplicate from a re-fetch must not be emitted twice.
        """
        if offset < self._fetched_upto:
            return False
        self._order.append(offset)
        self._inflight.add(offset)
        self._fetched_upto = offset + 1
        return True

    def track_many(self, offsets: list[int]) -> None:
        """``track`` for one fetched batch: ascending offsets, all at or above
        ``fetch_position`` (the caller drops a re-fetch's overlap first)."""
        if not offsets:
            return
        if offsets[0] < self._fetched_upto or offsets[-1] < offsets[0]:
            raise ValueError(f"track_many needs ascending offsets from {self._fetched_upto}, "
                             f"got {offsets[0]}..{offsets[-1]}")
        self._order.extend(offsets)
        self._inflight.update(offsets)
        self._fetched_upto = offsets[-1] + 1

    def fetched_upto(self, position: int) -> None:
        """Every offset below ``position`` was fetched or does not exist (trailing gaps)."""
        if position > self._fetched_upto:
            self._fetched_upto = position

    def done(self, offset: int) -> bool:
        """Mark ``offset`` acked or finally failed; False if it is not in flight."""
        if not self.done_unordered(offset):
            return False
        self.trim()
        return True

    def done_unordered(self, offset: int) -> bool:
        """``done`` without moving the commit point: call ``trim`` after a run of these."""
        try:
            self._inflight.remove(offset)
        except KeyError:
            return False
        return True

    def done_all(self, offsets: list[int]) -> None:
        """``done_unordered`` for each of ``offsets`` (all in flight), in one call."""
        self._inflight.difference_update(offsets)

    def trim(self) -> None:
        """Move the commit point past every offset done at its head."""
        order, inflight = self._order, self._inflight
        while order and order[0] not in inflight:
            order.popleft()

    def is_inflight(self, offset: int) -> bool:
        """Whether ``offset`` is tracked and not yet done."""
        return offset in self._inflight

    @property
    def committable(self) -> int:
        """The offset to commit now: first not-done offset, else the fetch position."""
        return self._order[0] if self._order else self._fetched_upto

    @property
    def fetch_position(self) -> int:
        """The next offset the fetcher should read."""
        return self._fetched_upto

    @property
    def uncommitted(self) -> int:
        """Tracked records not yet committable (what the per-partition cap bounds)."""
        return len(self._order)

    @property
    def inflight(self) -> int:
        """Tracked records not yet done."""
        return len(self._inflight)

    def needs_commit(self) -> bool:
        """Whether ``committable`` moved past the last commit."""
        return self.committable > self.committed

    def mark_committed(self, offset: int) -> None:
        """Record that the broker holds ``offset`` (never moves backwards)."""
        self.committed = max(self.committed, offset)

    def __repr__(self) -> str:
        return (f"PartitionOffsets(committed={self.committed}, committable={self.committable}, "
                f"inflight={len(self._inflight)}, uncommitted={len(self._order)})")
