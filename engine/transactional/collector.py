"""The collector of emitters and batch bolts: anchors to the batch, counts per target task.

Counting is what lets the next bolt know when it has a whole batch: after a task is done
with a batch it tells every downstream task how many tuples it sent there
(``CoordinatedBolt``'s ``(attempt, count)`` on the coordination stream).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.anchoring import Collector
    from engine.tuples import Tuple

__all__ = ["BatchOutputCollector"]


class BatchOutputCollector:
    """Emits anchored to ``anchors`` (the current input, or the tuples a batch holds) and
    counts every tuple sent per target task in ``sent``."""

    __slots__ = ("_out", "anchors", "sent")

    def __init__(self, out: Collector, anchors: Tuple | Iterable[Tuple] | None) -> None:
        self._out = out
        self.anchors = anchors
        self.sent: dict[int, int] = {}

    def emit(self, values: Sequence[Any], stream: str = "default") -> list[int]:
        """Emit ``values`` (first value: the ``TransactionAttempt``); returns target tasks."""
        targets = self._out.emit(values, self.anchors, stream)
        sent = self.sent
        for t in targets:
            sent[t] = sent.get(t, 0) + 1
        return targets

    def emit_direct(self, task_id: int, values: Sequence[Any], stream: str = "default") -> None:
        """Emit ``values`` to ``task_id`` on a direct stream."""
        self._out.emit_direct(task_id, values, self.anchors, stream)
        self.sent[task_id] = self.sent.get(task_id, 0) + 1

    def report_error(self, exc: BaseException) -> None:
        """Count and log ``exc`` for this component without failing the batch."""
        self._out.report_error(exc)
