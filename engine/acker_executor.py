"""The acker executor: one acker task's loop around its ``AckLedger``.

It applies batches of acker messages (INIT/FAIL/RESET and coalesced ACKs) as they come,
and every tick fails the trees whose timeout passed, sending them on as ``TIMEOUT``
outcomes (the spout executor gives them the topology's one timeout reason). A tree's
timeout counts from when its INIT was put into the acker's queue (``StampedQueue``), which
is never before the emit: a tree never fails early, however long the loop was held before
the acker read it. A batch that arrives when a tick is overdue (the loop was blocked) has
its acks applied only after that expiry: a tree past its timeout fails, even if the ack
that would complete it was sent while the loop was held. Decided trees go back, batched
per spout executor, with ``put_nowait``: an acker never waits on a full queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from engine.acker import TIMEOUT, AckLedger
from engine.queues import BatchQueue, StampedQueue
from engine.stats import TaskStats

__all__ = ["AckerExecutor"]


class AckerExecutor:
    """One acker task: XOR bookkeeping for the roots ``root % num_ackers`` maps to it."""

    def __init__(self, ledger: AckLedger, queue: StampedQueue, queues: list[BatchQueue],
                 task_executor: list[int], spout_executors: list[int],
                 clock: Callable[[], float], stats: TaskStats) -> None:
        self.ledger = ledger
        self.queue = queue
        self._queues = queues
        self._task_executor = task_executor
        self._only = spout_executors[0] if len(spout_executors) == 1 else None
        self._clock = clock
        self.stats = stats
        self._due = clock() + ledger.tick

    async def run(self) -> None:
        """Apply message batches until cancelled; decided trees go back to their spout tasks."""
        queue, ledger = self.queue, self.ledger
        while True:
            ops, acks = await queue.get()
            self.stats.executed += len(ops) + len(acks)
            now = self._clock()
            if now >= self._due:
                decided = self._after_hold(ops, acks, now)
            else:
                decided = ledger.apply(ops, acks, queue.sent_at)
            if decided:
                self._send(decided)

    async def expire(self) -> None:
        """Every ledger tick, fail the trees whose timeout passed, until cancelled."""
        tick = self.ledger.tick
        while True:
            await asyncio.sleep(tick)
            self._expire(self._clock())

    def _after_hold(self, ops: list[tuple[int, ...]], acks: dict[int, int],
                    now: float) -> list[tuple[int, int, int]]:
        """Apply a batch that finds a tick overdue: the loop was held, and the batch may
        have been sent long before ``now``, or at the end of the hold. Its new trees count
        from when it was sent, the overdue expiry comes next, the acks last: a tree whose
        tuple sat in the task that held the loop fails if its timeout passed, a tree
        emitted at the end of the hold does not."""
        ledger = self.ledger
        decided = ledger.apply(ops, {}, self.queue.sent_at)
        self._expire(now)
        return decided + ledger.apply([], acks, now)

    def _expire(self, now: float) -> None:
        self._due = now + self.ledger.tick
        decided = self.ledger.expire(now)
        if decided:
            self._send([(TIMEOUT, task, root) for _, task, root in decided])

    def _send(self, decided: list[tuple[int, int, int]]) -> None:
        queues, texec = self._queues, self._task_executor
        if self._only is not None:
            queues[self._only].put_nowait(decided)
            return
        per_exec: dict[int, list[tuple[int, int, int]]] = {}
        for outcome in decided:
            per_exec.setdefault(texec[outcome[1]], []).append(outcome)
        for ex, outcomes in per_exec.items():
            queues[ex].put_nowait(outcomes)
