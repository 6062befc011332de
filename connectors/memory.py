"""In-memory spouts and a collecting bolt: the embedded default (no Kafka, no Spark).

``ListSpout`` replays failed items up to ``max_retries`` times (10 by default), so every
item is acked at least once or given up with a WARNING line; ``QueueSpout``
takes items from an ``asyncio.Queue`` the embedding service fills, and its ``put`` tells
the caller when an item was fully processed; ``CollectBolt``
appends every tuple's values to a shared list.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from engine import Bolt, Spout
from engine.collector import OutputCollector
from engine.context import TopologyContext
from engine.log_throttle import IntervalWarning
from engine.spout_collector import SpoutOutputCollector
from engine.topology import OutputFieldsDeclarer
from engine.tuples import Tuple

__all__ = ["DEFAULT_MAX_RETRIES", "CollectBolt", "ItemAbandoned", "ItemFailed", "ListSpout",
           "QueueSpout"]

log = logging.getLogger("connectors.memory")

DEFAULT_MAX_RETRIES = 10
"""How often ``ListSpout`` replays a failed item before it gives the item up."""


def _check_retries(who: str, max_retries: int | None) -> None:
    if max_retries is not None and (isinstance(max_retries, bool)
                                    or not isinstance(max_retries, int) or max_retries < 0):
        raise ValueError(f"{who}: max_retries must be >= 0 or None, got {max_retries!r}")


class _GiveUps:
    """Items a spout component gave up (shared by its tasks): a count, and a WARNING line
    for the first one and at most one per 10 s after it, counting those in between."""

    def __init__(self) -> None:
        self.count = 0
        self._warning = IntervalWarning(log)

    def record(self, who: str, values: Sequence[Any], attempts: int, max_retries: int,
               reason: Any) -> None:
        self.count += 1
        why = f": {getattr(reason, 'message', reason)}" if reason is not None else ""
        self._warning.warn(who, "gave up item %r after %d attempts (max_retries=%d)%s",
                           list(values), attempts, max_retries, why)


class ListSpout(Spout):
    """Emits each item of ``items`` (a sequence of value lists) once, tracked; replays fails.

    With several tasks, task ``i`` of ``n`` takes items ``i, i + n, i + 2n, ...``.
    ``repeat`` cycles the list that many times (``None``: forever). ``acked``/``failed``
    (shared lists, set in ``__init__``) record msg ids, which are ``(cycle, index)``.
    A failed item is replayed at most ``max_retries`` times (``None``: forever); then it
    is given up: counted in ``given_up`` and ``metrics()``, and logged as a WARNING (the
    first, then at most one line per 10 s counting the rest).
    """

    def __init__(self, items: Sequence[Sequence[Any]], fields: Iterable[str],
                 repeat: int | None = 1, per_call: int = 1,
                 max_retries: int | None = DEFAULT_MAX_RETRIES) -> None:
        _check_retries("ListSpout", max_retries)
        self.items = items
        self.fields = list(fields)
        self.repeat = repeat
        self.per_call = per_call
        self.max_retries = max_retries
        self.acked: list[Any] = []
        self.failed: list[Any] = []
        self._give_ups = _GiveUps()

    @property
    def given_up(self) -> int:
        """Items given up after ``max_retries`` replays, by every task of the component."""
        return self._give_ups.count

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
        self._fails: dict[tuple[int, int], int] = {}  # msg id -> fails so far, while failing
        self._given_up_here = 0
        self._who = f"ListSpout {context.component_id!r} task {context.task_id}"

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
        if self._fails:
            self._fails.pop(msg_id, None)

    def fail(self, msg_id: Any, reason: Any = None) -> None:
        """Replay ``msg_id``, unless it failed ``max_retries`` times before: give it up."""
        self.failed.append(msg_id)
        fails = self._fails.get(msg_id, 0) + 1
        if self.max_retries is None or fails <= self.max_retries:
            self._fails[msg_id] = fails
            self._replay.append(msg_id)
            return
        self._fails.pop(msg_id, None)
        self._given_up_here += 1
        self._give_ups.record(self._who, self.items[msg_id[1]], fails, self.max_retries,
                              reason)

    def metrics(self) -> dict[str, Any]:
        """This task's figures: ``given_up``, items it stopped replaying."""
        return {"given_up": getattr(self, "_given_up_here", 0)}


class ItemFailed(Exception):
    """A ``QueueSpout`` item's tree failed for the last time (``max_retries`` replays used).

    ``values`` is the item, ``attempts`` how often it was emitted, ``reason`` the engine's
    reason for the last fail when it gave one.
    """

    def __init__(self, values: Sequence[Any], attempts: int, reason: Any = None) -> None:
        why = f": {getattr(reason, 'message', reason)}" if reason is not None else ""
        super().__init__(f"QueueSpout item {list(values)!r} failed after {attempts} "
                         f"attempt(s){why}")
        self.values = values
        self.attempts = attempts
        self.reason = reason


class ItemAbandoned(Exception):
    """A ``QueueSpout`` item was in flight when its spout task closed (topology stopped)."""


class _Tracked:
    """An item put with ``QueueSpout.put``: the values and the future its caller awaits."""

    __slots__ = ("future", "values")

    def __init__(self, values: Sequence[Any], future: asyncio.Future[None]) -> None:
        self.values = values
        self.future = future


def _retrieved(future: asyncio.Future[None]) -> None:
    # A caller may ignore put()'s result; its failure is counted by the engine already,
    # so asyncio need not log "exception was never retrieved" for it.
    if not future.cancelled():
        future.exception()


class QueueSpout(Spout):
    """Emits the value lists an embedding service puts on ``queue`` (shared by all tasks).

    ``put(values)`` enqueues an item and returns a future that resolves once the item's
    tree is acked, or raises ``ItemFailed`` on its final fail; values put on ``queue``
    directly work too, untracked by any future. A failed item is replayed, forever by
    default, at most ``max_retries`` times otherwise. ``acked`` counts fully processed
    items over all tasks. After ``finish()``, the spout is ``exhausted()`` once the queue
    is empty and nothing is in flight, so ``LocalCluster.wait`` returns.
    """

    def __init__(self, queue: asyncio.Queue[Sequence[Any]], fields: Iterable[str],
                 max_retries: int | None = None) -> None:
        _check_retries("QueueSpout", max_retries)
        self.queue = queue
        self.fields = list(fields)
        self.max_retries = max_retries
        # Lists, so that every task's copy counts into the same cell.
        self._acked = [0]
        self._finished = [False]
        self._give_ups = _GiveUps()

    @property
    def given_up(self) -> int:
        """Items failed for the last time (``max_retries`` replays used), by every task."""
        return self._give_ups.count

    def metrics(self) -> dict[str, Any]:
        """This task's figures: ``given_up``, items it stopped replaying."""
        return {"given_up": getattr(self, "_given_up_here", 0)}

    @property
    def acked(self) -> int:
        """Values fully processed so far, by every task of the component."""
        return self._acked[0]

    def put(self, values: Sequence[Any]) -> asyncio.Future[None]:
        """Enqueue ``values`` now; the returned future resolves when the item's tree is
        acked and raises ``ItemFailed`` on its final fail (``ItemAbandoned`` if the topology
        stops first). Call it inside the running loop; a full bounded queue raises
        ``asyncio.QueueFull`` as ``put_nowait`` does. Ignoring the result is fine."""
        if self._finished[0]:
            raise RuntimeError("QueueSpout.put after finish(): the spout takes no more items")
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        future.add_done_callback(_retrieved)
        self.queue.put_nowait(_Tracked(values, future))  # type: ignore[arg-type]
        return future

    def finish(self) -> None:
        """No more items will come: the spout is exhausted once every item is decided."""
        self._finished[0] = True

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(self.fields)

    def open(self, conf: dict[str, Any], context: TopologyContext,
             collector: SpoutOutputCollector) -> None:
        self.collector = collector
        self._next_id = 0
        # msg id -> [values, future or None, attempts]
        self._in_flight: dict[int, list[Any]] = {}
        self._replay: deque[int] = deque()
        self._given_up_here = 0
        self._who = f"QueueSpout {context.component_id!r} task {context.task_id}"

    def exhausted(self) -> bool:
        """True after ``finish()`` once the queue is empty and this task has nothing left."""
        return (self._finished[0] and self.queue.empty() and not self._in_flight
                and not self._replay)

    def next_tuple(self) -> None:
        if self._replay:
            msg_id = self._replay.popleft()
        else:
            try:
                item: Any = self.queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            self._next_id += 1
            msg_id = self._next_id
            if isinstance(item, _Tracked):
                self._in_flight[msg_id] = [item.values, item.future, 0]
            else:
                self._in_flight[msg_id] = [item, None, 0]
        entry = self._in_flight[msg_id]
        entry[2] += 1
        self.collector.emit(entry[0], msg_id=msg_id)

    def ack(self, msg_id: int) -> None:
        entry = self._in_flight.pop(msg_id, None)
        self._acked[0] += 1
        if entry is not None and entry[1] is not None and not entry[1].done():
            entry[1].set_result(None)

    def fail(self, msg_id: int, reason: Any = None) -> None:
        entry = self._in_flight.get(msg_id)
        if entry is None:
            return
        if self.max_retries is None or entry[2] <= self.max_retries:
            self._replay.append(msg_id)
            return
        del self._in_flight[msg_id]
        self._given_up_here += 1
        self._give_ups.record(self._who, entry[0], entry[2], self.max_retries, reason)
        if entry[1] is not None and not entry[1].done():
            entry[1].set_exception(ItemFailed(entry[0], entry[2], reason))

    def close(self) -> None:
        """Fail the futures of items still in flight with ``ItemAbandoned``."""
        for values, future, _ in self._in_flight.values():
            if future is not None and not future.done():
                future.set_exception(ItemAbandoned(
                    f"QueueSpout item {list(values)!r} was in flight when the topology stopped"))
        self._in_flight.clear()
        self._replay.clear()


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
