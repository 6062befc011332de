"""Two documented choices, as Storm makes them (docs/components.md): values passed to ``emit``
are shared with the receiving tasks, not copied; ``topology.max.spout.pending`` is checked
between ``next_tuple`` calls, so one call that emits many tuples goes past it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine import Config, LocalCluster, Spout, TopologyBuilder
from engine.testing import CaptureBolt, VirtualTimePolicy, wait_until
from tests.engine.helpers import Hold


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()


class Burst(Spout):
    """Emits ``size`` tracked tuples per ``next_tuple`` call, ``bursts`` times; counts calls
    and keeps every list it emitted (tasks are copies: ``log`` is shared)."""

    def __init__(self, size: int, bursts: int = 1) -> None:
        self.size, self.bursts = size, bursts
        self.log: dict[str, Any] = {"calls": 0, "emitted": []}

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def next_tuple(self) -> None:
        self.log["calls"] += 1
        if self.log["calls"] > self.bursts:
            return
        for _ in range(self.size):
            values = [len(self.log["emitted"])]
            self.log["emitted"].append(values)
            self.collector.emit(values, msg_id=values[0])


async def test_one_next_tuple_call_can_go_past_max_spout_pending() -> None:
    spout, hold = Burst(1000, bursts=2), Hold()
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("hold", hold).shuffle_grouping("s")
    conf = Config({"topology.max.spout.pending": 100, "topology.message.timeout.secs": 600})
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf, b.create_topology())
        await wait_until(lambda: len(hold.held) == 1000)
        await asyncio.sleep(5)
        # The whole first call went out; no second call while 1000 > 100 trees pend.
        assert cluster.stats("t")["spout_pending"] == 1000
        assert spout.log["calls"] == 1
        for collector, tup in hold.held[:950]:
            collector.ack(tup)
        await wait_until(lambda: spout.log["calls"] > 1)
        await wait_until(lambda: len(hold.held) == 2000)
        assert cluster.stats("t")["spout_pending"] == 1050  # the second call overshot too
        await cluster.kill_topology("t", wait_secs=0)


class Reuses(Spout):
    """Emits one list, then changes it in place and emits it again."""

    def __init__(self) -> None:
        self.log: dict[str, Any] = {"buffer": ["first"], "done": False}

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["v"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def next_tuple(self) -> None:
        if self.log["done"]:
            return
        buffer = self.log["buffer"]
        self.collector.emit(buffer)
        buffer[0] = "second"  # after the emit, before any bolt ran
        self.collector.emit(buffer)
        self.log["done"] = True


async def test_emitted_values_are_shared_with_receivers_not_copied() -> None:
    spout, first, second = Reuses(), CaptureBolt(), CaptureBolt()
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("a", first).shuffle_grouping("s")
    b.set_bolt("b", second).shuffle_grouping("s")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", Config(), b.create_topology())
        await wait_until(lambda: len(first.tuples) == 2 and len(second.tuples) == 2)
    # Both emits delivered the one list, as it was when the bolts ran.
    assert first.values() == second.values() == [["second"], ["second"]]
    buffer = spout.log["buffer"]
    assert all(t.values is buffer for t in first.tuples + second.tuples)
