"""Stateful windowed bolts: a restarted topology does not re-fire windows it evaluated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import Config, LocalCluster, TopologyBuilder, TopologyError
from engine.state import KeyValueState, StatefulBolt
from engine.state.store import SqliteStateStore, state_path
from engine.testing import wait_until
from engine.windowing import BaseStatefulWindowedBolt, BaseWindowedBolt, Count, TupleWindow
from tests.state.helpers import DurableLog, LogSpout


class RunningSum(BaseStatefulWindowedBolt):
    """Adds each window's values to a checkpointed total; journals windows and commits."""

    def __init__(self, journal: list[Any]) -> None:
        self.journal = journal

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["total"])

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, window: TupleWindow) -> None:
        self.journal.append(("window", [t["offset"] for t in window.get()]))
        total = self.state.get("total", 0) + sum(t["value"] for t in window.get())
        self.state.put("total", total)
        self.collector.emit([total])

    def pre_commit(self, txid: int) -> None:
        self.journal.append(("commit", txid))


def topology(log: DurableLog, journal: list[Any]) -> Any:
    b = TopologyBuilder()
    b.set_spout("numbers", LogSpout(log))
    b.set_bolt("sum", RunningSum(journal).with_tumbling_window(Count(3))
               .with_message_id_field("offset")).shuffle_grouping("numbers")
    return b.create_topology()


def windows(journal: list[Any]) -> list[list[int]]:
    return [entry[1] for entry in journal if entry[0] == "window"]


async def test_a_restart_refills_the_window_without_firing_it_again(tmp_path: Path) -> None:
    conf = Config({"topology.state.dir": str(tmp_path),
                   "topology.state.checkpoint.interval.ms": 20})
    log = DurableLog(list(range(100, 109)))  # offsets 0..8, values 100..108
    first: list[Any] = []
    async with LocalCluster() as cluster:
        await cluster.submit_topology("sums", conf, topology(log, first))
        await wait_until(lambda: len(windows(first)) == 3)
        n = len(first)
        await wait_until(lambda: any(e[0] == "commit" for e in first[n:]))
        await wait_until(lambda: log.acked == set(range(6)))  # 0..5 expired, then committed
        await cluster.kill_topology("sums", wait_secs=0)
    assert windows(first) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]

    log.entries.extend(range(109, 112))  # offsets 9..11 arrive while it is down
    second: list[Any] = []
    async with LocalCluster() as cluster:
        await cluster.submit_topology("sums", conf, topology(log, second))
        await wait_until(lambda: len(windows(second)) == 1)
        # 6, 7, 8 expired from it; acked at the next commit. 9..11 wait in the window.
        await wait_until(lambda: log.acked == set(range(9)))
        await cluster.kill_topology("sums")
    # 6, 7, 8 were replayed: they refilled the window but did not fire it a second time.
    assert windows(second) == [[9, 10, 11]]


def test_a_stateful_window_needs_a_message_id_field() -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", LogSpout(DurableLog([])))
    b.set_bolt("sum", RunningSum([]).with_tumbling_window(Count(3))).shuffle_grouping("numbers")
    with pytest.raises(TopologyError, match=r"^bolt 'sum': a stateful windowed bolt needs "
                                            r"with_message_id_field"):
        b.create_topology()


class PairSum(BaseWindowedBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["sum"])

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, window: TupleWindow) -> None:
        self.collector.emit([sum(t["value"] for t in window.get())])


class Total(StatefulBolt):
    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, tup: Any) -> None:
        self.state.put("total", self.state.get("total", 0) + tup["sum"])
        self.collector.ack(tup)


async def test_a_plain_window_feeding_a_stateful_bolt(tmp_path: Path) -> None:
    """The window's inputs complete only once the stateful bolt committed their sums."""
    conf = Config({"topology.state.dir": str(tmp_path),
                   "topology.state.checkpoint.interval.ms": 20})
    log = DurableLog([1, 2, 3, 4, 5, 6])
    b = TopologyBuilder()
    b.set_spout("numbers", LogSpout(log))
    b.set_bolt("pairs", PairSum().with_tumbling_window(Count(2))).shuffle_grouping("numbers")
    b.set_bolt("total", Total()).shuffle_grouping("pairs")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("pairs", conf, b.create_topology())
        await wait_until(lambda: log.acked == {0, 1, 2, 3})  # 4, 5 are still in the window
        await cluster.kill_topology("pairs")
    state = SqliteStateStore(state_path(conf).resolve())
    _, committed = state.load("pairs/total-4")  # task ids: checkpoint spout 1, numbers 2, pairs 3
    state.close()
    assert committed["total"] >= 1 + 2 + 3 + 4
