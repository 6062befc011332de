"""Flow control in a running topology, on virtual time: goodput under overload, the limit in
``stats()``, the warning, the hard cap, and nothing in the way when flow control is off."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any

import pytest

from engine import Bolt, Config, LocalCluster, Spout, TopologyBuilder
from engine.testing import VirtualTimePolicy

EXECUTE_SECS = 0.01  # capacity: 100 trees/s
TIMEOUT = 2


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()


class ReplaySpout(Spout):
    """Emits new ids as fast as allowed, replaying failed ones first (as a Kafka spout does)."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["id", "emitted"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.replay: deque[int] = deque()
        self.next_id = 0

    def next_tuple(self) -> None:
        now = asyncio.get_running_loop().time()
        for _ in range(10):
            if self.replay:
                i = self.replay.popleft()
            else:
                i, self.next_id = self.next_id, self.next_id + 1
            self.collector.emit([i, now], msg_id=i)

    def fail(self, msg_id: Any) -> None:
        self.replay.append(msg_id)


class SlowBolt(Bolt):
    """``EXECUTE_SECS`` per tuple; notes each execution of a tuple whose tree had already
    timed out (wasted work)."""

    def __init__(self, wasted: list[Any]) -> None:
        self.wasted = wasted  # shared with the copy the engine runs

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    async def execute(self, tup: Any) -> None:
        if asyncio.get_running_loop().time() - tup.values[1] >= TIMEOUT:
            self.wasted.append(tup.values[0])
        await asyncio.sleep(EXECUTE_SECS)
        self.collector.ack(tup)


async def overloaded(secs: float, **conf: Any) -> tuple[dict[str, Any], int]:
    """``stats()`` and the wasted executions after ``secs`` of a replaying spout into a
    bolt at 100 trees/s."""
    wasted: list[Any] = []
    b = TopologyBuilder()
    b.set_spout("s", ReplaySpout())
    b.set_bolt("slow", SlowBolt(wasted)).shuffle_grouping("s")
    c = Config({"topology.message.timeout.secs": TIMEOUT})
    c.update({k.replace("_", "."): v for k, v in conf.items()})
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", c, b.create_topology())
        await asyncio.sleep(secs)
        return cluster.stats("t"), len(wasted)


async def test_overload_keeps_goodput_and_wastes_nothing(caplog: Any) -> None:
    caplog.set_level(logging.WARNING, logger="engine")
    stats, wasted = await overloaded(60)
    s = stats["components"]["s"]
    assert s["acked"] >= 0.9 * 60 / EXECUTE_SECS
    assert s["failed_timeout"] == 0
    assert wasted == 0
    limit = s["in_flight_limit"]
    assert isinstance(limit, int) and 1 <= limit <= 0.5 * TIMEOUT / EXECUTE_SECS
    cuts = [r for r in caplog.records if "flow control cut" in r.getMessage()]
    assert cuts and "spout 's'" in cuts[0].getMessage()
    assert len(cuts) <= 60 / 10 + 1  # one line per 10 s interval at most


async def test_pending_50000_is_only_a_cap() -> None:
    stats, _ = await overloaded(30, topology_max_spout_pending=50_000)
    s = stats["components"]["s"]
    assert s["failed_timeout"] == 0
    assert s["acked"] >= 0.9 * 30 / EXECUTE_SECS
    assert s["in_flight_limit"] < 50_000


async def test_without_flow_control_queued_trees_time_out() -> None:
    stats, wasted = await overloaded(30, topology_spout_flow_control=False)
    s = stats["components"]["s"]
    assert wasted > 1000
    assert s["in_flight_limit"] is None
    assert s["failed_timeout"] > 1000  # the storm flow control prevents
    assert s["acked"] < 0.5 * 30 / EXECUTE_SECS


async def test_the_limit_never_exceeds_max_spout_pending() -> None:
    stats, _ = await overloaded(10, topology_max_spout_pending=20)
    assert stats["components"]["s"]["in_flight_limit"] <= 20
    assert stats["spout_pending"] <= 20 + 9  # a call may emit ten


async def test_flow_control_off_reports_the_cap_as_the_limit() -> None:
    stats, _ = await overloaded(1, topology_spout_flow_control=False,
                                   topology_max_spout_pending=300)
    assert stats["components"]["s"]["in_flight_limit"] == 300


async def test_the_limit_in_stats_is_summed_over_the_spout_tasks() -> None:
    b = TopologyBuilder()
    b.set_spout("s", ReplaySpout(), 2)
    b.set_bolt("slow", SlowBolt([])).shuffle_grouping("s")
    off = Config({"topology.spout.flow.control": False, "topology.max.spout.pending": 7})
    on = Config({"topology.max.spout.pending": 7})
    none = Config({"topology.spout.flow.control": False})
    async with LocalCluster() as cluster:
        for name, c in (("off", off), ("on", on), ("none", none)):
            await cluster.submit_topology(name, c, b.create_topology())
        await asyncio.sleep(0.1)
        limits = {n: cluster.stats(n)["components"]["s"]["in_flight_limit"]
                  for n in ("off", "on", "none")}
    assert limits == {"off": 14, "on": 14, "none": None}
