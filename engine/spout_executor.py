"""The spout executor: the coroutine that runs a spout component's tasks.

A ``SpoutExecutor`` loops: drain acks and fails from its inbox, call ``next_tuple`` on each
task (up to ``SPOUT_ROUND`` times, never past the task's in-flight limit: flow control's
``FlowLimit``, capped by ``topology.max.spout.pending``; trees whose tuples are stranded
in a stuck queue do not count against the flow limit; nor while the task's trees in
flight hold ``topology.spout.max.pending.bytes`` of values), flush the emitted batches, then
yield, or wait on the inbox with a growing back-off when nothing was emitted. Outcomes are
also delivered while an async ``next_tuple`` is suspended. User code is called through
``engine.usercall``'s policy. (Bolts run in ``engine.bolt_executor``, ackers in
``engine.acker_executor``.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

from engine.acker import ACK, TIMEOUT
from engine.config import DEFAULTS, TOPOLOGY_SPOUT_MAX_PENDING_BYTES
from engine.context import TopologyContext
from engine.failure import FailReason, FailReasons
from engine.flow_control import FlowLimit
from engine.log_throttle import IntervalWarning
from engine.outbox import Outbox
from engine.queues import BatchQueue
from engine.spout_collector import SpoutOutputCollector
from engine.stats import LatencyReservoir, TaskStats
from engine.usercall import accepts, batch_ack, is_user_error, method, report_on_error
from engine.watchdog import CallSite, CurrentCall, current_call

# A FAIL whose reason was not kept (more failures in flight than the book holds).
_UNKNOWN_REASON = FailReason("explicit", "failed (reason not kept)")

__all__ = ["SpoutExecutor", "SpoutTask"]

log = logging.getLogger("engine")

# A spout round ends after this many next_tuple calls or emitted tuples, whichever comes
# first: batches of about a hundred keep a round's tuples in cache (measured: rounds of a
# thousand sentences ran the word count at half the speed).
SPOUT_ROUND: Final = 100
IDLE_MIN_SECS: Final = 0.0005
IDLE_MAX_SECS: Final = 0.01


@dataclass(eq=False)
class SpoutTask:
    """One spout task: the user's copy, its collector and its pending ``root -> msg_id``."""

    task_id: int
    obj: Any
    context: TopologyContext
    collector: SpoutOutputCollector
    stats: TaskStats
    pending: dict[int, Any]
    flow: FlowLimit | None = None
    """The adaptive limit on this task's trees in flight (None: only the hard cap)."""
    max_bytes: int | None = field(init=False)
    """``topology.spout.max.pending.bytes``: no ``next_tuple`` while the collector's
    ``large_bytes`` is at least this (None: no bound in bytes)."""
    next_tuple: tuple[Callable[..., Any], bool] = field(init=False)
    ack: tuple[Callable[..., Any], bool] = field(init=False)
    fail: tuple[Callable[..., Any], bool] = field(init=False)
    fail_takes_reason: bool = field(init=False)
    ack_many: Callable[[list[Any]], Any] | None = field(init=False)
    """The spout's own sync ``ack_many(msg_ids)``, called in place of ``ack`` for each of a
    run of acks (None: ``ack`` one by one)."""
    sites: tuple[CallSite, CallSite, CallSite] = field(init=False)
    """What the loop watchdog names for ``next_tuple``, ``ack`` and ``fail``."""

    def __post_init__(self) -> None:
        self.next_tuple = method(self.obj, "next_tuple")
        self.ack = method(self.obj, "ack")
        self.fail = method(self.obj, "fail")
        self.ack_many = batch_ack(self.obj) if not self.ack[1] else None
        self.fail_takes_reason = accepts(self.fail[0], "reason")
        key = TOPOLOGY_SPOUT_MAX_PENDING_BYTES
        self.max_bytes = self.context.conf.get(key, DEFAULTS[key])
        cid = self.context.component_id
        self.sites = (CallSite(cid, self.task_id, "next_tuple"),
                      CallSite(cid, self.task_id, "ack"), CallSite(cid, self.task_id, "fail"))


class SpoutExecutor:
    """Runs the tasks of one spout executor; ``active`` gates ``next_tuple``.

    The user methods of one task never run at the same time, with one exception: while
    an async ``next_tuple`` is suspended at an ``await`` (say, on its own input queue),
    the task's ``ack`` and ``fail`` are called for the outcomes that arrive, so that a
    source waiting for input does not hold back what already completed. Sync methods are
    never interleaved with anything, and ``ack``/``fail`` never with each other.
    """

    def __init__(self, component: str, tasks: list[SpoutTask], queue: BatchQueue,
                 outbox: Outbox, max_pending: int | None, clock: Callable[[], float],
                 latency: LatencyReservoir, reasons: FailReasons | None = None) -> None:
        self.component = component
        self.tasks = tasks
        self.by_id = {t.task_id: t for t in tasks}
        self.queue = queue
        self.outbox = outbox
        self.max_pending = max_pending
        self.active = True
        self._clock = clock
        self._latency = latency
        self._reasons = FailReasons() if reasons is None else reasons
        self._marker = CurrentCall()
        self._cuts = IntervalWarning(log)
        self._said_bytes = False
        self._in_call = False
        self._pump: asyncio.Task[None] | None = None

    def pending(self) -> int:
        """Tracked trees emitted by these tasks and not yet acked or failed."""
        return sum(len(t.pending) for t in self.tasks)

    def pending_bytes(self) -> int:
        """Approximate bytes of values held by these tasks' trees in flight (trees of
        ``LARGE_TREE_BYTES`` or more)."""
        return sum(t.collector.large_bytes for t in self.tasks)

    def in_flight_limit(self) -> int | None:
        """The limit on trees in flight in force, summed over the tasks (None: no limit)."""
        total = 0
        for task in self.tasks:
            if task.flow is not None:
                total += task.flow.limit
            elif self.max_pending is not None:
                total += self.max_pending
            else:
                return None
        return total

    async def run(self) -> None:
        """Loop until cancelled: outcomes in, tuples out, back off when idle."""
        inbox, outbox = self.queue, self.outbox
        marker = self._marker = current_call()
        idle = IDLE_MIN_SECS
        while True:
            item = inbox.get_nowait()
            while item is not None:
                await self._on_outcomes(item)
                item = inbox.get_nowait()
            emitted = 0
            if self.active:
                outbox.set_busy(True)
                for task in self.tasks:
                    if self.active:
                        marker.site = task.sites[0]
                        emitted += await self._round(task)
                marker.site = None
                outbox.set_busy(False)
            await outbox.flush_polling(inbox, self._on_outcomes)
            if emitted:
                idle = IDLE_MIN_SECS
                await asyncio.sleep(0)
            else:
                await inbox.wait(idle)
                idle = min(idle * 2, IDLE_MAX_SECS)

    async def _round(self, task: SpoutTask) -> int:
        coll, pending, flow = task.collector, task.pending, task.flow
        cap = flow.limit if flow is not None else self.max_pending
        max_bytes = task.max_bytes
        next_tuple, is_async = task.next_tuple
        start = coll.emit_count
        limited = widened = False
        # An async next_tuple may wait on its input: one call per round, so what it emitted
        # is flushed before the next call can wait.
        for _ in range(1 if is_async else SPOUT_ROUND):
            if not self.active:
                break
            if cap is not None and len(pending) >= cap:
                if flow is None or widened:
                    limited = True
                    break
                widened = True
                cap = self._beside_stuck(cap, flow.target())
                if len(pending) >= cap:
                    limited = True
                    break
            if max_bytes is not None and coll.large_bytes >= max_bytes:
                self._held_by_bytes(task, max_bytes)
                break
            before = coll.emit_count
            try:
                if is_async:
                    await self._next_async(next_tuple)
                else:
                    next_tuple()
            except BaseException as exc:
                report_on_error(coll, exc)
                break
            if coll.emit_count == before or coll.emit_count - start >= SPOUT_ROUND:
                break
        if flow is not None:
            flow.limited = limited
        if coll.immediate_acks:
            await self._ack_untracked(task)
        return coll.emit_count - start

    def _held_by_bytes(self, task: SpoutTask, max_bytes: int) -> None:
        """Say once per executor that the bytes in flight, not their number, hold a task.

        Such a round is not ``limited``: trees held back by their bytes say nothing about
        the topology's speed, so the limit on their number must not grow meanwhile."""
        if self._said_bytes:
            return
        self._said_bytes = True
        log.info("spout %r: task %d holds %.0f MiB of values in flight, %s = %d: next_tuple "
                 "waits for its trees to complete (raise it where memory allows)",
                 self.component, task.task_id, task.collector.large_bytes / 2**20,
                 TOPOLOGY_SPOUT_MAX_PENDING_BYTES, max_bytes)

    async def _ack_untracked(self, task: SpoutTask) -> None:
        """Ack the ``msg_id``s emitted without ackers (at once, as Storm does)."""
        coll = task.collector
        acks, coll.immediate_acks = coll.immediate_acks, []
        if task.ack_many is not None:
            task.stats.acked += len(acks)
            self._ack_many(task, acks)
            return
        for msg_id in acks:
            task.stats.acked += 1
            called = self._user(task, task.ack, msg_id)
            if called is not None:
                await called

    def _beside_stuck(self, limit: int, secs: float) -> int:
        """The flow limit widened by the tuples stranded in the queues of tasks hung on one
        call for ``secs`` (the limit's latency target: a call that long is no queue),
        within the cap.

        A tree whose tuple waits for a hung task can only time out; counted against the
        limit, such trees fill it (shuffle sends the hung task its share until it is seen
        hung) and stop the spout, starving the hung task's neighbours until the timeout.
        ``topology.max.spout.pending`` stays a hard cap.
        """
        widened = limit + self.outbox.stranded(secs)
        cap = self.max_pending
        return widened if cap is None else min(widened, cap)

    async def _next_async(self, next_tuple: Callable[..., Any]) -> None:
        """Await an async ``next_tuple``; should it suspend, deliver outcomes meanwhile.

        A call that completes without suspending costs one scheduled callback, cancelled
        unrun; one that suspends starts ``_deliver`` on the loop's next turn.
        """
        loop = asyncio.get_running_loop()
        self._in_call = True
        handle = loop.call_soon(self._start_delivering)
        # Not ``finally``: awaiting the pump while an exception is being handled would
        # leave it as the context of unrelated exceptions (seen with compiled coroutines).
        error: BaseException | None = None
        try:
            await next_tuple()
        except BaseException as exc:
            error = exc
        self._in_call = False
        handle.cancel()
        pump, self._pump = self._pump, None
        if pump is not None:
            self.queue.wake()
            if error is not None and not is_user_error(error):
                pump.cancel()  # the engine is stopping
            else:
                await pump  # it ends at its next wake, after any ack it is running
        if error is not None:
            raise error

    def _start_delivering(self) -> None:
        if self._in_call and self._pump is None:
            self._pump = asyncio.get_running_loop().create_task(self._deliver())

    async def _deliver(self) -> None:
        """While ``next_tuple`` is suspended: handle outcomes, flush what was emitted."""
        inbox, outbox = self.queue, self.outbox
        while self._in_call:
            await inbox.wait(IDLE_MAX_SECS)
            item = inbox.get_nowait()
            while item is not None:
                await self._on_outcomes(item)
                item = inbox.get_nowait()
            if self._in_call:
                await outbox.flush_polling(inbox, self._on_outcomes)

    async def _on_outcomes(self, outcomes: list[tuple[int, int, int]]) -> None:
        by_id, marker = self.by_id, self._marker
        # Acks for tasks with ack_many, per task, in order; flushed before a fail of the
        # same task and at the end, so each task sees its acks and fails in order.
        batched: dict[int, list[Any]] | None = None
        for kind, task_id, root in outcomes:
            task = by_id[task_id]
            reason = None if kind == ACK else self._reason(kind, root)
            msg_id = _take(task.pending, root)
            if msg_id is None:
                continue  # decided already, or emitted before a restart of this task
            if task.collector.large:
                task.collector.decided(root)
            if task.collector.started:
                self._timed(task, root, kind == ACK)
            if kind == ACK:
                task.stats.acked += 1
                flow = task.flow
                if flow is not None and flow.limited:
                    flow.acked(1)
                if task.ack_many is not None:
                    batched = _batch(batched, task_id, msg_id)
                    continue
                marker.site = task.sites[1]
                called = self._user(task, task.ack, msg_id)
            else:
                if batched is not None:
                    ids = batched.pop(task_id, None)
                    if ids:
                        self._ack_many(task, ids)
                called = self._failed(task, msg_id, reason)
            if called is not None:
                await called
        # A cancel (at shutdown) inside an awaited async fail drops the acks gathered so far:
        # their records are then replayed, as for any tree undecided at a stop.
        if batched is not None:
            for task_id, ids in batched.items():
                self._ack_many(by_id[task_id], ids)
        marker.site = None

    def _reason(self, kind: int, root: int) -> FailReason | None:
        """Why the tree of ``root`` failed (taken out of the book), or timed out."""
        return self._reasons.timeout if kind == TIMEOUT else self._reasons.take(root)

    def _timed(self, task: SpoutTask, root: int, acked: bool) -> None:
        """A sampled tree is decided: its complete latency, if acked, feeds the figures
        and flow control."""
        started = task.collector.started
        t0 = started.get(root)
        if t0 is None:
            return
        del started[root]
        if acked:
            now = self._clock()
            self._latency.add(now - t0)
            flow = task.flow
            if flow is not None and flow.latency(t0, now, len(task.pending) + 1):
                self._cut(task, flow, f"complete latency {now - t0:.3f} s")

    def _failed(self, task: SpoutTask, msg_id: Any,
                reason: FailReason | None) -> Awaitable[None] | None:
        """Count the fail, let flow control see a timeout, call the task's ``fail``."""
        self._marker.site = task.sites[2]
        if reason is None:
            reason = _UNKNOWN_REASON
        task.stats.count_fail(reason.kind)
        flow = task.flow
        if (flow is not None and reason.kind == "timeout"
                and flow.timed_out(self._clock(), len(task.pending) + 1)):
            self._cut(task, flow, "a tree timed out")
        return self._user(task, task.fail, msg_id,
                          reason if task.fail_takes_reason else None)

    def _ack_many(self, task: SpoutTask, msg_ids: list[Any]) -> None:
        """Hand ``msg_ids`` to the task's (sync) ``ack_many``, guarded as ``_user`` guards
        ``ack``."""
        ack_many = task.ack_many
        assert ack_many is not None
        self._marker.site = task.sites[1]
        self._user(task, (ack_many, False), msg_ids)

    def _cut(self, task: SpoutTask, flow: FlowLimit, why: str) -> None:
        self._cuts.warn(f"spout {self.component!r}",
                        "flow control cut task %d's limit on trees in flight to %d (%s; "
                        "target %.3f s)", task.task_id, flow.limit, why, flow.target(),
                        now=self._clock())

    @staticmethod
    def _user(task: SpoutTask, user: tuple[Callable[..., Any], bool],
              msg_id: Any, reason: FailReason | None = None) -> Awaitable[None] | None:
        """Call ``ack``/``fail`` (with ``reason`` as a keyword when given); a user's error
        is reported, the engine's cancellation propagates. An async method's call comes
        back as an awaitable (guarded the same way) for the caller to await; a sync one
        runs here, without the cost of a coroutine per acked tree."""
        fn, is_async = user
        try:
            result = fn(msg_id) if reason is None else fn(msg_id, reason=reason)
        except BaseException as exc:
            report_on_error(task.collector, exc)
            return None
        return _guarded(task, result) if is_async else None


async def _guarded(task: SpoutTask, call: Awaitable[None]) -> None:
    """Await a user's async ``ack``/``fail``: an error is reported, the engine's
    cancellation propagates."""
    try:
        await call
    except BaseException as exc:
        report_on_error(task.collector, exc)


def _take(pending: dict[int, Any], root: Any) -> Any:
    """The ``msg_id`` pending under ``root``, taken out (None if there is none).

    A get and a del: compiled, ``dict.pop`` with a default is a generic method call."""
    msg_id = pending.get(root)
    if msg_id is not None:
        del pending[root]
    return msg_id


def _batch(batched: dict[int, list[Any]] | None, task_id: int,
           msg_id: Any) -> dict[int, list[Any]]:
    """``batched`` (a new one if None) with ``msg_id`` added to ``task_id``'s acks."""
    if batched is None:
        batched = {}
    ids = batched.get(task_id)
    if ids is None:
        batched[task_id] = [msg_id]
    else:
        ids.append(msg_id)
    return batched
