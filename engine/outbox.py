"""The outbox: an executor's outgoing batches, and the three ways they are flushed.

Collectors append emitted tuples to ``bufs`` (one list per destination executor) and acker
messages to ``acker_bufs``/``acker_acks`` (per acker); nothing there awaits. The batches
leave in one of three ways, and only here:

1. **Awaited** (``flush``): a bolt executor after each batch of ``execute`` calls. Acker
   messages go at once; tuples wait while a destination queue is full. This is the
   back-pressure: a slow consumer slows its producers.
2. **Spout's polling** (``flush_polling``): a spout executor after each round of
   ``next_tuple``. Like the awaited flush, but while a destination is full it keeps
   handling the acks, fails and timeouts arriving in its own inbox, so that a fail never
   waits for downstream room.
3. **Immediate** (``schedule_flush``): an emit, ack or fail made outside ``execute`` and
   ``next_tuple`` (from the user's own task, timer or callback) schedules a flush with
   ``loop.call_soon``. That flush uses ``put_nowait`` and **does not respect the queue
   bound**: code that emits from its own task in a loop must yield to the event loop
   (``await asyncio.sleep(0)``) or it can grow a destination queue without limit. While
   the executor is running user code (``busy``) the scheduled flush does nothing: the
   executor flushes at the end of its batch.

Acker messages (INIT, FAIL, RESET, coalesced ACKs) always go with ``put_nowait``: the
acker must never wait on a full queue, or ackers and executors could deadlock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from mypy_extensions import i64

from engine.queues import BatchQueue
from engine.tuples import Tuple

__all__ = ["BACKPRESSURE_POLL_SECS", "Outbox"]

BACKPRESSURE_POLL_SECS = 0.01


class Outbox:
    """An executor's outgoing buffers: tuples per destination executor, messages per acker."""

    __slots__ = (
        "acker_acks",
        "acker_bufs",
        "acker_queues",
        "bufs",
        "busy",
        "last_root",
        "last_val",
        "queues",
        "scheduled",
        "task_executor",
    )

    def __init__(self, queues: list[BatchQueue], task_executor: list[int],
                 acker_queues: list[BatchQueue]) -> None:
        self.queues = queues
        self.task_executor = task_executor
        self.bufs: dict[int, list[Tuple]] = {}
        self.acker_queues = acker_queues
        # Per acker: INIT/FAIL/RESET messages in order, and ACKs coalesced per root by XOR
        # (associative and commutative, so one message per root per batch says the same).
        self.acker_bufs: list[list[tuple[Any, ...]]] = [[] for _ in acker_queues]
        self.acker_acks: list[dict[int, i64]] = [{} for _ in acker_queues]
        # With one acker, the latest run of acks to one root, XOR-ed natively and folded
        # into ``acker_acks`` when another root comes or at flush: a bolt acks the tuples
        # of a tree in runs (a sentence's words arrive together).
        self.last_root: Any = None
        self.last_val: i64 = 0
        # True while the executor runs user code it will flush after; calls made at other
        # times (from the user's own tasks or callbacks) schedule a flush instead.
        self.busy = False
        self.scheduled = False

    def schedule_flush(self) -> None:
        """Flush soon, without waiting and ignoring queue bounds (the immediate path)."""
        if not self.scheduled:
            self.scheduled = True
            asyncio.get_running_loop().call_soon(self._flush_now)

    def _flush_now(self) -> None:
        self.scheduled = False
        if self.busy:
            return  # the executor flushes at the end of its batch
        self.flush_acker_messages()
        if self.bufs:
            bufs, self.bufs = self.bufs, {}
            for ex, buf in bufs.items():
                self.queues[ex].put_nowait(buf)

    def merge_last(self) -> None:
        """Fold the run of acks to ``last_root`` into the first acker's coalesced acks."""
        root = self.last_root
        if root is not None:
            self.last_root = None
            acks = self.acker_acks[0]
            acks[root] = acks.get(root, 0) ^ self.last_val

    def flush_acker_messages(self) -> None:
        """Hand every pending acker message to its acker (never blocks)."""
        self.merge_last()
        acks = self.acker_acks
        for i, buf in enumerate(self.acker_bufs):
            if buf or acks[i]:
                self.acker_queues[i].put_nowait((buf, acks[i]))
                self.acker_bufs[i] = []
                acks[i] = {}

    async def flush(self) -> None:
        """Send every buffered batch, waiting where a destination queue is full."""
        self.flush_acker_messages()
        if self.bufs:
            bufs, self.bufs = self.bufs, {}
            queues = self.queues
            for ex, buf in bufs.items():
                await queues[ex].put(buf)

    async def flush_polling(self, inbox: BatchQueue,
                            handle: Callable[[Any], Awaitable[None]]) -> None:
        """Send every buffered batch; while a destination is full, ``handle`` what arrives
        in ``inbox`` (acks, fails, timeouts) and pass on the acker messages that causes."""
        self.flush_acker_messages()
        if not self.bufs:
            return
        bufs, self.bufs = self.bufs, {}
        for ex, buf in bufs.items():
            queue = self.queues[ex]
            while not queue.fits(len(buf)):
                if await inbox.wait(BACKPRESSURE_POLL_SECS):
                    item = inbox.get_nowait()
                    while item is not None:
                        await handle(item)
                        item = inbox.get_nowait()
                    self.flush_acker_messages()
            queue.put_nowait(buf)
