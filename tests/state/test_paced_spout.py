"""A spout feeding a stateful bolt, without ``topology.max.spout.pending``, on virtual time:
its trees in flight follow what the checkpoint round allows. It keeps its source's pace
when the checkpoints flow, and stops at a bounded number of trees when they stall."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine import LocalCluster, Spout, TopologyBuilder
from engine.flow_control import HOLD_MAX_LIMIT, HOLD_MIN_LIMIT
from engine.state import KeyValueState, StatefulBolt
from engine.testing import VirtualTimePolicy, wait_until
from tests.windowing.test_flow_control import PacedSpout


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()


class Sum(StatefulBolt):
    """Adds the numbers up in its state; ``stall`` set makes every commit wait forever."""

    def __init__(self, stall: asyncio.Event | None = None) -> None:
        self.stall = stall

    def declare_output_fields(self, declarer: Any) -> None:
        pass

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, tup: Any) -> None:
        self.state.put("sum", self.state.get("sum", 0) + tup["n"])
        self.collector.ack(tup)

    async def pre_commit(self, txid: int) -> None:
        if self.stall is not None and self.stall.is_set():
            await asyncio.Event().wait()


class Idle(Spout):
    """Emits nothing."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])

    def next_tuple(self) -> None:
        pass


def topology(spout: Spout, stall: asyncio.Event | None = None) -> Any:
    """``spout`` -> ``sum``; with ``stall``, a second stateful bolt on an idle spout whose
    commits stop once ``stall`` is set: checkpoints then stall while ``sum`` keeps going."""
    b = TopologyBuilder()
    b.set_spout("numbers", spout)
    b.set_bolt("sum", Sum()).shuffle_grouping("numbers")
    if stall is not None:
        b.set_spout("idle", Idle())
        b.set_bolt("blocker", Sum(stall)).shuffle_grouping("idle")
    return b.create_topology()


def spout_stats(cluster: LocalCluster, name: str) -> Any:
    return cluster.stats(name)["components"]["numbers"]


async def test_the_spout_keeps_its_pace_with_no_cap(tmp_path: Any) -> None:
    rate, total = 20_000, 60_000  # 40,000 trees a 2 s round: 8 times Storm's usual cap
    acked: set[int] = set()
    conf = {"topology.state.dir": str(tmp_path)}
    loop = asyncio.get_running_loop()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("paced", conf, topology(PacedSpout(acked, [], rate, total)))
        start = loop.time()
        await wait_until(lambda: len(acked) == total, timeout=60)
        took = loop.time() - start
        limit = spout_stats(cluster, "paced")["in_flight_limit"]
        latency = cluster.stats("paced")["complete_latency_ms"]
    assert took < total / rate + 2.5, took  # a commit or two after the last emit
    assert HOLD_MIN_LIMIT < limit <= HOLD_MAX_LIMIT
    assert latency["p50"] < 1500  # about one checkpoint interval (1 s), under load


async def test_a_stalled_checkpoint_stops_the_spout_at_a_bounded_count(tmp_path: Any) -> None:
    rate, total = 1000, 40_000
    acked: set[int] = set()
    stall = asyncio.Event()
    conf = {"topology.state.dir": str(tmp_path), "topology.message.timeout.secs": 120}
    async with LocalCluster() as cluster:
        spout = PacedSpout(acked, [], rate, total)
        await cluster.submit_topology("stalled", conf, topology(spout, stall))
        await wait_until(lambda: len(acked) >= 3000, timeout=30)
        stall.set()  # from the next commit on, ``sum``'s acks are held for good
        await asyncio.sleep(30)  # 30 s of virtual time: 30,000 tuples due from the source
        pending = spout_stats(cluster, "stalled")["pending"]
        limit = spout_stats(cluster, "stalled")["in_flight_limit"]
        await cluster.kill_topology("stalled", wait_secs=0)
    # 1,000 trees a second need 2,000-4,000 in flight: the floor bounds them.
    assert limit == HOLD_MIN_LIMIT
    assert limit <= pending <= limit + 100, (pending, limit)  # one call's emits past it
