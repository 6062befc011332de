"""A slow async bolt's batch: acks leave as it goes and executed tuples are let go, on
virtual time."""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any

import pytest

from engine import Bolt, Config, LocalCluster, Spout, TopologyBuilder
from engine.testing import VirtualTimePolicy, wait_until


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()


class Payload:
    """A value that can be watched through a weak reference."""


class BurstSpout(Spout):
    """Emits ``n`` tracked tuples in its first round (one batch), then nothing."""

    def __init__(self, n: int, log: list[Any]) -> None:
        self.n = n
        self.log = log  # shared with the copy the engine runs

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["i", "payload"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.sent = 0

    def next_tuple(self) -> None:
        while self.sent < self.n:
            payload = Payload()
            self.log.append(("emit", self.sent, weakref.ref(payload)))
            self.collector.emit([self.sent, payload], msg_id=self.sent)
            self.sent += 1

    def ack(self, msg_id: Any) -> None:
        self.log.append(("ack", msg_id, asyncio.get_running_loop().time()))


class Slow(Bolt):
    """Takes 0.1 s per tuple without holding the loop; notes which payloads are still alive."""

    def __init__(self, log: list[Any]) -> None:
        self.log = log

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    async def execute(self, tup: Any) -> None:
        await asyncio.sleep(0.1)
        self.collector.ack(tup)
        gc.collect()
        alive = sum(1 for e in self.log if e[0] == "emit" and e[2]() is not None)
        self.log.append(("alive", tup[0], alive))


def topology(log: list[Any], n: int) -> Any:
    b = TopologyBuilder()
    b.set_spout("s", BurstSpout(n, log))
    b.set_bolt("slow", Slow(log)).shuffle_grouping("s")
    return b.create_topology()


async def test_acks_leave_while_the_batch_runs_and_executed_tuples_are_let_go() -> None:
    log: list[Any] = []
    clock = asyncio.get_running_loop().time
    async with LocalCluster() as cluster:
        start = clock()
        await cluster.submit_topology("t", Config(), topology(log, 20))
        await wait_until(lambda: sum(e[0] == "ack" for e in log) == 20, timeout=10)
    acks = [e[2] - start for e in log if e[0] == "ack"]
    assert acks[0] < 0.3  # not at the end of the 2 s batch
    assert acks == sorted(acks) and acks[-1] >= 1.99
    alive = [e[2] for e in log if e[0] == "alive"]
    # The tuple being executed is still referenced; those executed before it are gone.
    assert alive[-1] <= 2 and alive[0] >= 19
