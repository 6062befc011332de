"""The bolt executor: the coroutine that runs a bolt component's tasks.

A ``BoltExecutor`` takes a batch from its queue, executes every tuple, flushes what was
emitted (waiting where a destination is full, holding batches for a stuck one). A bolt
that takes a whole batch in one call (``batch_method``: a sync windowed bolt, a checkpoint
forwarder, the Kafka bolt) gets it so. User code
is called through ``engine.usercall``'s policy; an exception out of ``execute`` fails its
tuple with an ``"error"`` ``FailReason``; an async ``execute`` running past
``topology.bolt.execute.timeout.secs`` is cancelled and its tuple failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

from engine.collector import OutputCollector
from engine.context import TopologyContext
from engine.outbox import BACKPRESSURE_POLL_SECS, Outbox
from engine.queues import BatchQueue
from engine.stats import BatchTimes, TaskStats
from engine.tuples import SYSTEM_COMPONENT, TICK_STREAM, Fields, Source, Tuple
from engine.usercall import fail_on_error, method, report_on_error
from engine.watchdog import CallSite, current_call

__all__ = ["BoltExecutor", "BoltTask", "batch_method"]

YIELD_EVERY_BATCHES: Final = 8
# An async bolt's batch running longer than this hands its acker messages on mid-batch.
ACK_FLUSH_SECS: Final = 0.005


@dataclass(eq=False)
class BoltTask:
    """One bolt task: the user's copy (``BasicBolt`` already adapted) and its collector."""

    task_id: int
    obj: Any
    context: TopologyContext
    collector: OutputCollector
    stats: TaskStats
    execute: tuple[Callable[..., Any], bool] = field(init=False)
    execute_batch: BatchMethod | None = field(init=False)
    """The bolt's ``execute_batch`` (see ``batch_method``), else None."""
    site: CallSite = field(init=False)
    """What the loop watchdog names for ``execute``."""

    def __post_init__(self) -> None:
        self.execute = method(self.obj, "execute")
        self.execute_batch = batch_method(self.obj)
        self.site = CallSite(self.context.component_id, self.task_id, "execute")


BatchMethod = Callable[[list[Tuple] | tuple[Tuple, ...]], Awaitable[None] | None]


def batch_method(obj: Any) -> BatchMethod | None:
    """``obj.execute_batch`` where ``obj`` says it takes a whole queue batch in one sync
    call (``executes_batches = True``): it runs each tuple as its ``execute`` would and
    fails the tuples that raise itself. It may return an awaitable, which the executor
    awaits before its next batch: a wait that holds no tuple (every tuple of the batch is
    handed over, as a Kafka bolt's records are to its producer, and acked or failed
    later), so the watchdog has no call to cancel meanwhile. None otherwise."""
    if getattr(obj, "executes_batches", False) is not True:
        return None
    return obj.execute_batch  # type: ignore[no-any-return]


class BoltExecutor:
    """Runs the tasks of one bolt executor: execute each tuple of a batch, then flush.

    ``current`` is the tuple an async ``execute`` is running on (``None`` between
    batches); ``cancel_current`` ends that call, failing its tuple, when it is overdue.
    """

    def __init__(self, component: str, tasks: list[BoltTask], queue: BatchQueue,
                 outbox: Outbox) -> None:
        self.component = component
        self.tasks = tasks
        self.by_id = {t.task_id: t for t in tasks}
        self.queue = queue
        self.outbox = outbox
        self.times = BatchTimes()
        self.current: Tuple | None = None
        self._cancelled: Tuple | None = None
        self._cancel_note = ""
        self._task: asyncio.Task[Any] | None = None

    async def run(self) -> None:
        """Loop until cancelled; a failing ``execute`` fails its tuple and the loop goes on."""
        queue, outbox, times = self.queue, self.outbox, self.times
        clock = times.clock
        marker = current_call()
        self._task = asyncio.current_task()
        single = self.tasks[0] if len(self.tasks) == 1 else None
        batches = 0
        while True:
            if outbox.holding() and not await queue.wait(BACKPRESSURE_POLL_SECS):
                await outbox.flush()  # batches held back for a full queue: retry while idle
                continue
            batch = await queue.get()
            size = len(batch)  # an async batch is emptied as it is executed
            started = clock()
            outbox.set_busy(True)
            if single is not None:
                marker.site = single.site
                await self._execute(single, batch, outbox)
            else:
                for tup in batch:
                    task = self.by_id[tup.dest]
                    marker.site = task.site
                    await self._execute(task, (tup,))
            marker.site = None
            self.current = None
            outbox.set_busy(False)
            times.add(size, started, clock())
            await outbox.flush()
            batches += 1
            if batches == YIELD_EVERY_BATCHES:
                batches = 0
                await asyncio.sleep(0)

    async def _execute(self, task: BoltTask, batch: list[Tuple] | tuple[Tuple, ...],
                       outbox: Outbox | None = None) -> None:
        execute, is_async = task.execute
        coll = task.collector
        task.stats.executed += len(batch)
        if task.execute_batch is not None:
            settle: Awaitable[None] | None = None
            try:
                settle = task.execute_batch(batch)
            except BaseException as exc:  # it fails what raised; anything else: report
                report_on_error(coll, exc)
            if settle is not None:
                await settle
        elif is_async:
            loop = asyncio.get_running_loop()
            flushed = loop.time()
            if isinstance(batch, list):  # let go of each tuple once executed (big tuples)
                batch.reverse()
                todo: list[Tuple] = batch
            else:
                todo = list(reversed(batch))
            while todo:
                tup = todo.pop()
                self.current = tup
                try:
                    await execute(tup)
                except BaseException as exc:
                    fail_on_error(coll, self._overdue(exc), (tup,))
                # A slow async batch passes its acks on as it goes (the acker runs while
                # execute awaits): complete latency then measures the work, not the batch.
                if outbox is not None and loop.time() - flushed >= ACK_FLUSH_SECS:
                    flushed = loop.time()
                    outbox.flush_acker_messages()
        else:
            for tup in batch:
                try:
                    execute(tup)
                except BaseException as exc:
                    fail_on_error(coll, exc, (tup,))

    def current_call(self) -> Tuple | None:
        """The tuple an async ``execute`` is running on now (``None`` between calls)."""
        return self.current if self.outbox.busy else None

    def cancel_current(self, note: str) -> bool:
        """Cancel the async ``execute`` running on ``current``: its tuple fails with
        ``TimeoutError: <note>`` and the executor goes on. False when there is none."""
        task = self._task
        if task is None or self.current is None or not self.outbox.busy:
            return False
        if self._cancelled is not None:
            if self._cancelled is self.current:
                return False  # cancelled already, not yet out of the call
            task.uncancel()  # the user's code swallowed that cancel and returned
        self._cancelled, self._cancel_note = self.current, note
        task.cancel()
        return True

    def _overdue(self, exc: BaseException) -> BaseException:
        """``exc`` out of ``execute``; the engine's cancel of an overdue call becomes a
        ``TimeoutError`` (unless the executor itself is being stopped as well)."""
        if self._cancelled is None or not isinstance(exc, asyncio.CancelledError):
            return exc
        self._cancelled = None
        task = self._task
        if task is not None and task.uncancel() > 0:
            return exc
        return TimeoutError(self._cancel_note)

    async def tick(self, every: float) -> None:
        """Deliver a tick tuple to each task every ``every`` seconds, until cancelled."""
        src = Source(SYSTEM_COMPONENT, -1, TICK_STREAM, Fields(()))
        while True:
            await asyncio.sleep(every)
            for task in self.tasks:
                self.queue.put_nowait([Tuple((), src, task.task_id)])

