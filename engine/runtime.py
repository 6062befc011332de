"""A running topology: what ``engine.wiring`` planned, built, started, stopped and counted.

Building follows the plan (executors, queues, ackers, one ``Outbox`` per executor, routes
and collectors per task); ``start`` runs every ``open``/``prepare`` and spawns the
executors, ackers and tick timers; ``kill`` drains and closes; ``stats`` adds up figures.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import math
import weakref
from collections.abc import Callable, Coroutine
from typing import Any

from engine.acker import AckLedger
from engine.acker_executor import AckerExecutor
from engine.basic_bolt import adapt_basic_bolt
from engine.bolt_executor import BoltExecutor, BoltTask
from engine.clock import Clock, loop_clock
from engine.collector import OutputCollector
from engine.components import BasicBolt
from engine.config import (
    TOPOLOGY_ACKER_EXECUTORS,
    TOPOLOGY_BOLT_EXECUTE_TIMEOUT_SECS,
    TOPOLOGY_DEBUG,
    TOPOLOGY_MAX_SPOUT_PENDING,
    TOPOLOGY_MESSAGE_TIMEOUT_SECS,
    TOPOLOGY_SPOUT_FLOW_CONTROL,
    TOPOLOGY_STATS_SAMPLE_RATE,
    TOPOLOGY_TICK_TUPLE_FREQ_SECS,
    validate_config,
)
from engine.context import StopTime, TopologyContext
from engine.errors import TopologyError
from engine.failure import FailReasons
from engine.flow_control import FlowLimit, HoldLimit, checkpoint_round, longest_hold
from engine.keyed import fingerprint, give_fingerprint, hop_sources, with_hops
from engine.log_throttle import ErrorThrottle, IntervalWarning
from engine.outbox import Outbox
from engine.queue_watch import QueueWatch
from engine.queues import BatchQueue, StampedQueue
from engine.route_table import routes_for
from engine.spout_collector import SpoutOutputCollector
from engine.spout_executor import SpoutExecutor, SpoutTask
from engine.stalls import StallMonitor
from engine.stats import LatencyReservoir, TaskStats
from engine.topology import ComponentDef, Topology
from engine.usercall import invoke, is_user_error, method, report_on_error
from engine.watchdog import LoopWatchdog, watchdog_for
from engine.wiring import ExecutorPlan, plan

CLOSE_GRACE_SECS = 2.0
"""The least time a stop gives the closes, together, once the drain is over (even one
that used all its time): enough for a Kafka spout's final commit and LeaveGroup on a
broker that answers."""

log = logging.getLogger("engine")


class _SharedWatchdogs:
    """One loop watchdog per event loop, shared by the topologies running on it (the first
    one's threshold counts), stopped when the last of them stops."""

    def __init__(self) -> None:
        self._running: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[LoopWatchdog, int]] = weakref.WeakKeyDictionary()

    def acquire(self, conf: dict[str, Any]) -> LoopWatchdog | None:
        loop = asyncio.get_running_loop()
        held = self._running.get(loop)
        if held is not None:
            self._running[loop] = (held[0], held[1] + 1)
            return held[0]
        dog = watchdog_for(conf)
        if dog is not None:
            dog.start()
            self._running[loop] = (dog, 1)
        return dog

    def release(self, dog: LoopWatchdog) -> None:
        loop = asyncio.get_running_loop()
        held = self._running.get(loop)
        if held is None or held[0] is not dog:
            dog.stop()
        elif held[1] > 1:
            self._running[loop] = (dog, held[1] - 1)
        else:
            del self._running[loop]
            dog.stop()


_watchdogs = _SharedWatchdogs()

__all__ = ["RunningTopology"]

Spawn = Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]]


class RunningTopology:
    """Everything one submitted topology runs with; ``start`` opens it, ``kill`` stops it."""

    def __init__(self, name: str, conf: dict[str, Any], topology: Topology) -> None:
        self.name = name
        self.conf = validate_config(conf, f"topology {name!r}")
        # What this process states to its spouts' consumer groups: the topology as built.
        self.fingerprint = fingerprint(topology, self.conf)
        self.topology = topology = with_hops(topology, self.conf)
        self.component_conf = {
            d.id: validate_config({**self.conf, **(d.obj.component_configuration() or {}),
                                   **d.conf}, f"{d.kind} {d.id!r}")
            for d in topology.components.values()}
        self.clock: Clock = loop_clock()
        self.started_at = 0.0
        self.latency = LatencyReservoir()
        self.spout_executors: list[SpoutExecutor] = []
        self.bolt_executors: list[BoltExecutor] = []
        self.ackers: list[AckerExecutor] = []
        self.task_stats: dict[str, list[TaskStats]] = {}
        self.reasons = FailReasons(timeout_secs=self.conf[TOPOLOGY_MESSAGE_TIMEOUT_SECS])
        self._logs: dict[str, tuple[ErrorThrottle, IntervalWarning]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._kill_lock = asyncio.Lock()
        self._killed = False
        self._input_ended = False  # bolts were told every spout is exhausted
        self.stop_time = StopTime()  # shared by every task's context
        self._build()

    # -- building what the wiring says -------------------------------------------------

    def _build(self) -> None:
        w = self.wiring = plan(self.topology, self.conf, self.component_conf)
        self.component_tasks = w.component_tasks
        self.task_executor = w.task_executor
        self.queues = [BatchQueue(e.queue_size) for e in w.executors]
        self.watch = QueueWatch(self.queues)
        # Stamped: an acker counts a tree's timeout from when its INIT was put.
        stamped = [StampedQueue(w.acker_queue_size, self.clock) for _ in range(w.num_ackers)]
        self.acker_queues: list[BatchQueue] = list(stamped)
        comps = self.topology.components.values()
        self.output_fields = {d.id: {s: sd.fields for s, sd in d.streams.items()}
                              for d in comps}
        self.sources = {d.id: [(s.source, s.stream) for s in d.inputs] for d in comps}
        for d in comps:
            self.task_stats[d.id] = []
            for e in w.executors_of(d.id):
                self._build_executor(d, e)
        acker_stats = []
        timeout = self.conf[TOPOLOGY_MESSAGE_TIMEOUT_SECS]
        for queue in stamped:
            stats = TaskStats()
            acker_stats.append(stats)
            self.ackers.append(AckerExecutor(
                AckLedger(timeout, self.clock()), queue, self.queues, self.task_executor,
                w.spout_executors, self.clock, stats))
        self.task_stats["__acker"] = acker_stats
        deadlines = {}
        for cid, cconf in self.component_conf.items():
            limit = cconf[TOPOLOGY_BOLT_EXECUTE_TIMEOUT_SECS]
            deadlines[cid] = float(cconf[TOPOLOGY_MESSAGE_TIMEOUT_SECS] if limit is None
                                   else limit)
        self.stalls = StallMonitor(self.spout_executors, self.bolt_executors, deadlines,
                                   timeout, hops=hop_sources(self.topology))
        self.watchdog: LoopWatchdog | None = None

    def _context(self, d: ComponentDef, task_id: int) -> TopologyContext:
        return TopologyContext(self.name, task_id, d.id, self.component_tasks,
                               self.output_fields, self.sources, self.component_conf[d.id],
                               self.stop_time)

    def _build_executor(self, d: ComponentDef, e: ExecutorPlan) -> None:
        conf = self.component_conf[d.id]
        debug = conf[TOPOLOGY_DEBUG]
        rate = conf[TOPOLOGY_STATS_SAMPLE_RATE]
        sample_every = max(1, round(1 / rate)) if rate > 0 else -1
        outbox = Outbox(self.queues, self.task_executor, self.acker_queues, self.watch)
        spout_tasks, bolt_tasks = [], []
        flow = self._flow_control(d, conf) if d.is_spout else None
        # One error throttle and one misuse warning per component, shared by its tasks.
        logs = self._logs.setdefault(d.id, (ErrorThrottle(log), IntervalWarning(log, math.inf)))
        for task_id in e.tasks:
            context = self._context(d, task_id)
            routes = routes_for(d, task_id, context, self.wiring, self.watch)
            stats = TaskStats()
            self.task_stats[d.id].append(stats)
            obj = copy.copy(d.obj)
            if d.is_spout:
                give_fingerprint(obj, self.fingerprint)
                pending: dict[int, Any] = {}
                coll = SpoutOutputCollector(d.id, task_id, routes, outbox, stats, debug,
                                            pending, sample_every, self.clock)
                coll.share_logs(*logs)
                spout_tasks.append(SpoutTask(task_id, obj, context, coll, stats, pending,
                                             None if flow is None else flow(stats)))
            else:
                if isinstance(obj, BasicBolt):
                    obj = adapt_basic_bolt(obj)
                bcoll = OutputCollector(d.id, task_id, routes, outbox, stats, debug,
                                        self.reasons)
                bcoll.share_logs(*logs)
                bolt_tasks.append(BoltTask(task_id, obj, context, bcoll, stats))
        queue = self.queues[e.index]
        if d.is_spout:
            self.spout_executors.append(SpoutExecutor(
                d.id, spout_tasks, queue, outbox, conf[TOPOLOGY_MAX_SPOUT_PENDING],
                self.clock, self.latency, self.reasons))
        else:
            bex = BoltExecutor(d.id, bolt_tasks, queue, outbox)
            self.bolt_executors.append(bex)
            self.watch.consumer(e.index, bex.current_call)

    def _flow_control(self, d: ComponentDef, conf: dict[str, Any]
                      ) -> Callable[[TaskStats], FlowLimit] | None:
        """How spout ``d``'s tasks limit their trees in flight (``engine.flow_control``):
        a ``FlowLimit``; a ``HoldLimit`` where the longest hold downstream is a checkpoint's;
        nothing but ``topology.max.spout.pending`` without flow control or ackers, or
        where a window holds tuples by design."""
        if not conf[TOPOLOGY_SPOUT_FLOW_CONTROL] or not self.conf[TOPOLOGY_ACKER_EXECUTORS]:
            return None
        downstream = {b.id: b.obj for b in self.wiring.downstream(d.id)}
        hold, bolt = longest_hold(downstream.items(), self.component_conf)
        if not hold or bolt is None:
            return lambda stats: self._flow_limit(conf)
        cap = conf[TOPOLOGY_MAX_SPOUT_PENDING]
        round_secs = checkpoint_round(downstream[bolt], self.component_conf[bolt])
        if round_secs is not None:
            log.info("spout %r is paced by bolt %r's checkpoints: its trees in flight follow "
                     "what it completes per %g s round (%s = %s caps them)", d.id, bolt,
                     round_secs, TOPOLOGY_MAX_SPOUT_PENDING, cap)
            timeout = float(conf[TOPOLOGY_MESSAGE_TIMEOUT_SECS])
            return lambda stats: HoldLimit(timeout, round_secs, lambda: stats.acked,
                                           self.clock, cap)
        held = "until later tuples move its window" if math.isinf(hold) else f"{hold:g} s"
        log.info("flow control off for spout %r: bolt %r holds tuples %s by design, which "
                 "complete latency cannot tell from queueing; %s = %s bounds its trees",
                 d.id, bolt, held, TOPOLOGY_MAX_SPOUT_PENDING, cap)
        return None

    def _flow_limit(self, conf: dict[str, Any]) -> FlowLimit:
        """A spout task's adaptive limit."""
        return FlowLimit(conf[TOPOLOGY_MESSAGE_TIMEOUT_SECS], conf[TOPOLOGY_MAX_SPOUT_PENDING],
                         now=self.clock())

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self, spawn: Spawn) -> None:
        """Run every ``open``/``prepare``, then start the executors, ackers and tickers."""
        for bex in self.bolt_executors:
            for bt in bex.tasks:
                await self._setup(bt.obj, "prepare", bt.context, bt.collector, "bolt")
        for sex in self.spout_executors:
            for st in sex.tasks:
                await self._setup(st.obj, "open", st.context, st.collector, "spout")
                await invoke(method(st.obj, "activate"))
        self.started_at = self.clock()
        for sex in self.spout_executors:
            self._tasks.append(spawn(sex.run()))
        for bex in self.bolt_executors:
            self._tasks.append(spawn(bex.run()))
            freq = self.component_conf[bex.component][TOPOLOGY_TICK_TUPLE_FREQ_SECS]
            if freq:
                self._tasks.append(spawn(bex.tick(freq)))
        for acker in self.ackers:
            self._tasks.append(spawn(acker.run()))
            self._tasks.append(spawn(acker.expire()))
        self._tasks.append(spawn(self.stalls.run()))
        self.watchdog = _watchdogs.acquire(self.conf)

    async def _setup(self, obj: Any, name: str, context: TopologyContext, collector: Any,
                     kind: str) -> None:
        try:
            await invoke(method(obj, name), dict(context.conf), context, collector)
        except BaseException as exc:
            if not is_user_error(exc):
                raise
            raise TopologyError(f"{kind} {context.component_id!r} task {context.task_id}: "
                                f"{name} raised {type(exc).__name__}: {exc}") from exc

    def spout_pending(self) -> int:
        """Tracked trees the spouts still wait on."""
        return sum(ex.pending() for ex in self.spout_executors)

    def held_in_windows(self) -> int:
        """Tuples windowed bolts hold, waiting for their windows to close."""
        return sum(count() for bex in self.bolt_executors for bt in bex.tasks
                   if callable(count := getattr(bt.obj, "in_windows", None)))

    def exhausted(self) -> bool:
        """Every spout task says it is exhausted and no tracked tree is pending.

        The first time every spout task is exhausted, bolts with ``input_ended`` are told
        (event-time windows then close their last windows, see ``engine.windowing``)."""
        for sex in self.spout_executors:
            for st in sex.tasks:
                check = getattr(st.obj, "exhausted", None)
                if check is None or not check():
                    return False
        if not self._input_ended:
            self._input_ended = True
            for bex in self.bolt_executors:
                for bt in bex.tasks:
                    ended = getattr(bt.obj, "input_ended", None)
                    if callable(ended):
                        ended()
        return self.spout_pending() == 0

    async def kill(self, wait_secs: float) -> None:
        """Stop ``next_tuple``, let pending trees finish for up to ``wait_secs``, then close.

        Idempotent: a second call (say, leaving ``async with`` during a drain) waits for the
        first to finish; ``close``/``cleanup`` run once.
        """
        async with self._kill_lock:
            if not self._killed:
                await self._kill(wait_secs)
                self._killed = True

    async def _kill(self, wait_secs: float) -> None:
        deadline = self.clock() + wait_secs
        # Spouts whose class says ``drains_last`` (the checkpoint spout) go on until the
        # others' trees completed: acks held for a checkpoint need one more commit.
        last = [sex for sex in self.spout_executors
                if all(getattr(st.obj, "drains_last", False) for st in sex.tasks)]
        first = [sex for sex in self.spout_executors if sex not in last]
        await self._deactivate(first)
        while sum(sex.pending() for sex in first) and self.clock() < deadline:
            await asyncio.sleep(0.01)
        await self._deactivate(last)
        while self.spout_pending() and self.clock() < deadline:
            await asyncio.sleep(0.01)
        # What close() and cleanup() bound their goodbyes by, together.
        self.stop_time.deadline = max(deadline, self.clock() + CLOSE_GRACE_SECS)
        if self.watchdog is not None:
            _watchdogs.release(self.watchdog)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        for sex in self.spout_executors:
            for st in sex.tasks:
                await self._quietly(st.collector, "close", st.obj)
        for bex in self.bolt_executors:
            for bt in bex.tasks:
                await self._quietly(bt.collector, "cleanup", bt.obj)

    async def _deactivate(self, executors: list[Any]) -> None:
        for sex in executors:
            sex.active = False
            for st in sex.tasks:
                await self._quietly(st.collector, "deactivate", st.obj)

    @staticmethod
    async def _quietly(collector: Any, name: str, obj: Any) -> None:
        try:
            await invoke(method(obj, name))
        except BaseException as exc:
            report_on_error(collector, exc)
