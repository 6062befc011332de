"""The spout's collector: ``emit`` with a ``msg_id`` starts a tracked tree.

A tracked emit takes the next root id (consecutive per task), one random edge id per target
task, records the ``msg_id`` in the spout task's pending map under the root and sends the
acker one ``INIT`` with the XOR of the edges; every ``sample_every``-th tree also records
its start time, for the complete latency. A tree whose values weigh ``LARGE_TREE_BYTES`` or
more (``sys.getsizeof`` of each top-level value, summed) is also recorded in ``large`` and
``large_bytes``, which the executor holds against ``topology.spout.max.pending.bytes``.
Untracked emits (no ``msg_id``, or no ackers) go out bare, and a ``msg_id`` given without
ackers is acked at once by the executor (``immediate_acks``).
Delivery and its limits are the shared ``engine.collector.BaseCollector``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from sys import getsizeof
from typing import Any, Final, SupportsIndex

from mypy_extensions import i64

from engine.acker import INIT
from engine.collector import BaseCollector
from engine.outbox import Outbox
from engine.routing import Route
from engine.stats import TaskStats
from engine.tuples import Source, Tuple

__all__ = ["LARGE_TREE_BYTES", "SpoutOutputCollector", "tree_bytes", "values_bytes"]

# Trees lighter than this are not weighed one by one: the dict entry would cost more than
# it tells, and what they hold is bounded by the limit on trees in flight times this.
LARGE_TREE_BYTES: Final = 1024
_BYTES_OVERHEAD: Final = getsizeof(b"", 0)


# What ``sys.getsizeof`` of a str of n characters can be at most: the largest header
# (72 bytes), 4 bytes a character and a cached UTF-8 copy of 4 bytes a character, with
# room to spare. A tree of strs whose bound is below ``LARGE_TREE_BYTES`` is not weighed.
_STR_BOUND_BASE: Final = 96
_STR_BOUND_PER_CHAR: Final = 8


def tree_bytes(values: Sequence[Any]) -> int:
    """``values_bytes(values)`` when it may reach ``LARGE_TREE_BYTES``, else 0 (values that
    are all short strs are not weighed one by one)."""
    bound = 0
    for v in values:
        if type(v) is not str:
            return values_bytes(values)
        text: str = v
        bound += _STR_BOUND_BASE + _STR_BOUND_PER_CHAR * len(text)
    return values_bytes(values) if bound >= LARGE_TREE_BYTES else 0


def values_bytes(values: Sequence[Any]) -> int:
    """The approximate bytes of ``values``: ``sys.getsizeof`` of each top-level value
    (a ``bytes`` or ``str`` counts its length; a container counts itself, not what it
    refers to)."""
    size = 0
    for v in values:
        # bytes, the usual Kafka value, without the call: its getsizeof is its length + 33
        size += len(v) + _BYTES_OVERHEAD if type(v) is bytes else getsizeof(v, 0)
    return size


class SpoutOutputCollector(BaseCollector):
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
        self.large: dict[int, int] = {}
        """``root -> bytes`` of the trees in flight weighing ``LARGE_TREE_BYTES`` or more."""
        self.large_bytes = 0
        """The sum of ``large``: what this task's trees in flight hold, approximately."""

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

    def emit_many(self, rows: Sequence[Sequence[Any]], msg_id: Any = None,
                  stream: str = "default") -> int:
        """Emit each of ``rows`` on ``stream``, in order; returns how many rows went out.
        With ``msg_id`` every tuple is a root of one tracked tree: ``ack(msg_id)`` follows
        once all of them were fully processed, ``fail(msg_id)`` (once) if any failed or the
        tree timed out; the spout's ``emitted`` counts the tree once, as its ``acked`` and
        ``pending`` do. A row that cannot be emitted raises before any row went out."""
        if msg_id is None or not self._num_ackers or len(rows) == 1:
            for values in rows:
                route, targets = self._targets(values, stream)
                self._send(values, msg_id if len(rows) == 1 else None, route.source, targets)
            if msg_id is not None and len(rows) != 1 and self._num_ackers == 0:
                self.immediate_acks.append(msg_id)
            return len(rows)
        routed = [self._targets(values, stream) for values in rows]
        n = len(rows)
        self.emit_count += n
        self._stats.emitted += 1
        outbox, ids = self._outbox, self._ids
        root: Any = int(ids.root())
        val: i64 = 0
        size = 0
        for values, (route, targets) in zip(rows, routed, strict=True):
            if self._debug:
                self._log_emit(values, stream, targets)
            src = route.source
            for t in targets:
                edge = ids.take()
                val ^= edge
                outbox.push(t, Tuple(values, src, t, root, edge))
            size += values_bytes(values)
        self._track(root, msg_id, size)
        outbox.send(root, (INIT, root, val, self._task_id))
        return n

    def _track(self, root: Any, msg_id: Any, size: int) -> None:
        """Record the tree of ``root``: its ``msg_id``, its weight if large, its start time
        if sampled."""
        self._pending[root] = msg_id
        if size >= LARGE_TREE_BYTES:
            self.large[root] = size
            self.large_bytes += size
        self._sample_next -= 1
        if self._sample_next == 0:
            self._sample_next = self._sample_every
            self.started[root] = self._clock()

    def _send(self, values: Sequence[Any], msg_id: Any, src: Source, targets: list[int]) -> None:
        self.emit_count += 1
        self._stats.emitted += 1
        outbox = self._outbox
        if self._debug:
            self._log_emit(values, src.stream, targets)
        if msg_id is None or not self._num_ackers:
            for t in targets:
                outbox.push(t, Tuple(values, src, t))
            if msg_id is not None:
                self.immediate_acks.append(msg_id)
            return
        ids = self._ids
        root: Any = int(ids.root())  # boxed once: the pending key, the INIT, every tuple
        val: i64 = 0
        for t in targets:
            edge = ids.take()
            val ^= edge
            outbox.push(t, Tuple(values, src, t, root, edge))
        self._track(root, msg_id, tree_bytes(values))
        outbox.send(root, (INIT, root, val, self._task_id))

    def decided(self, root: int) -> None:
        """The tree of ``root`` was acked or failed: its values no longer count as held."""
        size = self.large.pop(root, 0)
        self.large_bytes -= size
