"""Which executor queues are stuck: full with the same batch at their head for a while, or
served by a consumer that has been on one call for a while (hung).

A queue that is merely busy takes a batch now and then; one whose consumer hangs keeps
the same head, and its consumer the same call, long before the queue fills. Groupings and
outboxes ask ``stuck(i)`` only when a queue is full or a shuffle's rotation wraps, and
``hung(i, secs)`` only when a rotation wraps or a spout task reaches its limit, never per
tuple: the loop's clock is read there and nowhere else. Both are sampled: a head or a call
is timed from the first look that saw it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from engine.queues import BatchQueue

__all__ = ["STUCK_SECS", "QueueWatch"]

# A full queue whose head batch has not changed for this long counts as stuck; so does a
# queue whose consumer has been on one call for this long.
STUCK_SECS = 1.0


class QueueWatch:
    """Progress of every executor queue of a topology, and of its consumer's current call,
    looked at when asked."""

    __slots__ = ("_call", "_call_since", "_calls", "_head", "_since", "queues", "secs")

    def __init__(self, queues: list[BatchQueue], secs: float = STUCK_SECS) -> None:
        self.queues = queues
        self.secs = secs
        self._head: list[Any] = [None] * len(queues)
        self._since = [0.0] * len(queues)
        self._calls: list[Callable[[], object] | None] = [None] * len(queues)
        self._call: list[object] = [None] * len(queues)
        self._call_since = [0.0] * len(queues)

    def consumer(self, i: int, current: Callable[[], object]) -> None:
        """Queue ``i``'s consumer says what call it is on with ``current()`` (an object the
        same for the whole call, ``None`` between calls)."""
        self._calls[i] = current

    def stuck(self, i: int) -> bool:
        """True when queue ``i``'s consumer is hung (``hung(i, secs)``) or the queue is full
        and took no batch for ``secs`` (as far as seen)."""
        if self.hung(i, self.secs):
            return True
        queue = self.queues[i]
        if not queue.full():
            return False
        now = asyncio.get_running_loop().time()
        head = queue.head()
        if head is not self._head[i]:
            self._head[i], self._since[i] = head, now
            return False
        return now - self._since[i] >= self.secs

    def hung(self, i: int, secs: float) -> bool:
        """True when queue ``i``'s consumer has been on one call for ``secs`` (as far as
        seen); False for a consumer that did not say (``consumer``)."""
        current = self._calls[i]
        call = None if current is None else current()
        if call is None:
            self._call[i] = None
            return False
        now = asyncio.get_running_loop().time()
        if call is not self._call[i]:
            self._call[i], self._call_since[i] = call, now
            return False
        return now - self._call_since[i] >= secs
