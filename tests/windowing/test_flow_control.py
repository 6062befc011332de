"""Flow control beside bolts that hold tuples by design, on virtual time: a spout feeding a
10 s sliding window, in processing or in event time, runs at its source's pace (the
adaptive limit would read the window's hold as queueing and starve it, or in event time
stop it for good). One feeding a stateful bolt is paced by its checkpoints, within max
spout pending (tests/state/test_paced_spout.py)."""

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
    """Emits ``total`` numbered tuples at ``rate`` per second of loop time; records acks."""

    def __init__(self, acked: set[int], failed: list[int], rate: int = RATE,
                 total: int = TOTAL) -> None:
        self.acked, self.failed_ids = acked, failed
        self.rate, self.total = rate, total

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n", "ts"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.loop = asyncio.get_running_loop()
        self.start = self.loop.time()
        self.next = 0

    async def next_tuple(self) -> None:
        due = min(self.total, int((self.loop.time() - self.start) * self.rate) + 1)
        if self.next >= due:
            await asyncio.sleep(0.01)
        while self.next < due:
            self.collector.emit([self.next, self.next * 1000 // self.rate], msg_id=self.next)
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


async def test_an_event_time_window_with_a_long_timeout_is_not_stopped() -> None:
    acked: set[int] = set()
    failed: list[int] = []
    sizes: list[int] = []
    window = (CountWindow(sizes).with_window(Duration(10), Duration(1))
              .with_timestamp_field("ts").with_watermark_interval(Duration(0.01)))
    b = TopologyBuilder()
    b.set_spout("numbers", PacedSpout(acked, failed))
    b.set_bolt("window", window).shuffle_grouping("numbers")
    # With a 600 s timeout the adaptive limit's target is a minute; a 64-tree limit would
    # never move the watermark past a window of 10,000 tuples.
    conf = {"topology.message.timeout.secs": 600}
    async with LocalCluster() as cluster:
        await cluster.submit_topology("events", conf, b.create_topology())
        # All but the last ~11 s of event time leave the window once later tuples came.
        await wait_until(lambda: len(acked) >= TOTAL - 12 * RATE, timeout=60)
        assert limit_of(cluster, "events", "numbers") is None
    assert failed == [] and max(sizes) >= 9 * RATE


async def test_a_stateful_bolt_paces_the_spout_and_the_cap_holds(
        tmp_path: Any, caplog: pytest.LogCaptureFixture) -> None:
    acked: set[int] = set()
    b = TopologyBuilder()
    b.set_spout("numbers", PacedSpout(acked, []))
    b.set_bolt("count", Counter()).shuffle_grouping("numbers")
    conf = {"topology.message.timeout.secs": 30, "topology.max.spout.pending": 5000,
            "topology.state.dir": str(tmp_path)}
    caplog.set_level(logging.INFO, logger="engine")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("counts", conf, b.create_topology())
        await wait_until(lambda: len(acked) >= 5000, timeout=30)
        assert limit_of(cluster, "counts", "numbers") == 5000  # the cap, not a smaller limit
    assert any("spout 'numbers' is paced by bolt 'count''s checkpoints" in r.getMessage()
               for r in caplog.records)
