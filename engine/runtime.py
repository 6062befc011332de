"""A running topology: what ``engine.wiring`` planned, built, started, stopped and counted.

Building follows the plan (executors, queues, ackers, one ``Outbox`` per executor, routes
and collectors per task); ``start`` runs every ``open``/``prepare`` and spawns the
executors, ackers and tick timers; ``kill`` drains and closes; ``stats`` adds up figures.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Coroutine
from typing import Any

from engine.acker import AckLedger
from engine.acker_executor import AckerExecutor
from engine.basic_bolt import adapt_basic_bolt
from engine.clock import Clock, loop_clock
from engine.collector import OutputCollector, SpoutOutputCollector
from engine.components import BasicBolt
from engine.config import (
    TOPOLOGY_ACKER_EXECUTORS,
    TOPOLOGY_DEBUG,
    TOPOLOGY_MAX_SPOUT_PENDING,
    TOPOLOGY_MESSAGE_TIMEOUT_SECS,
    TOPOLOGY_SPOUT_FLOW_CONTROL,
    TOPOLOGY_STATS_SAMPLE_RATE,
    TOPOLOGY_TICK_TUPLE_FREQ_SECS,
    validate_config,
)
from engine.context import TopologyContext
from engine.errors import TopologyError
from engine.executor import BoltExecutor, BoltTask, SpoutExecutor, SpoutTask
from engine.failure import FailReasons
from engine.flow_control import FlowLimit
from engine.outbox import Outbox
from engine.queues import BatchQueue
from engine.routing import routes_for
from engine.stats import LatencyReservoir, TaskStats
from engine.topology import ComponentDef, Topology
from engine.usercall import invoke, is_user_error, method
from engine.wiring import ExecutorPlan, plan

__all__ = ["RunningTopology"]

Spawn = Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]]


class RunningTopology:
    """Everything one submitted topology runs with; ``start`` opens it, ``kill`` stops it."""

    def __init__(self, name: str, conf: dict[str, Any], topology: Topology) -> None:
        self.name = name
        self.topology = topology
        self.conf = validate_config(conf, f"topology {name!r}")
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
        self.reasons = FailReasons()
        self._tasks: list[asyncio.Task[None]] = []
        self._kill_lock = asyncio.Lock()
        self._killed = False
        self._build()

    # -- building what the wiring says -------------------------------------------------

    def _build(self) -> None:
        w = self.wiring = plan(self.topology, self.conf, self.component_conf)
        self.component_tasks = w.component_tasks
        self.task_executor = w.task_executor
        self.queues = [BatchQueue(e.queue_size) for e in w.executors]
        self.acker_queues = [BatchQueue(w.acker_queue_size) for _ in range(w.num_ackers)]
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
        for queue in self.acker_queues:
            stats = TaskStats()
            acker_stats.append(stats)
            self.ackers.append(AckerExecutor(
                AckLedger(timeout, self.clock()), queue, self.queues, self.task_executor,
                w.spout_executors, self.clock, stats, self.reasons, timeout))
        self.task_stats["__acker"] = acker_stats

    def _context(self, d: ComponentDef, task_id: int) -> TopologyContext:
        return TopologyContext(self.name, task_id, d.id, self.component_tasks,
                               self.output_fields, self.sources, self.component_conf[d.id])

    def _build_executor(self, d: ComponentDef, e: ExecutorPlan) -> None:
        conf = self.component_conf[d.id]
        debug = conf[TOPOLOGY_DEBUG]
        rate = conf[TOPOLOGY_STATS_SAMPLE_RATE]
        sample_every = max(1, round(1 / rate)) if rate > 0 else -1
        outbox = Outbox(self.queues, self.task_executor, self.acker_queues)
        spout_tasks, bolt_tasks = [], []
        for task_id in e.tasks:
            context = self._context(d, task_id)
            routes = routes_for(d, task_id, context, self.wiring)
            stats = TaskStats()
            self.task_stats[d.id].append(stats)
            obj = copy.copy(d.obj)
            if d.is_spout:
                pending: dict[int, Any] = {}
                coll = SpoutOutputCollector(d.id, task_id, routes, outbox, stats, debug,
                                            pending, sample_every, self.clock)
                spout_tasks.append(SpoutTask(task_id, obj, context, coll, stats, pending,
                                             self._flow_limit(conf)))
            else:
                if isinstance(obj, BasicBolt):
                    obj = adapt_basic_bolt(obj)
                bcoll = OutputCollector(d.id, task_id, routes, outbox, stats, debug,
                                        self.reasons)
                bolt_tasks.append(BoltTask(task_id, obj, context, bcoll, stats))
        queue = self.queues[e.index]
        if d.is_spout:
            self.spout_executors.append(SpoutExecutor(
                d.id, spout_tasks, queue, outbox, conf[TOPOLOGY_MAX_SPOUT_PENDING],
                self.clock, self.latency, self.reasons))
        else:
            self.bolt_executors.append(BoltExecutor(d.id, bolt_tasks, queue, outbox))

    def _flow_limit(self, conf: dict[str, Any]) -> FlowLimit | None:
        """A spout task's adaptive limit, or None (flow control off, or no ackers)."""
        if not conf[TOPOLOGY_SPOUT_FLOW_CONTROL] or not self.conf[TOPOLOGY_ACKER_EXECUTORS]:
            return None
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

    def exhausted(self) -> bool:
        """Every spout task says it is exhausted and no tracked tree is pending."""
        for sex in self.spout_executors:
            for st in sex.tasks:
                check = getattr(st.obj, "exhausted", None)
                if check is None or not check():
                    return False
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
        for sex in self.spout_executors:
            sex.active = False
            for st in sex.tasks:
                await self._quietly(st.collector, "deactivate", st.obj)
        deadline = self.clock() + wait_secs
        while self.spout_pending() and self.clock() < deadline:
            await asyncio.sleep(0.01)
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

    @staticmethod
    async def _quietly(collector: Any, name: str, obj: Any) -> None:
        try:
            await invoke(method(obj, name))
        except BaseException as exc:
            if not is_user_error(exc):
                raise
            collector.report_error(exc)

    # -- figures --------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counters per component, pending trees, complete latency and queue figures."""
        components: dict[str, dict[str, Any]] = {}
        spouts = {d.id for d in self.topology.spouts()}
        for cid, per_task in self.task_stats.items():
            spout = cid in spouts
            totals = TaskStats().as_dict(spout)
            for stats in per_task:
                for key, value in stats.as_dict(spout).items():
                    totals[key] += value
            components[cid] = totals
        for sex in self.spout_executors:  # the limit in force, per spout component
            limit = sex.in_flight_limit()
            entry = components[sex.component]
            prev = entry.get("in_flight_limit", 0)
            entry["in_flight_limit"] = None if limit is None or prev is None else prev + limit
        if self.ackers:  # trees decided: the ledgers count them
            components["__acker"]["acked"] = sum(a.ledger.acked for a in self.ackers)
            components["__acker"]["failed"] = sum(a.ledger.failed for a in self.ackers)
            components["__acker"]["timed_out"] = sum(a.ledger.timed_out for a in self.ackers)
        p50, p99 = self.latency.percentiles_ms(0.5, 0.99)
        return {
            "name": self.name,
            "uptime_secs": round(self.clock() - self.started_at, 3) if self.started_at else 0.0,
            "pending": sum(len(a.ledger) for a in self.ackers),
            "spout_pending": self.spout_pending(),
            "components": components,
            "complete_latency_ms": {"p50": p50, "p99": p99, "samples": self.latency.count},
            "queues": {i: q.stats() for i, q in enumerate(self.queues)},
        }
