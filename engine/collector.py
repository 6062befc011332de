"""Collectors: the four verbs (emit, anchor, ack, fail) turned into outgoing batches.

The bolt's collector and what both share are here; the spout's is in
``engine.spout_collector``.

Tuples and acker messages go into the executor's ``Outbox`` through its verbs (``push``,
``send``, ``ack_one``/``ack_to``, ``touch``); the outbox flushes them (``engine.outbox``
describes when), so nothing here awaits and nothing is allocated per tuple beyond the
tuple itself. A bolt's emits, acks and fails made outside ``execute`` schedule an
immediate flush that does not respect the destination's queue bound (see
``engine.outbox``); a spout's wait for its executor's next round.

Anchoring follows Storm's ``BoltOutputCollectorImpl``: one fresh edge id per (anchor,
target task), XOR-ed into the anchor's ``ack_val`` and into the new tuple's roots;
``ack(t)`` sends ``edge ^ ack_val`` to each of ``t``'s roots. A tuple's first (root, edge)
pair is two fields of the tuple; pairs of further trees travel flattened in ``more``.

Misuse is caught where it is cheap: values that are a ``str``, ``bytes`` or ``dict`` raise
``TypeError`` at ``emit`` (checked only when the values are not a plain list or tuple);
a tracked tuple's ``ack_val`` becomes ``_DONE`` once it is acked or failed (one store,
where the ack reads that field anyway), so a second ack or fail finds it there and is
ignored with one warning per component instead of corrupting the tree's XOR (which would
end in a silent timeout). Errors reported by a
component's tasks are logged through one ``ErrorThrottle`` per component.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence, Set
from operator import index
from typing import Any, Final, SupportsIndex

from mypy_extensions import i64

from engine.acker import FAIL, RESET
from engine.failure import FailReason, FailReasons
from engine.log_throttle import ErrorThrottle, IntervalWarning
from engine.outbox import Outbox
from engine.routing import Route
from engine.stats import RecentErrors, TaskStats
from engine.tuples import IdSource, Source, Tuple

__all__ = [
    "BaseCollector",
    "BasicOutputCollector",
    "OutputCollector",
]

log = logging.getLogger("engine")

# A tracked tuple's ``ack_val`` once it is acked or failed: a second ack or fail sees it.
# (An ``ack_val`` is a XOR of random 64-bit edge ids; it equals this by chance with
# probability 2**-64, the odds Storm accepts for a tree's XOR reaching zero early.) It
# fits compiled code's small ints: comparing with it converts no boxed integer.
_DONE: Final[i64] = -(2**61)


def _with_edge(more: tuple[int, ...] | None, edge: i64) -> tuple[int, ...] | None:
    """``more`` with every edge replaced by ``edge``: the child's further roots for one anchor."""
    if more is None:
        return None
    e = int(edge)
    return tuple(x for r in more[::2] for x in (r, e))


def _check_values(kind: str, component: str, values: Any) -> None:
    """Raise ``TypeError`` for values that are not a sequence of field values."""
    if isinstance(values, (str, bytes, bytearray, Mapping, Set)) \
            or not isinstance(values, Sequence):
        raise TypeError(f"{kind} {component!r}: emit expects a list or tuple of values, got "
                        f"{type(values).__name__} {values!r:.60}")


def _pairs(tup: Tuple) -> list[tuple[Any, int]]:
    """Every (root, edge) pair of ``tup`` (none if untracked); roots stay the same objects."""
    roots: tuple[Any, ...] = tup.roots or ()
    return list(zip(roots[::2], roots[1::2], strict=True))


class BaseCollector:
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
        self._num_ackers = outbox.num_ackers
        self._ids = IdSource()
        self.recent_errors = RecentErrors()
        # Shared by the component's tasks when the runtime sets them (``share_logs``).
        self.error_log = ErrorThrottle(log)
        self.misuse_log = IntervalWarning(log, math.inf)

    def share_logs(self, error_log: ErrorThrottle, misuse_log: IntervalWarning) -> None:
        """Use the component's throttles, so that limits hold per component, not per task."""
        self.error_log = error_log
        self.misuse_log = misuse_log

    @property
    def component(self) -> str:
        """The id of the component whose task this collector serves."""
        return self._component

    def _targets(self, values: Sequence[Any], stream: str) -> tuple[Route, list[int]]:
        if type(values) is not list and type(values) is not tuple:
            _check_values(self._kind, self._component, values)
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
        if type(values) is not list and type(values) is not tuple:
            _check_values(self._kind, self._component, values)
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
        """Count ``exc`` as an error of this component and log it with the task id
        (at most 5 lines per 10 s per component; the next line counts the rest)."""
        self._stats.errors += 1
        self.recent_errors.add(self._task_id, exc)
        self.error_log.error("%s %r task %d: %s: %s", self._kind, self._component,
                             self._task_id, type(exc).__name__, exc,
                             exc_info=self._stats.errors <= 3 and exc)

    def _twice(self, verb: str) -> None:
        """A tuple was acked or failed after it had been acked or failed: ignored."""
        self.misuse_log.warn(f"{self._kind} {self._component!r}",
                             "task %d: %s of a tuple already acked or failed, ignored (each "
                             "tuple is acked or failed once; warned once per component)",
                             self._task_id, verb, now=0.0)


class OutputCollector(BaseCollector):
    """What a bolt emits, anchors, acks and fails with.

    Used outside ``execute`` (from the bolt's own task or a callback) it works the same,
    but the batch is flushed with ``put_nowait``: such emits do not wait for room in a
    full destination queue (``engine.outbox`` explains the three flush paths).
    """

    def __init__(self, component: str, task_id: int, routes: dict[str, Route], outbox: Outbox,
                 stats: TaskStats, debug: bool, reasons: FailReasons | None = None) -> None:
        super().__init__("bolt", component, task_id, routes, outbox, stats, debug)
        self._reasons = FailReasons() if reasons is None else reasons
        # Streams eligible for emit's inlined path: one subscriber, not direct, no debug log.
        self._fast = {} if debug else {stream: route for stream, route in routes.items()
                                       if route.single is not None}
        self._fast_default = self._fast.get("default")  # emit's stream, unless named
        self.resets = 0  # reset_timeout calls: the stall monitor restarts a call's deadline

    def emit(self, values: Sequence[Any], anchors: Tuple | Iterable[Tuple] | None = None,
             stream: str = "default") -> list[int]:
        """Emit ``values`` anchored to ``anchors`` (a tuple, several, or None: unanchored).

        Returns the task ids the tuple went to.
        """
        route = self._fast_default if stream == "default" else self._fast.get(stream)
        if route is not None and type(anchors) is Tuple and len(values) == route.width \
                and (type(values) is list or type(values) is tuple):
            # The common case, inlined: one subscriber, one anchor.
            t = route.only
            if t < 0:
                targets = route.single.choose(values)  # type: ignore[union-attr]
                if len(targets) != 1:
                    self._send(values, anchors, route.source, targets)
                    self._outbox.touch()
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
            outbox.push(t, tup)
            self._stats.emitted += 1
            outbox.touch()
            return [t]
        route, targets = self._targets(values, stream)
        self._send(values, anchors, route.source, targets)
        self._outbox.touch()
        return list(targets)

    def emit_direct(self, task_id: SupportsIndex, values: Sequence[Any],
                    anchors: Tuple | Iterable[Tuple] | None = None,
                    stream: str = "default") -> None:
        """Emit ``values`` to ``task_id`` on a direct stream."""
        route, targets = self._direct_target(task_id, values, stream)
        self._send(values, anchors, route.source, targets)
        self._outbox.touch()

    def _send(self, values: Sequence[Any], anchors: Tuple | Iterable[Tuple] | None,
              src: Source, targets: list[int]) -> None:
        self._stats.emitted += 1
        outbox = self._outbox
        if self._debug:
            self._log_emit(values, src.stream, targets)
        single = anchors if type(anchors) is Tuple else None
        anchor_list = ([] if single is not None or anchors is None
                       else [a for a in anchors if a.root])
        for t in targets:
            if single is not None:
                root = single.root
                if root:
                    edge = self._ids.take()
                    single.ack_val ^= edge
                    tup = Tuple(values, src, t, root, edge, _with_edge(single.more, edge))
                else:
                    tup = Tuple(values, src, t)
            else:
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
            outbox.push(t, tup)

    def ack(self, tup: Tuple) -> None:
        """``tup`` is processed: its edge leaves every tree it belongs to."""
        root = tup.root
        if not root:
            self._stats.acked += 1
            return
        av = tup.ack_val
        if av == _DONE:
            self._twice("ack")
            return
        self._stats.acked += 1
        tup.ack_val = _DONE
        outbox = self._outbox
        if tup.more is None and self._num_ackers == 1:  # one root, one acker: the common case
            outbox.ack_one(root, tup.edge ^ av)
        else:
            for r, edge in _pairs(tup):
                outbox.ack_to(r, i64(edge) ^ av)
        outbox.touch()

    def fail(self, tup: Tuple, reason: str | None = None) -> None:
        """Fail every tree ``tup`` belongs to, at once; ``reason`` reaches the spout's ``fail``."""
        self.fail_with(tup, FailReason(
            "explicit", f"failed by {self._component}" if reason is None else reason,
            None, self._component))

    def fail_with(self, tup: Tuple, reason: FailReason) -> None:
        """Fail every tree ``tup`` belongs to, recording ``reason`` (the first one wins)."""
        if not tup.root:
            self._stats.failed += 1
            return
        if tup.ack_val == _DONE:
            self._twice("fail")
            return
        self._stats.failed += 1
        tup.ack_val = _DONE
        reasons = self._reasons
        for r, _ in _pairs(tup):
            reasons.record(r, reason)
        self._to_roots(tup, FAIL)

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the timeout of every tree ``tup`` belongs to, now (not at batch end);
        it restarts the deadline of the ``execute`` running too."""
        self.resets += 1
        self._to_roots(tup, RESET)
        self._outbox.flush_acker_messages()

    def _to_roots(self, tup: Tuple, kind: int) -> None:
        if tup.root:
            outbox = self._outbox
            for r, _ in _pairs(tup):
                outbox.send(r, (kind, r))
            outbox.touch()


class BasicOutputCollector:
    """The collector whose emits are anchored for the user: to ``anchor``, which its owner
    sets (the tuple a ``BasicBolt`` executes; the input or held tuples of a transactional
    emitter or batch bolt). With ``count``, ``sent`` counts the tuples emitted per target
    task: a batch bolt's task tells each downstream task how many to expect."""

    __slots__ = ("_collector", "_count", "_native", "anchor", "sent")

    def __init__(self, collector: Any, count: bool = False) -> None:
        # Any: an ``OutputCollector`` or a wrapper around one (a stateful topology's).
        self._collector = collector
        # The plain collector is called as compiled code calls compiled code, without
        # Python's argument parsing: a split bolt emits several times per input.
        self._native: OutputCollector | None = (
            collector if type(collector) is OutputCollector else None)
        self._count = count
        self.anchor: Tuple | Iterable[Tuple] | None = None
        self.sent: dict[int, int] = {}

    def emit(self, values: Sequence[Any], stream: str = "default") -> list[int]:
        """Emit ``values`` anchored to ``anchor``; returns the task ids it went to."""
        native = self._native
        if native is not None:
            targets = native.emit(values, self.anchor, stream)
        else:
            targets = self._collector.emit(values, self.anchor, stream)
        if self._count:
            sent = self.sent
            for t in targets:
                sent[t] = sent.get(t, 0) + 1
        return targets

    def emit_direct(self, task_id: SupportsIndex, values: Sequence[Any],
                    stream: str = "default") -> None:
        """Emit ``values`` to ``task_id`` on a direct stream, anchored to ``anchor``."""
        self._collector.emit_direct(task_id, values, self.anchor, stream)
        if self._count:
            t = index(task_id)
            self.sent[t] = self.sent.get(t, 0) + 1

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the timeout of the trees ``tup`` belongs to."""
        self._collector.reset_timeout(tup)

    def report_error(self, exc: BaseException) -> None:
        """Count and log ``exc`` as an error of this component (the batch goes on)."""
        self._collector.report_error(exc)
