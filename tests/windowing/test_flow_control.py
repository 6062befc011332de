"""Flow control beside bolts that hold tuples by design, on virtual time: a spout feeding a
10 s sliding window runs at its source's pace (the adaptive limit would read the window's
hold as queueing and starve it), while one feeding a bolt with a short hold keeps its limit."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from engine import LocalCluster, Spout, TopologyBuilder
from engine.state import KeyValueState, StatefulBolt
from engine.testing import VirtualTimePolicy, wait_until
from engine.windowing import BaseWindowedBolt, Duration, TupleWindow

RATE = 1000  # tuples per second of virtual time
TOTAL = 20_000


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()


class PacedSpout(Spout):
    """Emits ``TOTAL`` numbered tuples at ``RATE`` per second of loop time; records acks."""

    def __init__(self, acked: set[int], failed: list[int]) -> None:
        self.acked, self.failed_ids = acked, failed

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.loop = asyncio.get_running_loop()
        self.start = self.loop.time()
        self.next = 0

    async def next_tuple(self) -> None:
        due = min(TOTAL, int((self.loop.time() - self.start) * RATE) + 1)
        if self.next >= due:
            await asyncio.sleep(0.01)
        while self.next < due:
            self.collector.emit([self.next], msg_id=self.next)
            self.next += 1

    def ack(self, msg_id: Any) -> None:
        self.acked.add(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.failed_ids.append(msg_id)


class CountWindow(BaseWindowedBolt):
    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        pass

    def execute(self, window: TupleWindow) -> None:
        self.sizes.append(len(window))


class Counter(StatefulBolt):
    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.ack(tup)


def limit_of(cluster: LocalCluster, name: str, spout: str) -> Any:
    return cluster.stats(name)["components"][spout]["in_flight_limit"]


async def test_a_spout_feeding_a_ten_second_window_keeps_its_pace(
        caplog: pytest.LogCaptureFixture) -> None:
    acked: set[int] = set()
    failed: list[int] = []
    sizes: list[int] = []
    b = TopologyBuilder()
    b.set_spout("numbers", PacedSpout(acked, failed))
    b.set_bolt("window", CountWindow(sizes).with_window(Duration(10), Duration(1))) \
        .shuffle_grouping("numbers")
    conf = {"topology.message.timeout.secs": 30}  # flow control on: the default
    caplog.set_level(logging.INFO, logger="engine")
    loop = asyncio.get_running_loop()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("windows", conf, b.create_topology())
        start = loop.time()
        await wait_until(lambda: len(acked) == TOTAL, timeout=60)
        took = loop.time() - start
        assert limit_of(cluster, "windows", "numbers") is None  # pending unset: no cap
    # 20 s of input, each tuple acked once the window slid past it (10-11 s later).
    assert took < TOTAL / RATE + 12, took
    assert failed == []
    assert max(sizes) >= 9 * RATE  # the window held ten seconds' worth of tuples
    assert any("flow control off for spout 'numbers': bolt 'window' holds tuples 11 s"
               in r.getMessage() for r in caplog.records)


async def test_a_short_checkpoint_hold_keeps_flow_control_on(
        tmp_path: Any, caplog: pytest.LogCaptureFixture) -> None:
    acked: set[int] = set()
    b = TopologyBuilder()
    b.set_spout("numbers", PacedSpout(acked, []))
    b.set_bolt("count", Counter()).shuffle_grouping("numbers")
    conf = {"topology.message.timeout.secs": 30, "topology.state.dir": str(tmp_path)}
    caplog.set_level(logging.INFO, logger="engine")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("counts", conf, b.create_topology())
        await wait_until(lambda: len(acked) >= 2000, timeout=30)
        assert limit_of(cluster, "counts", "numbers") is not None  # the adaptive limit
    assert not any("flow control off" in r.getMessage() for r in caplog.records)
