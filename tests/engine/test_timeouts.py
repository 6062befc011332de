"""Timeouts, reset_timeout and tick tuples, on virtual time: exact, and no real waiting."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine import Bolt, Config, LocalCluster, Spout, TopologyBuilder
from engine.acker import INIT, TIMEOUT, AckLedger
from engine.acker_executor import AckerExecutor
from engine.deadlines import DEFAULT_TICK_SECS
from engine.queues import BatchQueue, StampedQueue
from engine.stats import TaskStats
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


class HoldsThenEmits(Spout):
    """Holds the loop ``hold`` seconds (a sync call) in ``open`` and before its first emit;
    records in ``at`` when it emitted and when its tree failed (tasks are copies: the dict
    is shared)."""

    def __init__(self, hold: float) -> None:
        self.hold = hold
        self.at: dict[str, float] = {}

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["v"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        asyncio.get_running_loop().advance(self.hold)  # a slow open, after the ackers exist

    def next_tuple(self) -> None:
        if "emit" not in self.at:
            loop = asyncio.get_running_loop()
            loop.advance(self.hold)
            self.at["emit"] = loop.time()
            self.collector.emit(["x"], msg_id="x")

    def fail(self, msg_id: Any) -> None:
        self.at["fail"] = asyncio.get_running_loop().time()


@pytest.mark.parametrize("hold", [0.15, 0.5, 0.9, 3.0])
async def test_a_tree_emitted_at_the_end_of_a_hold_never_fails_early(hold: float) -> None:
    """The acker's loop was held when the INIT came: the timeout still counts from the emit
    (at the latest), never from the acker's last tick."""
    spout = HoldsThenEmits(hold)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(topology_message_timeout_secs=1),
                                      holding(spout, Hold()))
        await wait_until(lambda: "fail" in spout.at, timeout=10)
    elapsed = spout.at["fail"] - spout.at["emit"]
    assert 1.0 - 1e-9 <= elapsed < 1.0 + 2 * DEFAULT_TICK_SECS + 0.01


async def test_a_held_acker_counts_new_trees_from_when_they_were_sent() -> None:
    """The acker executor alone: a batch read after a hold, its INIT sent at the end of it."""
    loop = asyncio.get_running_loop()
    inbox, spout_queue = StampedQueue(100, loop.time), BatchQueue(100)
    acker = AckerExecutor(AckLedger(1.0, loop.time()), inbox, [spout_queue], [0, 0], [0],
                          loop.time, TaskStats())
    run = asyncio.create_task(acker.run())
    expire = asyncio.create_task(acker.expire())
    try:
        await asyncio.sleep(0.3)  # one tick passed: the next is due at about 0.4
        loop.advance(0.75)  # a sync call holds the loop past that tick ...
        sent = loop.time()
        inbox.put_nowait(([(INIT, 7, 5, 1)], {}))  # ... and its task emits at the end
        outcome = await spout_queue.get()
        assert outcome == [(TIMEOUT, 1, 7)]
        assert 1.0 - 1e-9 <= loop.time() - sent < 1.0 + 2 * DEFAULT_TICK_SECS + 0.01
    finally:
        run.cancel()
        expire.cancel()
