"""Timeouts, reset_timeout and tick tuples, on virtual time: exact, and no real waiting."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine import Bolt, Config, LocalCluster, TopologyBuilder
from engine.testing import FeederSpout, VirtualTimePolicy, wait_until
from tests.engine.helpers import Hold
from tests.engine.test_edge_cases import WaitingSpout


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()


def conf(**kw: Any) -> Config:
    c = Config({"topology.message.timeout.secs": 30})
    c.update({k.replace("_", "."): v for k, v in kw.items()})
    return c


def holding(spout: Any, hold: Hold) -> Any:
    """``spout`` into a bolt that never acks: every tracked tree times out."""
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("hold", hold).shuffle_grouping("s")
    return b.create_topology()


async def test_timeout_fails_the_tree_within_one_wheel_tick() -> None:
    spout, hold = FeederSpout(["v"]), Hold()
    clock = asyncio.get_running_loop().time
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(), holding(spout, hold))
        start = clock()
        spout.feed(["x"], msg_id="late")
        await wait_until(lambda: spout.events, timeout=60)
        elapsed = clock() - start
        assert cluster.stats("t")["components"]["__acker"]["timed_out"] == 1
    assert spout.events == [("fail", "late")]
    assert 30.0 <= elapsed < 30.0 + 30 / 8 + 0.1  # at most a wheel tick late


async def test_reset_timeout_keeps_a_slow_tree_alive() -> None:
    class Resetting(Bolt):
        def prepare(self, conf: Any, context: Any, collector: Any) -> None:
            self.collector = collector

        async def execute(self, tup: Any) -> None:
            for _ in range(6):  # 54 s of work against a 30 s timeout
                await asyncio.sleep(9)
                self.collector.reset_timeout(tup)
            self.collector.ack(tup)

    spout = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("slow", Resetting()).shuffle_grouping("s")
    spout.feed(["x"], msg_id="slow")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(), b.create_topology())
        await wait_until(lambda: spout.events, timeout=120)
    assert spout.events == [("ack", "slow")]


async def test_tick_tuples_reach_every_task_at_their_frequency() -> None:
    class Ticks(Bolt):
        def __init__(self) -> None:
            self.ticks: list[tuple[int, float]] = []

        def prepare(self, conf: Any, context: Any, collector: Any) -> None:
            self.collector, self.task_id = collector, context.task_id

        def execute(self, tup: Any) -> None:
            if tup.is_tick():
                self.ticks.append((self.task_id, asyncio.get_running_loop().time()))
            self.collector.ack(tup)

    ticks = Ticks()
    b = TopologyBuilder()
    b.set_spout("s", FeederSpout(["v"]))
    b.set_bolt("ticks", ticks, 2).shuffle_grouping("s").add_configuration(
        "topology.tick.tuple.freq.secs", 5)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(), b.create_topology())
        start = asyncio.get_running_loop().time()
        await asyncio.sleep(16)
        assert cluster.stats("t")["pending"] == 0
    per_task: dict[int, list[float]] = {}
    for task, at in ticks.ticks:
        per_task.setdefault(task, []).append(round(at - start, 3))
    assert list(per_task.values()) == [[5.0, 10.0, 15.0], [5.0, 10.0, 15.0]]


async def test_async_spout_waiting_for_input_still_sends_and_times_out() -> None:
    queue: asyncio.Queue[Any] = asyncio.Queue()
    spout, hold = WaitingSpout(queue), Hold()
    clock = asyncio.get_running_loop().time
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(), holding(spout, hold))
        start = clock()
        await queue.put("a")
        await wait_until(lambda: hold.held, timeout=1)  # sent at once, not after 100 emits
        assert clock() - start < 0.2
        await wait_until(lambda: spout.events, timeout=60)
        assert spout.events == [("fail", "a")]
        assert clock() - start < 30 + 30 / 8 + 0.2


async def test_timeouts_reach_a_spout_blocked_by_a_full_queue() -> None:
    class Sleepy(Bolt):
        async def execute(self, tup: Any) -> None:
            await asyncio.sleep(120)

    spout = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("slow", Sleepy()).shuffle_grouping("s")
    for i in range(300):
        spout.feed([i], msg_id=i)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(topology_executor_receive_buffer_size=1),
                                      b.create_topology())
        await wait_until(lambda: spout.events, timeout=40)
        await cluster.kill_topology("t")
    assert spout.events[0][0] == "fail"
