"""The guarantee (docs/guarantees.md): every tracked tree ends in exactly one ack or fail, at
the right time."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import uvloop

from engine import Bolt, Config, LocalCluster, TopologyBuilder
from engine.testing import CaptureBolt, FeederSpout, wait_until
from tests.engine.helpers import BasicUpper, Crash, Failer, Forward, Hold, SlowAck, Split


@pytest.fixture(params=["asyncio", "uvloop"], scope="module")
def event_loop_policy(request: pytest.FixtureRequest) -> asyncio.AbstractEventLoopPolicy:
    """Each reliability test once per event loop implementation."""
    if request.param == "uvloop":
        return uvloop.EventLoopPolicy()
    return asyncio.DefaultEventLoopPolicy()


def conf(**kw: Any) -> Config:
    c = Config({"topology.message.timeout.secs": 30})
    c.update({k.replace("_", "."): v for k, v in kw.items()})
    return c


@pytest.mark.parametrize("ackers", [1, 3])
async def test_tree_completes_when_every_tuple_is_acked(ackers: int) -> None:
    spout, sink = FeederSpout(["sentence"]), CaptureBolt()
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("split", Split(), 2).shuffle_grouping("s")
    b.set_bolt("sink", sink, 3).fields_grouping("split", ["word"])
    for i in range(200):
        spout.feed([f"a b c {i}"], msg_id=i)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(topology_acker_executors=ackers),
                                      b.create_topology())
        await wait_until(lambda: len(spout.events) == 200)
        stats = cluster.stats("t")
        assert stats["pending"] == 0
        assert stats["components"]["__acker"]["acked"] == 200
    assert sorted(spout.acked()) == list(range(200))
    assert spout.failed() == []
    assert len(sink.captured) == 800


async def test_explicit_fail_reaches_the_spout_at_once() -> None:
    spout = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("fwd", Forward()).shuffle_grouping("s")
    b.set_bolt("fail", Failer()).shuffle_grouping("fwd")
    spout.feed(["x"], msg_id="m1")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(), b.create_topology())
        waited = await wait_until(lambda: spout.events)
    assert spout.events == [("fail", "m1")]
    assert waited < 1.0  # not the 30 s timeout


async def test_timeout_fails_in_real_time_smoke() -> None:
    """Real seconds, once: the wheel and the loop agree on time (exact checks run virtual)."""
    spout, hold = FeederSpout(["v"]), Hold()
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("hold", hold).shuffle_grouping("s")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(topology_message_timeout_secs=1),
                                      b.create_topology())
        start = time.monotonic()
        spout.feed(["x"], msg_id="late")
        await wait_until(lambda: spout.events, timeout=5)
        elapsed = time.monotonic() - start
        assert cluster.stats("t")["components"]["__acker"]["timed_out"] == 1
    assert spout.events == [("fail", "late")]
    assert 1.0 <= elapsed < 5.0  # lax: a loaded machine may be late, never early


async def test_zero_ackers_ack_right_after_emit() -> None:
    spout, hold = FeederSpout(["v"]), Hold()
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("hold", hold).shuffle_grouping("s")
    spout.feed(["x"], msg_id=1)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(topology_acker_executors=0),
                                      b.create_topology())
        await wait_until(lambda: spout.events)
        assert cluster.stats("t")["pending"] == 0
    assert spout.events == [("ack", 1)]
    assert hold.held[0][1].roots is None  # nothing tracked


async def test_untracked_emits_are_never_acked_or_failed() -> None:
    spout, sink = FeederSpout(["v"]), CaptureBolt()
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("fail", Failer()).shuffle_grouping("s")
    b.set_bolt("sink", sink).shuffle_grouping("s")
    spout.feed(["x"])
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(), b.create_topology())
        await wait_until(lambda: sink.captured)
        await asyncio.sleep(0.1)
        assert cluster.stats("t")["pending"] == 0
    assert spout.events == []


@pytest.mark.parametrize(("anchored", "outcome"), [(True, "fail"), (False, "ack")])
async def test_only_anchored_descendants_can_fail_the_tree(anchored: bool, outcome: str) -> None:
    spout = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("fwd", Forward(anchored=anchored)).shuffle_grouping("s")
    b.set_bolt("fail", Failer()).shuffle_grouping("fwd")
    spout.feed(["x"], msg_id=7)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(), b.create_topology())
        await wait_until(lambda: spout.events)
    assert spout.events == [(outcome, 7)]


class Join(Bolt):
    """Holds tuples until it has ``n``, then emits one tuple anchored to all of them."""

    def __init__(self, n: int) -> None:
        self.n = n

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["joined"])

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.held: list[Any] = []

    def execute(self, tup: Any) -> None:
        self.held.append(tup)
        if len(self.held) == self.n:
            self.collector.emit(["+".join(t[0] for t in self.held)], anchors=self.held)
            for t in self.held:
                self.collector.ack(t)
            self.held = []


@pytest.mark.parametrize(("last", "outcome"), [(CaptureBolt, "ack"), (Failer, "fail")])
async def test_multi_anchored_tuple_joins_every_tree(last: type, outcome: str) -> None:
    spout = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("join", Join(3)).global_grouping("s")
    b.set_bolt("last", last()).shuffle_grouping("join")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(topology_acker_executors=2),
                                      b.create_topology())
        spout.feed(["a"], msg_id="a")
        spout.feed(["b"], msg_id="b")
        await asyncio.sleep(0.1)
        assert spout.events == []  # the join holds both trees open
        spout.feed(["c"], msg_id="c")
        await wait_until(lambda: len(spout.events) == 3)
        assert cluster.stats("t")["pending"] == 0
    assert sorted(spout.events) == [(outcome, "a"), (outcome, "b"), (outcome, "c")]


async def test_basic_bolt_anchors_acks_and_fails() -> None:
    spout, sink = FeederSpout(["v"]), CaptureBolt()
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("upper", BasicUpper()).shuffle_grouping("s")
    b.set_bolt("sink", sink).shuffle_grouping("upper")
    for value in ("ok", "fail", "crash"):
        spout.feed([value], msg_id=value)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(), b.create_topology())
        await wait_until(lambda: len(spout.events) == 3)
        upper = cluster.stats("t")["components"]["upper"]
    assert sorted(spout.events) == [("ack", "ok"), ("fail", "crash"), ("fail", "fail")]
    assert sink.values() == [["OK"]]
    assert sink.tuples[0].roots  # the emit was anchored
    assert upper["errors"] == 1  # FailedException is not an error; ValueError is


async def test_crashing_bolt_fails_its_tuple_and_keeps_running() -> None:
    spout, crash = FeederSpout(["v"]), Crash(bad=2)
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("crash", crash).shuffle_grouping("s")
    for i in range(5):
        spout.feed([i], msg_id=i)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(), b.create_topology())
        await wait_until(lambda: len(spout.events) == 5)
        stats = cluster.stats("t")["components"]["crash"]
    assert sorted(spout.acked()) == [0, 1, 3, 4]
    assert spout.failed() == [2]
    assert stats["errors"] == 1 and stats["failed"] == 1 and stats["executed"] == 5


async def test_max_spout_pending_bounds_trees_in_flight() -> None:
    spout, hold = FeederSpout(["v"]), Hold()
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("hold", hold).shuffle_grouping("s")
    for i in range(20):
        spout.feed([i], msg_id=i)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(topology_max_spout_pending=5),
                                      b.create_topology())
        await wait_until(lambda: len(hold.held) == 5)
        await asyncio.sleep(0.1)
        assert len(spout.emitted) == 5
        for collector, tup in hold.held[:3]:
            collector.ack(tup)
        await wait_until(lambda: len(spout.emitted) == 8, timeout=2)
        await asyncio.sleep(0.1)
        assert len(spout.emitted) == 8
        assert cluster.stats("t")["spout_pending"] == 5


async def test_kill_drains_pending_trees_then_closes() -> None:
    class Closing(FeederSpout):
        def close(self) -> None:
            self.events.append(("close", None))

    spout, slow = Closing(["v"]), SlowAck(0.05)
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("slow", slow, 2).shuffle_grouping("s")
    for i in range(10):
        spout.feed([i], msg_id=i)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(), b.create_topology())
        await wait_until(lambda: len(spout.emitted) == 10)
        await cluster.kill_topology("t", wait_secs=5)
        assert cluster.topologies() == []
    assert sorted(spout.acked()) == list(range(10))
    assert spout.events[-1] == ("close", None)  # no ack or fail after close
    assert sorted(slow.cleaned) == [2, 3]


async def test_kill_without_wait_closes_at_once() -> None:
    spout, hold = FeederSpout(["v"]), Hold()
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("hold", hold).shuffle_grouping("s")
    spout.feed([1], msg_id=1)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(), b.create_topology())
        await wait_until(lambda: hold.held)
        start = time.monotonic()
        await cluster.kill_topology("t", wait_secs=0)
        assert time.monotonic() - start < 0.5
    assert spout.events == []


async def test_many_trees_with_three_ackers_and_async_bolts() -> None:
    spout, sink = FeederSpout(["v"]), CaptureBolt()
    b = TopologyBuilder()
    b.set_spout("s", spout, 2, num_tasks=4)
    b.set_bolt("slow", SlowAck(0), 2, num_tasks=3).shuffle_grouping("s")
    b.set_bolt("fwd", Forward(), 3).shuffle_grouping("s")
    b.set_bolt("sink", sink).shuffle_grouping("fwd")
    for i in range(2000):
        spout.feed([i], msg_id=i, task_index=i % 4)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf(topology_acker_executors=3),
                                      b.create_topology())
        await wait_until(lambda: len(spout.events) == 2000, timeout=20)
        assert cluster.stats("t")["pending"] == 0
    assert sorted(spout.acked()) == list(range(2000))
