"""The spout's collector: ``emit`` with a ``msg_id`` starts a tracked tree.

A tracked emit takes a fresh root id, one edge id per target task, records the ``msg_id``
in the spout task's pending map under the root and sends the acker one ``INIT`` with the
XOR of the edges; every ``sample_every``-th tree also records its start time, for the
complete latency. Untracked emits (no ``msg_id``, or no ackers) go out bare, and a
``msg_id`` given without ackers is acked at once by the executor (``immediate_acks``).
Delivery and its limits are the shared ``engine.collector.BaseCollector``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, SupportsIndex

from mypy_extensions import i64

from engine.acker import INIT
from engine.collector import BaseCollector
from engine.outbox import Outbox
from engine.routing import Route
from engine.stats import TaskStats
from engine.tuples import Source, Tuple

__all__ = ["SpoutOutputCollector"]


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
        if self._debug:
            self._log_emit(values, src.stream, targets)
        if msg_id is None or not self._num_ackers:
            for t in targets:
                outbox.push(t, Tuple(values, src, t))
            if msg_id is not None:
                self.immediate_acks.append(msg_id)
            return
        ids = self._ids
        root: Any = int(ids.take())  # boxed once: the pending key, the INIT, every tuple
        val: i64 = 0
        for t in targets:
            edge = ids.take()
            val ^= edge
            outbox.push(t, Tuple(values, src, t, root, edge))
        self._pending[root] = msg_id
        self._sample_next -= 1
        if self._sample_next == 0:
            self._sample_next = self._sample_every
            self.started[root] = self._clock()
        outbox.send(root, (INIT, root, val, self._task_id))
