"""Collectors: the four verbs (emit, anchor, ack, fail) turned into outgoing batches.

Tuples go into the executor's ``Outbox`` (one list per destination executor) and acker
messages into one list per acker; the executor flushes both after each batch or spout
round, so nothing here awaits and nothing is allocated per tuple beyond the tuple itself.

Anchoring follows Storm's ``BoltOutputCollectorImpl``: one fresh edge id per (anchor,
target task), XOR-ed into the anchor's ``ack_val`` and into the new tuple's roots;
``ack(t)`` sends ``edge ^ ack_val`` to each of ``t``'s roots. A tuple's first (root, edge)
pair is two fields of the tuple; pairs of further trees travel flattened in ``more``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import index
from typing import Any, SupportsIndex

from mypy_extensions import i64

from engine.acker import FAIL, INIT, RESET
from engine.grouping import CustomGrouper, Grouper
from engine.queues import BatchQueue
from engine.stats import RecentErrors, TaskStats
from engine.tuples import IdSource, Source, Tuple

__all__ = [
    "BasicOutputCollector",
    "Outbox",
    "OutputCollector",
    "Route",
    "SpoutOutputCollector",
]

log = logging.getLogger("engine")


def _with_edge(more: tuple[int, ...] | None, edge: i64) -> tuple[int, ...] | None:
    """``more`` with every edge replaced by ``edge``: the child's further roots for one anchor."""
    if more is None:
        return None
    e = int(edge)
    return tuple(x for r in more[::2] for x in (r, e))


def _pairs(tup: Tuple) -> list[tuple[Any, int]]:
    """Every (root, edge) pair of ``tup`` (none if untracked); roots stay the same objects."""
    roots: tuple[Any, ...] = tup.roots or ()
    return list(zip(roots[::2], roots[1::2], strict=True))


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
        "transferred",
    )

    def __init__(self, queues: list[BatchQueue], task_executor: list[int],
                 acker_queues: list[BatchQueue]) -> None:
        self.queues = queues
        self.task_executor = task_executor
        self.bufs: dict[int, list[Tuple]] = {}
        self.acker_queues = acker_queues
        # Per acker: INIT/FAIL/RESET messages in order, and ACKs coalesced per root by XOR
        # (associative and commutative, so one message per root per batch says the same).
        self.acker_bufs: list[list[tuple]] = [[] for _ in acker_queues]
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
        self.transferred = 0  # tuples handed to destination queues, counted per batch

    def schedule_flush(self) -> None:
        """Flush soon, without waiting: for emits and acks made outside execute/next_tuple."""
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
                self.transferred += len(buf)
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
                self.transferred += len(buf)
                await queues[ex].put(buf)


@dataclass(slots=True)
class Route:
    """Where one (task, stream) sends: groupers for normal streams, allowed targets for direct."""

    source: Source
    groupers: list[Grouper] = field(default_factory=list)
    direct: bool = False
    direct_targets: frozenset[int] = frozenset()
    # The one grouper of a stream with exactly one subscriber: the emit fast path.
    single: Grouper | None = None
    # That subscriber's only task, where no grouping can choose another: no grouper call.
    only: int = -1
    only_targets: list[int] = field(default_factory=list)
    width: int = 0

    def freeze(self) -> None:
        """Precompute the fast path once every grouper is added."""
        self.single = self.groupers[0] if len(self.groupers) == 1 and not self.direct else None
        self.only = -1
        if self.single is not None and len(self.single.targets) == 1 \
                and not isinstance(self.single, CustomGrouper):
            self.only = self.single.targets[0]
            self.only_targets = [self.only]
        self.width = len(self.source.fields)


class _Collector:
    """Shared routing and delivery for spout and bolt collectors."""

    def __init__(self, kind: str, component: str, task_id: int, routes: dict[str, Route],
                 outbox: Outbox, stats: TaskStats, debug: bool) -> None:
        self._kind = kind
        self._component = component
        self._task_id = task_id
        self._routes = routes
        self._outbox = outbox
        self._stats = stats
        self._debug = debug
        self._num_ackers = len(outbox.acker_bufs)
        self._ids = IdSource()
        self.recent_errors = RecentErrors()

    def _targets(self, values: Sequence[Any], stream: str) -> tuple[Route, list[int]]:
        route = self._routes.get(stream)
        if route is None:
            raise ValueError(f"{self._kind} {self._component!r} task {self._task_id}: emit on "
                             f"undeclared stream {stream!r}; declared: {sorted(self._routes)}")
        if route.direct:
            raise ValueError(f"{self._kind} {self._component!r}: stream {stream!r} is direct; "
                             f"use emit_direct(task_id, ...)")
        if len(values) != len(route.source.fields):
            raise ValueError(
                f"{self._kind} {self._component!r}: emitted {len(values)} values on stream "
                f"{stream!r}, which declares fields {list(route.source.fields)}")
        if route.only >= 0:
            return route, route.only_targets
        groupers = route.groupers
        if len(groupers) == 1:
            return route, groupers[0].choose(values)
        targets: list[int] = []
        for g in groupers:
            targets.extend(g.choose(values))
        return route, targets

    def _direct_target(self, task: SupportsIndex, values: Sequence[Any],
                       stream: str) -> tuple[Route, list[int]]:
        task_id = index(task)  # any int-like (a numpy int, say), in both builds alike
        route = self._routes.get(stream)
        if route is None or not route.direct:
            raise ValueError(f"{self._kind} {self._component!r}: emit_direct on stream "
                             f"{stream!r}, which is not declared with direct=True")
        if task_id not in route.direct_targets:
            raise ValueError(f"{self._kind} {self._component!r}: emit_direct to task {task_id}, "
                             f"which does not subscribe to stream {stream!r} with "
                             f"direct_grouping; subscribed tasks: {sorted(route.direct_targets)}")
        return route, [task_id]

    def _log_emit(self, values: Sequence[Any], stream: str, targets: list[int]) -> None:
        log.info("emit %s %r task %d stream %r -> %s: %r", self._kind, self._component,
                 self._task_id, stream, targets, values)

    def report_error(self, exc: BaseException) -> None:
        """Count ``exc`` as an error of this component and log it with the task id."""
        self._stats.errors += 1
        self.recent_errors.add(self._task_id, exc)
        log.error("%s %r task %d: %s: %s", self._kind, self._component, self._task_id,
                  type(exc).__name__, exc, exc_info=self._stats.errors <= 3 and exc)


class SpoutOutputCollector(_Collector):
    """What a spout emits with; a ``msg_id`` makes the emitted tuple the root of a tracked tree."""

    def __init__(self, component: str, task_id: int, routes: dict[str, Route], outbox: Outbox,
                 stats: TaskStats, debug: bool, pending: dict[int, Any],
                 sample_every: int, clock: Any) -> None:
        super().__init__("spout", component, task_id, routes, outbox, stats, debug)
        self._pending = pending
        self.immediate_acks: list[Any] = []
        self.emit_count = 0
        self._sample_every = sample_every
        self._sample_next = 1
        self._clock = clock
        self.started: dict[int, float] = {}

    def emit(self, values: Sequence[Any], msg_id: Any = None,
             stream: str = "default") -> list[int]:
        """Emit ``values``; returns the task ids it went to. ``msg_id`` tracks the tree."""
        route, targets = self._targets(values, stream)
        self._send(values, msg_id, route.source, targets)
        return list(targets)

    def emit_direct(self, task_id: SupportsIndex, values: Sequence[Any], msg_id: Any = None,
                    stream: str = "default") -> None:
        """Emit ``values`` to ``task_id`` on a direct stream."""
        route, targets = self._direct_target(task_id, values, stream)
        self._send(values, msg_id, route.source, targets)

    def _send(self, values: Sequence[Any], msg_id: Any, src: Source, targets: list[int]) -> None:
        self.emit_count += 1
        self._stats.emitted += 1
        outbox = self._outbox
        bufs, texec = outbox.bufs, outbox.task_executor
        if self._debug:
            self._log_emit(values, src.stream, targets)
        if msg_id is None or not self._num_ackers:
            for t in targets:
                ex = texec[t]
                buf = bufs.get(ex)
                if buf is None:
                    bufs[ex] = [Tuple(values, src, t)]
                else:
                    buf.append(Tuple(values, src, t))
            if msg_id is not None:
                self.immediate_acks.append(msg_id)
            return
        ids = self._ids
        root: Any = int(ids.take())  # boxed once: the pending key, the INIT, every tuple
        val: i64 = 0
        for t in targets:
            edge = ids.take()
            val ^= edge
            ex = texec[t]
            buf = bufs.get(ex)
            if buf is None:
                bufs[ex] = [Tuple(values, src, t, root, edge)]
            else:
                buf.append(Tuple(values, src, t, root, edge))
        self._pending[root] = msg_id
        self._sample_next -= 1
        if self._sample_next == 0:
            self._sample_next = self._sample_every
            self.started[root] = self._clock()
        n = self._num_ackers
        outbox.acker_bufs[0 if n == 1 else root % n].append((INIT, root, val, self._task_id))


class OutputCollector(_Collector):
    """What a bolt emits, anchors, acks and fails with."""

    def __init__(self, component: str, task_id: int, routes: dict[str, Route], outbox: Outbox,
                 stats: TaskStats, debug: bool) -> None:
        super().__init__("bolt", component, task_id, routes, outbox, stats, debug)
        # Streams eligible for emit's inlined path: one subscriber, not direct, no debug log.
        self._fast = {} if debug else {stream: route for stream, route in routes.items()
                                       if route.single is not None}

    def emit(self, values: Sequence[Any], anchors: Tuple | Iterable[Tuple] | None = None,
             stream: str = "default") -> list[int]:
        """Emit ``values`` anchored to ``anchors`` (a tuple, several, or None: unanchored).

        Returns the task ids the tuple went to.
        """
        route = self._fast.get(stream)
        if route is not None and type(anchors) is Tuple and len(values) == route.width:
            # The common case, inlined: one subscriber, one anchor.
            t = route.only
            if t < 0:
                targets = route.single.choose(values)  # type: ignore[union-attr]
                if len(targets) != 1:
                    self._send(values, anchors, route.source, targets)
                    if not self._outbox.busy:
                        self._outbox.schedule_flush()
                    return list(targets)
                t = targets[0]
            root = anchors.root
            if root:
                edge = self._ids.take()
                anchors.ack_val ^= edge
                more = anchors.more
                tup = Tuple(values, route.source, t, root, edge,
                            None if more is None else _with_edge(more, edge))
            else:
                tup = Tuple(values, route.source, t)
            outbox = self._outbox
            ex = outbox.task_executor[t]
            buf = outbox.bufs.get(ex)
            if buf is None:
                outbox.bufs[ex] = [tup]
            else:
                buf.append(tup)
            self._stats.emitted += 1
            if not outbox.busy:
                outbox.schedule_flush()
            return [t]
        route, targets = self._targets(values, stream)
        self._send(values, anchors, route.source, targets)
        if not self._outbox.busy:
            self._outbox.schedule_flush()
        return list(targets)

    def emit_direct(self, task_id: SupportsIndex, values: Sequence[Any],
                    anchors: Tuple | Iterable[Tuple] | None = None,
                    stream: str = "default") -> None:
        """Emit ``values`` to ``task_id`` on a direct stream."""
        route, targets = self._direct_target(task_id, values, stream)
        self._send(values, anchors, route.source, targets)
        if not self._outbox.busy:
            self._outbox.schedule_flush()

    def _send(self, values: Sequence[Any], anchors: Tuple | Iterable[Tuple] | None,
              src: Source, targets: list[int]) -> None:
        self._stats.emitted += 1
        bufs, texec = self._outbox.bufs, self._outbox.task_executor
        if self._debug:
            self._log_emit(values, src.stream, targets)
        if type(anchors) is Tuple:
            root = anchors.root
            for t in targets:
                if root:
                    edge = self._ids.take()
                    anchors.ack_val ^= edge
                    tup = Tuple(values, src, t, root, edge, _with_edge(anchors.more, edge))
                else:
                    tup = Tuple(values, src, t)
                ex = texec[t]
                buf = bufs.get(ex)
                if buf is None:
                    bufs[ex] = [tup]
                else:
                    buf.append(tup)
            return
        anchor_list = [] if anchors is None else [a for a in anchors if a.root]
        for t in targets:
            tup = Tuple(values, src, t)
            if anchor_list:
                merged: dict[Any, i64] = {}
                for a in anchor_list:
                    edge = self._ids.take()
                    a.ack_val ^= edge
                    for r, _ in _pairs(a):
                        merged[r] = merged.get(r, 0) ^ edge
                pairs = list(merged.items())
                tup.root, tup.edge = pairs[0]
                if len(pairs) > 1:
                    tup.more = tuple(x for r, e in pairs[1:] for x in (r, int(e)))
            ex = texec[t]
            buf = bufs.get(ex)
            if buf is None:
                bufs[ex] = [tup]
            else:
                buf.append(tup)

    def ack(self, tup: Tuple) -> None:
        """``tup`` is processed: its edge leaves every tree it belongs to."""
        self._stats.acked += 1
        root = tup.root
        if not root:
            return
        outbox = self._outbox
        if tup.more is None and self._num_ackers == 1:  # one root, one acker: the common case
            if root is outbox.last_root:
                outbox.last_val ^= tup.edge ^ tup.ack_val
            else:
                outbox.merge_last()
                outbox.last_root = root
                outbox.last_val = tup.edge ^ tup.ack_val
        else:
            av, n, per_acker = tup.ack_val, self._num_ackers, outbox.acker_acks
            for r, edge in _pairs(tup):
                acks = per_acker[r % n]
                acks[r] = acks.get(r, 0) ^ i64(edge) ^ av
        if not outbox.busy:
            outbox.schedule_flush()

    def fail(self, tup: Tuple) -> None:
        """Fail every tree ``tup`` belongs to, at once."""
        self._stats.failed += 1
        self._to_roots(tup, FAIL)

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the timeout of every tree ``tup`` belongs to, now (not at batch end)."""
        self._to_roots(tup, RESET)
        self._outbox.flush_acker_messages()

    def _to_roots(self, tup: Tuple, kind: int) -> None:
        if tup.root:
            n, bufs = self._num_ackers, self._outbox.acker_bufs
            for r, _ in _pairs(tup):
                bufs[r % n].append((kind, r))
            if not self._outbox.busy:
                self._outbox.schedule_flush()


class BasicOutputCollector:
    """A ``BasicBolt``'s collector: every emit is anchored to the tuple being executed."""

    __slots__ = ("_collector", "anchor")

    def __init__(self, collector: OutputCollector) -> None:
        self._collector = collector
        self.anchor: Tuple | None = None

    def emit(self, values: Sequence[Any], stream: str = "default") -> list[int]:
        """Emit ``values`` anchored to the input tuple."""
        return self._collector.emit(values, self.anchor, stream)

    def emit_direct(self, task_id: SupportsIndex, values: Sequence[Any],
                    stream: str = "default") -> None:
        """Emit ``values`` to ``task_id`` on a direct stream, anchored to the input tuple."""
        self._collector.emit_direct(task_id, values, self.anchor, stream)

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the timeout of the trees ``tup`` belongs to."""
        self._collector.reset_timeout(tup)

    def report_error(self, exc: BaseException) -> None:
        """Count and log ``exc`` as an error of this component."""
        self._collector.report_error(exc)
