"""What becomes of the tuples a window holds: acked when they expire from their last
window, failed when an evaluation that held them raises (Storm's windowed acking)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from engine.tuples import Tuple
from engine.usercall import fail_on_error

__all__ = ["WindowAcks"]


class WindowAcks:
    """Acks and fails through ``out`` (in a stateful topology, a collector that holds the
    acks until the covering checkpoint commits). A tuple gets one outcome: one failed with
    its window is not acked again when it expires later."""

    def __init__(self, out: Any) -> None:
        self.out = out
        self.failed: set[int] = set()
        """Ids of tuples failed by an evaluation and still in the window."""

    def expire(self, items: Iterable[Tuple]) -> None:
        """``items`` left their last window: ack each (unless failed already)."""
        ack, failed = self.out.ack, self.failed
        if not failed:
            deque(map(ack, items), 0)  # every one acked, at C speed
            return
        for tup in items:
            if failed and id(tup) in failed:
                failed.discard(id(tup))  # failed with its window already: no second outcome
            else:
                ack(tup)

    def fail(self, tuples: Iterable[Tuple], exc: BaseException) -> None:
        """An evaluation holding ``tuples`` raised ``exc``: fail those not failed yet."""
        failed = self.failed
        fresh = [tup for tup in tuples if id(tup) not in failed]
        fail_on_error(self.out, exc, fresh)
        failed.update(id(tup) for tup in fresh)

    def unsettled(self, tuples: Iterable[Tuple]) -> list[Tuple]:
        """Those of ``tuples`` that got no outcome yet."""
        failed = self.failed
        return [tup for tup in tuples if id(tup) not in failed]
