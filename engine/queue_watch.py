"""Which executor queues are stuck: full, with the same batch at their head for a while.

A queue that is merely busy takes a batch now and then; one whose consumer hangs keeps
the same head. Groupings and outboxes ask ``stuck(i)`` only when a queue is full (once
per rotation of a shuffle, or while a producer waits), never per tuple: the loop's clock
is read there and nowhere else.
"""

from __future__ import annotations

import asyncio
from typing import Any

from engine.queues import BatchQueue

__all__ = ["STUCK_SECS", "QueueWatch"]

# A full queue whose head batch has not changed for this long counts as stuck.
STUCK_SECS = 1.0


class QueueWatch:
    """Progress of every executor queue of a topology, looked at when asked."""

    __slots__ = ("_head", "_since", "queues", "secs")

    def __init__(self, queues: list[BatchQueue], secs: float = STUCK_SECS) -> None:
        self.queues = queues
        self.secs = secs
        self._head: list[Any] = [None] * len(queues)
        self._since = [0.0] * len(queues)

    def stuck(self, i: int) -> bool:
        """True when queue ``i`` is full and took no batch for ``secs`` (as far as seen)."""
        queue = self.queues[i]
        if not queue.full():
            return False
        now = asyncio.get_running_loop().time()
        head = queue.head()
        if head is not self._head[i]:
            self._head[i], self._since[i] = head, now
            return False
        return now - self._since[i] >= self.secs
