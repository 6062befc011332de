"""Executors: the coroutines that run tasks. This is where the engine awaits.

A ``SpoutExecutor`` loops: drain acks and fails from its inbox, call ``next_tuple`` on each
task (up to ``SPOUT_ROUND`` times, never past ``topology.max.spout.pending``), flush the
emitted batches, then yield, or wait on the inbox with a growing back-off when nothing
was emitted. A ``BoltExecutor`` takes a batch, executes every tuple, flushes. An
``AckerExecutor`` applies batches of acker messages to its ledger and, every wheel tick,
fails the trees that timed out.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.acker import ACK, AckLedger
from engine.collector import Outbox, OutputCollector, SpoutOutputCollector
from engine.context import TopologyContext
from engine.queues import BatchQueue
from engine.stats import BatchTimes, LatencyReservoir, TaskStats
from engine.tuples import SYSTEM_COMPONENT, TICK_STREAM, Fields, Source, Tuple

__all__ = ["AckerExecutor", "BoltExecutor", "BoltTask", "SpoutExecutor", "SpoutTask"]

# A spout round ends after this many next_tuple calls or emitted tuples, whichever comes
# first: batches of about a hundred keep a round's tuples in cache (measured: rounds of a
# thousand sentences ran the word count at half the speed).
SPOUT_ROUND = 100
IDLE_MIN_SECS = 0.0005
IDLE_MAX_SECS = 0.01
YIELD_EVERY_BATCHES = 8
BACKPRESSURE_POLL_SECS = 0.01


def _reraise_if_cancelled() -> None:
    """Re-raise inside ``except CancelledError`` when this task itself is being cancelled.

    A user coroutine can raise ``CancelledError`` of its own (an awaited future was
    cancelled); that is the user's error, not a reason for the executor to stop.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def bound(obj: Any, name: str) -> tuple[Callable[..., Any], bool]:
    """``obj.name`` and whether it is a coroutine function (decided once per task)."""
    method = getattr(obj, name)
    return method, inspect.iscoroutinefunction(method)


async def call(method: tuple[Callable[..., Any], bool], *args: Any) -> Any:
    """Call a ``bound`` method, awaiting it if it is a coroutine function."""
    fn, is_async = method
    return await fn(*args) if is_async else fn(*args)


@dataclass(eq=False)
class SpoutTask:
    """One spout task: the user's copy, its collector and its pending ``root -> msg_id``."""

    task_id: int
    obj: Any
    context: TopologyContext
    collector: SpoutOutputCollector
    stats: TaskStats
    pending: dict[int, Any]
    next_tuple: tuple[Callable[..., Any], bool] = field(init=False)
    ack: tuple[Callable[..., Any], bool] = field(init=False)
    fail: tuple[Callable[..., Any], bool] = field(init=False)

    def __post_init__(self) -> None:
        self.next_tuple = bound(self.obj, "next_tuple")
        self.ack = bound(self.obj, "ack")
        self.fail = bound(self.obj, "fail")


@dataclass(eq=False)
class BoltTask:
    """One bolt task: the user's copy (``BasicBolt`` already adapted) and its collector."""

    task_id: int
    obj: Any
    context: TopologyContext
    collector: OutputCollector
    stats: TaskStats
    execute: tuple[Callable[..., Any], bool] = field(init=False)

    def __post_init__(self) -> None:
        self.execute = bound(self.obj, "execute")


class SpoutExecutor:
    """Runs the tasks of one spout executor; ``active`` gates ``next_tuple``."""

    def __init__(self, component: str, tasks: list[SpoutTask], queue: BatchQueue,
                 outbox: Outbox, max_pending: int | None, clock: Callable[[], float],
                 latency: LatencyReservoir) -> None:
        self.component = component
        self.tasks = tasks
        self.by_id = {t.task_id: t for t in tasks}
        self.queue = queue
        self.outbox = outbox
        self.max_pending = max_pending
        self.active = True
        self._clock = clock
        self._latency = latency

    def pending(self) -> int:
        """Tracked trees emitted by these tasks and not yet acked or failed."""
        return sum(len(t.pending) for t in self.tasks)

    async def run(self) -> None:
        """Loop until cancelled: outcomes in, tuples out, back off when idle."""
        inbox, outbox = self.queue, self.outbox
        idle = IDLE_MIN_SECS
        while True:
            item = inbox.get_nowait()
            while item is not None:
                await self._on_outcomes(item)
                item = inbox.get_nowait()
            emitted = 0
            if self.active:
                outbox.busy = True
                for task in self.tasks:
                    if self.active:
                        emitted += await self._round(task)
                outbox.busy = False
            await self._flush()
            if emitted:
                idle = IDLE_MIN_SECS
                await asyncio.sleep(0)
            else:
                await inbox.wait(idle)
                idle = min(idle * 2, IDLE_MAX_SECS)

    async def _round(self, task: SpoutTask) -> int:
        coll, max_pending, pending = task.collector, self.max_pending, task.pending
        next_tuple, is_async = task.next_tuple
        start = coll.emit_count
        # An async next_tuple may wait on its input: one call per round, so what it emitted
        # is flushed and acks are drained before the next call can wait.
        for _ in range(1 if is_async else SPOUT_ROUND):
            if not self.active or (max_pending is not None and len(pending) >= max_pending):
                break
            before = coll.emit_count
            try:
                if is_async:
                    await next_tuple()
                else:
                    next_tuple()
            except Exception as exc:
                coll.report_error(exc)
                break
            except asyncio.CancelledError as exc:
                _reraise_if_cancelled()
                coll.report_error(exc)
                break
            if coll.emit_count == before or coll.emit_count - start >= SPOUT_ROUND:
                break
        if coll.immediate_acks:
            acks, coll.immediate_acks = coll.immediate_acks, []
            for msg_id in acks:
                task.stats.acked += 1
                await self._user(task, task.ack, msg_id)
        return coll.emit_count - start

    async def _on_outcomes(self, outcomes: list[tuple[int, int, int]]) -> None:
        by_id = self.by_id
        for kind, task_id, root in outcomes:
            task = by_id[task_id]
            msg_id = task.pending.pop(root, None)
            if msg_id is None:
                continue  # decided already, or emitted before a restart of this task
            started = task.collector.started
            if started:
                t0 = started.pop(root, None)
                if t0 is not None and kind == ACK:
                    self._latency.add(self._clock() - t0)
            if kind == ACK:
                task.stats.acked += 1
                method, is_async = task.ack
            else:
                task.stats.failed += 1
                method, is_async = task.fail
            try:
                if is_async:
                    await method(msg_id)
                else:
                    method(msg_id)
            except Exception as exc:
                task.collector.report_error(exc)
            except asyncio.CancelledError as exc:
                _reraise_if_cancelled()
                task.collector.report_error(exc)

    async def _flush(self) -> None:
        """Send the round's batches; while a destination is full, keep handling acks, fails
        and timeouts (a fail must not wait for downstream room)."""
        outbox = self.outbox
        outbox.flush_acker_messages()
        if not outbox.bufs:
            return
        bufs, outbox.bufs = outbox.bufs, {}
        for ex, buf in bufs.items():
            queue = outbox.queues[ex]
            while queue.full():
                if await self.queue.wait(BACKPRESSURE_POLL_SECS):
                    item = self.queue.get_nowait()
                    while item is not None:
                        await self._on_outcomes(item)
                        item = self.queue.get_nowait()
                    outbox.flush_acker_messages()
            outbox.transferred += len(buf)
            queue.put_nowait(buf)

    @staticmethod
    async def _user(task: SpoutTask, method: tuple[Callable[..., Any], bool],
                    msg_id: Any) -> None:
        try:
            await call(method, msg_id)
        except Exception as exc:
            task.collector.report_error(exc)
        except asyncio.CancelledError as exc:
            _reraise_if_cancelled()
            task.collector.report_error(exc)


class BoltExecutor:
    """Runs the tasks of one bolt executor: execute each tuple of a batch, then flush."""

    def __init__(self, component: str, tasks: list[BoltTask], queue: BatchQueue,
                 outbox: Outbox) -> None:
        self.component = component
        self.tasks = tasks
        self.by_id = {t.task_id: t for t in tasks}
        self.queue = queue
        self.outbox = outbox
        self.times = BatchTimes()

    async def run(self) -> None:
        """Loop until cancelled; a failing ``execute`` fails its tuple and the loop goes on."""
        queue, outbox, times = self.queue, self.outbox, self.times
        clock = times.clock
        single = self.tasks[0] if len(self.tasks) == 1 else None
        batches = 0
        while True:
            batch = await queue.get()
            started = clock()
            outbox.busy = True
            if single is not None:
                await self._execute(single, batch)
            else:
                for tup in batch:
                    await self._execute(self.by_id[tup.dest], (tup,))
            outbox.busy = False
            times.add(len(batch), started, clock())
            await outbox.flush()
            batches += 1
            if batches == YIELD_EVERY_BATCHES:
                batches = 0
                await asyncio.sleep(0)

    @staticmethod
    async def _execute(task: BoltTask, batch: list[Tuple] | tuple[Tuple, ...]) -> None:
        execute, is_async = task.execute
        coll = task.collector
        task.stats.executed += len(batch)
        if is_async:
            for tup in batch:
                try:
                    await execute(tup)
                except Exception as exc:
                    coll.fail(tup)
                    coll.report_error(exc)
                except asyncio.CancelledError as exc:
                    _reraise_if_cancelled()
                    coll.fail(tup)
                    coll.report_error(exc)
        else:
            for tup in batch:
                try:
                    execute(tup)
                except Exception as exc:
                    coll.fail(tup)
                    coll.report_error(exc)
                except asyncio.CancelledError as exc:
                    _reraise_if_cancelled()
                    coll.fail(tup)
                    coll.report_error(exc)

    async def tick(self, every: float) -> None:
        """Deliver a tick tuple to each task every ``every`` seconds, until cancelled."""
        src = Source(SYSTEM_COMPONENT, -1, TICK_STREAM, Fields(()))
        while True:
            await asyncio.sleep(every)
            for task in self.tasks:
                self.queue.put_nowait([Tuple((), src, task.task_id)])


class AckerExecutor:
    """One acker task: XOR bookkeeping for the roots ``root % num_ackers`` maps to it."""

    def __init__(self, ledger: AckLedger, queue: BatchQueue, queues: list[BatchQueue],
                 task_executor: list[int], spout_executors: list[int],
                 clock: Callable[[], float], stats: TaskStats) -> None:
        self.ledger = ledger
        self.queue = queue
        self._queues = queues
        self._task_executor = task_executor
        self._only = spout_executors[0] if len(spout_executors) == 1 else None
        self._clock = clock
        self.stats = stats

    async def run(self) -> None:
        """Apply message batches until cancelled; decided trees go back to their spout tasks."""
        queue, ledger = self.queue, self.ledger
        while True:
            ops, acks = await queue.get()
            self.stats.executed += len(ops) + len(acks)
            decided = ledger.apply(ops, acks, self._clock())
            if decided:
                self._send(decided)

    async def expire(self) -> None:
        """Every wheel tick, fail the trees whose timeout passed, until cancelled."""
        tick = self.ledger.tick
        while True:
            await asyncio.sleep(tick)
            decided = self.ledger.expire(self._clock())
            if decided:
                self._send(decided)

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
