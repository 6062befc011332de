"""A running topology: task ids, executors, queues, routes and ackers wired together.

Task ids are global and start at 1, spout tasks first (their ids must fit the acker's
packed record). ``num_tasks`` tasks are spread over ``parallelism`` executors in
contiguous ranges, as Storm does.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable, Coroutine
from typing import Any

from engine.acker import AckLedger
from engine.basic_bolt import adapt_basic_bolt
from engine.collector import Outbox, OutputCollector, Route, SpoutOutputCollector
from engine.components import BasicBolt
from engine.config import (
    TOPOLOGY_ACKER_EXECUTORS,
    TOPOLOGY_DEBUG,
    TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE,
    TOPOLOGY_MAX_SPOUT_PENDING,
    TOPOLOGY_MESSAGE_TIMEOUT_SECS,
    TOPOLOGY_STATS_SAMPLE_RATE,
    TOPOLOGY_TICK_TUPLE_FREQ_SECS,
    validate_config,
)
from engine.context import TopologyContext
from engine.errors import TopologyError
from engine.executor import (
    AckerExecutor,
    BoltExecutor,
    BoltTask,
    SpoutExecutor,
    SpoutTask,
    bound,
    call,
)
from engine.grouping import make_grouper
from engine.observe.figures import topology_stats
from engine.queues import BatchQueue
from engine.stats import LatencyReservoir, TaskStats
from engine.topology import ComponentDef, Topology
from engine.tuples import Source

__all__ = ["RunningTopology"]

Spawn = Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]]


def _split(tasks: list[int], executors: int) -> list[list[int]]:
    n = min(executors, len(tasks))
    base, extra = divmod(len(tasks), n)
    out, i = [], 0
    for k in range(n):
        size = base + (1 if k < extra else 0)
        out.append(tasks[i:i + size])
        i += size
    return out


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
        self.clock: Callable[[], float] = time.monotonic
        self.started_at = 0.0
        self.latency = LatencyReservoir()
        self.spout_executors: list[SpoutExecutor] = []
        self.bolt_executors: list[BoltExecutor] = []
        self.ackers: list[AckerExecutor] = []
        self.task_stats: dict[str, list[TaskStats]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._kill_lock = asyncio.Lock()
        self._killed = False
        self._wire()

    # -- wiring -------------------------------------------------------------------------

    def _wire(self) -> None:
        comps = self.topology.components
        next_id = 1
        self.component_tasks: dict[str, list[int]] = {}
        for d in comps.values():
            self.component_tasks[d.id] = list(range(next_id, next_id + d.num_tasks))
            next_id += d.num_tasks
        groups = {d.id: _split(self.component_tasks[d.id], d.parallelism)
                  for d in comps.values()}
        self.task_executor = [0] * next_id
        exec_ids: dict[str, list[int]] = {}
        n_exec = 0
        for cid, parts in groups.items():
            exec_ids[cid] = []
            for part in parts:
                for t in part:
                    self.task_executor[t] = n_exec
                exec_ids[cid].append(n_exec)
                n_exec += 1
        self.queues = [BatchQueue(self.component_conf[cid][TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE])
                       for cid, parts in groups.items() for _ in parts]
        n_ackers = self.conf[TOPOLOGY_ACKER_EXECUTORS]
        self.acker_queues = [BatchQueue(self.conf[TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE])
                             for _ in range(n_ackers)]
        self.output_fields = {d.id: {s: sd.fields for s, sd in d.streams.items()}
                              for d in comps.values()}
        self.sources = {d.id: [(s.source, s.stream) for s in d.inputs] for d in comps.values()}
        subscribers: dict[tuple[str, str], list[tuple[ComponentDef, Any]]] = {}
        for d in comps.values():
            for sub in d.inputs:
                subscribers.setdefault((sub.source, sub.stream), []).append((d, sub))
        self._subscribers = subscribers
        for d in comps.values():
            self._wire_component(d, groups[d.id], exec_ids[d.id])
        spout_execs = sorted({self.task_executor[t] for d in self.topology.spouts()
                              for t in self.component_tasks[d.id]})
        acker_stats = []
        for i in range(n_ackers):
            stats = TaskStats()
            acker_stats.append(stats)
            ledger = AckLedger(self.conf[TOPOLOGY_MESSAGE_TIMEOUT_SECS], self.clock())
            self.ackers.append(AckerExecutor(ledger, self.acker_queues[i], self.queues,
                                             self.task_executor, spout_execs, self.clock, stats))
        self.task_stats["__acker"] = acker_stats

    def _context(self, d: ComponentDef, task_id: int) -> TopologyContext:
        return TopologyContext(self.name, task_id, d.id, self.component_tasks,
                               self.output_fields, self.sources, self.component_conf[d.id])

    def _routes(self, d: ComponentDef, task_id: int, context: TopologyContext) -> dict[str, Route]:
        routes = {}
        for stream, sd in d.streams.items():
            route = Route(Source(d.id, task_id, stream, sd.fields), direct=sd.direct)
            for target, sub in self._subscribers.get((d.id, stream), []):
                targets = self.component_tasks[target.id]
                if sub.kind == "direct":
                    route.direct_targets = route.direct_targets | frozenset(targets)
                    continue
                custom = None
                if sub.kind == "custom":
                    custom = copy.copy(sub.custom)
                    custom.prepare(context, stream, list(targets))
                indexes = [sd.fields.index(f) for f in sub.fields]
                route.groupers.append(make_grouper(sub.kind, targets, indexes, custom, task_id))
            route.freeze()
            routes[stream] = route
        return routes

    def _wire_component(self, d: ComponentDef, parts: list[list[int]],
                        exec_ids: list[int]) -> None:
        conf = self.component_conf[d.id]
        debug = conf[TOPOLOGY_DEBUG]
        self.task_stats[d.id] = []
        rate = conf[TOPOLOGY_STATS_SAMPLE_RATE]
        sample_every = max(1, round(1 / rate)) if rate > 0 else -1
        for part, ex in zip(parts, exec_ids, strict=True):
            outbox = Outbox(self.queues, self.task_executor, self.acker_queues)
            spout_tasks, bolt_tasks = [], []
            for task_id in part:
                context = self._context(d, task_id)
                routes = self._routes(d, task_id, context)
                stats = TaskStats()
                self.task_stats[d.id].append(stats)
                obj = copy.copy(d.obj)
                if d.is_spout:
                    pending: dict[int, Any] = {}
                    coll = SpoutOutputCollector(d.id, task_id, routes, outbox, stats, debug,
                                                pending, sample_every, self.clock)
                    spout_tasks.append(SpoutTask(task_id, obj, context, coll, stats, pending))
                else:
                    if isinstance(obj, BasicBolt):
                        obj = adapt_basic_bolt(obj)
                    bcoll = OutputCollector(d.id, task_id, routes, outbox, stats, debug)
                    bolt_tasks.append(BoltTask(task_id, obj, context, bcoll, stats))
            if d.is_spout:
                self.spout_executors.append(SpoutExecutor(
                    d.id, spout_tasks, self.queues[ex], outbox,
                    conf[TOPOLOGY_MAX_SPOUT_PENDING], self.clock, self.latency))
            else:
                self.bolt_executors.append(
                    BoltExecutor(d.id, bolt_tasks, self.queues[ex], outbox))

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self, spawn: Spawn) -> None:
        """Run every ``open``/``prepare``, then start the executors, ackers and tickers."""
        for bex in self.bolt_executors:
            for bt in bex.tasks:
                await self._setup(bt.obj, "prepare", bt.context, bt.collector, "bolt")
        for sex in self.spout_executors:
            for st in sex.tasks:
                await self._setup(st.obj, "open", st.context, st.collector, "spout")
                await call(bound(st.obj, "activate"))
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

    async def _setup(self, obj: Any, method: str, context: TopologyContext, collector: Any,
                     kind: str) -> None:
        try:
            await call(bound(obj, method), dict(context.conf), context, collector)
        except Exception as exc:
            raise TopologyError(f"{kind} {context.component_id!r} task {context.task_id}: "
                                f"{method} raised {type(exc).__name__}: {exc}") from exc

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
    async def _quietly(collector: Any, method: str, obj: Any) -> None:
        try:
            await call(bound(obj, method))
        except Exception as exc:
            collector.report_error(exc)

    # -- figures --------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counters per component, pending trees, latencies, executor and queue figures:
        plain JSON data (see ``engine.observe.figures``)."""
        return topology_stats(self)
