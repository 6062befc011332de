"""In-memory spouts and a collecting bolt: the embedded default (no Kafka, no Spark).

``ListSpout`` replays failed items, so every item is acked at least once; ``QueueSpout``
takes items from an ``asyncio.Queue`` the embedding service fills; ``CollectBolt``
appends every tuple's values to a shared list.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from engine import Bolt, Spout
from engine.collector import OutputCollector, SpoutOutputCollector
from engine.context import TopologyContext
from engine.topology import OutputFieldsDeclarer
from engine.tuples import Tuple

__all__ = ["CollectBolt", "ListSpout", "QueueSpout"]


class ListSpout(Spout):
    """Emits each item of ``items`` (a sequence of value lists) once, tracked; replays fails.

    With several tasks, task ``i`` of ``n`` takes items ``i, i + n, i + 2n, ...``.
    ``repeat`` cycles the list that many times (``None``: forever). ``acked``/``failed``
    (shared lists, set in ``__init__``) record msg ids, which are ``(cycle, index)``.
    """

    def __init__(self, items: Sequence[Sequence[Any]], fields: Iterable[str],
                 repeat: int | None = 1, per_call: int = 1) -> None:
        self.items = items
        self.fields = list(fields)
        self.repeat = repeat
        self.per_call = per_call
        self.acked: list[Any] = []
        self.failed: list[Any] = []

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(self.fields)

    def open(self, conf: dict[str, Any], context: TopologyContext,
             collector: SpoutOutputCollector) -> None:
        self.collector = collector
        # This task's position in the endless sequence item 0, 1, ..., n-1, 0, 1, ...:
        # task k of m takes positions k, k + m, k + 2m, ...
        self._step = len(context.this_component_tasks())
        self._position = context.task_index
        self._end = None if self.repeat is None else self.repeat * len(self.items)
        self._replay: deque[tuple[int, int]] = deque()

    def exhausted(self) -> bool:
        """True once every item was emitted and no replay is waiting."""
        return not self._replay and (not self.items or (
            self._end is not None and self._position >= self._end))

    def next_tuple(self) -> None:
        items, emit, n = self.items, self.collector.emit, len(self.items)
        for _ in range(self.per_call):
            if self._replay:
                cycle, i = self._replay.popleft()
            elif not n or (self._end is not None and self._position >= self._end):
                return
            else:
                cycle, i = divmod(self._position, n)
                self._position += self._step
            emit(items[i], msg_id=(cycle, i))

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.failed.append(msg_id)
        self._replay.append(msg_id)


class QueueSpout(Spout):
    """Emits the value lists an embedding service puts on ``queue`` (shared by all tasks).

    Failed values are replayed; ``acked`` counts fully processed ones over all tasks.
    """

    def __init__(self, queue: asyncio.Queue[Sequence[Any]], fields: Iterable[str]) -> None:
        self.queue = queue
        self.fields = list(fields)
        self._acked = [0]  # a list, so that every task's copy counts into the same cell

    @property
    def acked(self) -> int:
        """Values fully processed so far, by every task of the component."""
        return self._acked[0]

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(self.fields)

    def open(self, conf: dict[str, Any], context: TopologyContext,
             collector: SpoutOutputCollector) -> None:
        self.collector = collector
        self._next_id = 0
        self._in_flight: dict[int, Sequence[Any]] = {}
        self._replay: deque[int] = deque()

    def next_tuple(self) -> None:
        if self._replay:
            msg_id = self._replay.popleft()
        else:
            try:
                values = self.queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            self._next_id += 1
            msg_id = self._next_id
            self._in_flight[msg_id] = values
        self.collector.emit(self._in_flight[msg_id], msg_id=msg_id)

    def ack(self, msg_id: int) -> None:
        self._in_flight.pop(msg_id, None)
        self._acked[0] += 1

    def fail(self, msg_id: int) -> None:
        if msg_id in self._in_flight:
            self._replay.append(msg_id)


class CollectBolt(Bolt):
    """Appends every input tuple's values to ``sink`` (shared by all tasks) and acks it."""

    def __init__(self, sink: list[Any] | None = None) -> None:
        self.sink: list[Any] = [] if sink is None else sink

    def prepare(self, conf: dict[str, Any], context: TopologyContext,
                collector: OutputCollector) -> None:
        self.collector = collector

    def execute(self, tup: Tuple) -> None:
        if not tup.is_tick():
            self.sink.append(list(tup.values))
        self.collector.ack(tup)
