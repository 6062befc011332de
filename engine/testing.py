"""Test kit: spouts and bolts that record what happened, and virtual time.

Records live in lists set in ``__init__``, so every task of a component (each a copy)
appends to the same list and a test can compare them after a run.

Virtual time (see ``engine.virtual_time`` for the details): ``VirtualTimePolicy`` makes
pytest-asyncio run a module's tests on a loop whose clock jumps to the next timer when
every task is idle, so timeouts, ticks and back-off cost no real seconds::

    @pytest.fixture
    def event_loop_policy():
        return VirtualTimePolicy()

This module is also a pytest plugin (``pytest_plugins = ("engine.testing",)``) giving the
fixture ``virtual_loop``: a fresh ``VirtualTimeLoop`` for a plain ``def`` test, closed
after it (``virtual_loop.run(coro)`` runs a coroutine on it). ``wait_until`` reads the
loop's clock, so its ``timeout`` is virtual on such a loop.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from engine.collector import OutputCollector
from engine.components import Bolt, Spout
from engine.context import TopologyContext
from engine.spout_collector import SpoutOutputCollector
from engine.topology import OutputFieldsDeclarer
from engine.tuples import Tuple
from engine.virtual_time import VirtualTimeLoop, VirtualTimePolicy

__all__ = ["CaptureBolt", "FailOn", "FeederSpout", "VirtualTimeLoop", "VirtualTimePolicy",
           "virtual_loop", "wait_until"]


class FeederSpout(Spout):
    """Emits what a test feeds it; records ``("ack", msg_id)`` / ``("fail", msg_id)`` events.

    ``feed`` reaches the task with index 0 unless ``task_index`` is given.
    """

    def __init__(self, fields: Iterable[str], stream: str = "default") -> None:
        self.fields = list(fields)
        self.stream = stream
        self.events: list[tuple[str, Any]] = []
        self._inboxes: dict[int, deque[tuple[Sequence[Any], Any]]] = {}
        self.emitted: list[tuple[Sequence[Any], Any]] = []

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(self.fields, self.stream)

    def feed(self, values: Sequence[Any], msg_id: Any = None, task_index: int = 0) -> None:
        """Queue ``values`` for emission (tracked when ``msg_id`` is given)."""
        self._inboxes.setdefault(task_index, deque()).append((values, msg_id))

    def open(self, conf: dict[str, Any], context: TopologyContext,
             collector: SpoutOutputCollector) -> None:
        self.collector = collector
        self.inbox = self._inboxes.setdefault(context.task_index, deque())

    def next_tuple(self) -> None:
        if self.inbox:
            values, msg_id = self.inbox.popleft()
            self.emitted.append((values, msg_id))
            self.collector.emit(values, msg_id=msg_id, stream=self.stream)

    def ack(self, msg_id: Any) -> None:
        self.events.append(("ack", msg_id))

    def fail(self, msg_id: Any) -> None:
        self.events.append(("fail", msg_id))

    def acked(self) -> list[Any]:
        """Msg ids acked so far, in order."""
        return [m for kind, m in self.events if kind == "ack"]

    def failed(self) -> list[Any]:
        """Msg ids failed so far, in order."""
        return [m for kind, m in self.events if kind == "fail"]


class FailOn:
    """A predicate over values: ``FailOn(lambda v: v[0] == "poison")``, used by CaptureBolt."""

    def __init__(self, predicate: Callable[[Sequence[Any]], bool]) -> None:
        self.predicate = predicate

    def __call__(self, values: Sequence[Any]) -> bool:
        return bool(self.predicate(values))


class CaptureBolt(Bolt):
    """Records ``(task_id, values)`` of every tuple, then acks it (or fails it on ``fail_on``)."""

    def __init__(self, fail_on: FailOn | None = None, ack: bool = True) -> None:
        self.fail_on = fail_on
        self.do_ack = ack
        self.captured: list[tuple[int, list[Any]]] = []
        self.tuples: list[Tuple] = []

    def prepare(self, conf: dict[str, Any], context: TopologyContext,
                collector: OutputCollector) -> None:
        self.collector = collector
        self.task_id = context.task_id

    def execute(self, tup: Tuple) -> None:
        self.captured.append((self.task_id, list(tup.values)))
        self.tuples.append(tup)
        if self.fail_on is not None and self.fail_on(tup.values):
            self.collector.fail(tup)
        elif self.do_ack:
            self.collector.ack(tup)

    def values(self) -> list[list[Any]]:
        """The captured values, without task ids."""
        return [v for _, v in self.captured]


async def wait_until(predicate: Callable[[], bool], timeout: float = 5.0,
                     interval: float = 0.005) -> float:
    """Wait until ``predicate()`` is true; return the seconds waited; TimeoutError after
    ``timeout``."""
    clock = asyncio.get_running_loop().time
    start = clock()
    while not predicate():
        if clock() - start > timeout:
            raise TimeoutError(f"condition not met within {timeout}s")
        await asyncio.sleep(interval)
    return clock() - start


def _virtual_loop() -> Iterator[VirtualTimeLoop]:
    """A fresh ``VirtualTimeLoop`` for one test, closed afterwards."""
    loop = VirtualTimeLoop()
    try:
        yield loop
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


try:
    import pytest
except ImportError:  # the test kit works without pytest; only the fixture needs it
    virtual_loop = _virtual_loop
else:
    virtual_loop = pytest.fixture(name="virtual_loop")(_virtual_loop)
