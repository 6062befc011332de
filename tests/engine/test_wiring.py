"""Wiring is a pure function of topology and config: checked here without an event loop."""

from __future__ import annotations

from typing import Any

from engine import Config, TopologyBuilder
from engine.config import validate_config
from engine.testing import CaptureBolt, FeederSpout
from engine.wiring import ExecutorPlan, plan, split
from tests.engine.helpers import Split


def _wiring(**component_conf: dict[str, Any]) -> Any:
    b = TopologyBuilder()
    b.set_bolt("split", Split(), 2).shuffle_grouping("s").set_num_tasks(5)
    b.set_spout("s", FeederSpout(["sentence"]), 2)
    b.set_bolt("sink", CaptureBolt()).fields_grouping("split", ["word"])
    topology = b.create_topology()
    conf = validate_config(Config({"topology.acker.executors": 2}), "t")
    comp = {d.id: validate_config({**conf, **component_conf.get(d.id, {})}, d.id)
            for d in topology.components.values()}
    return plan(topology, conf, comp)


def test_task_ids_start_at_one_spouts_first() -> None:
    w = _wiring()
    assert w.component_tasks == {"s": [1, 2], "split": [3, 4, 5, 6, 7], "sink": [8]}


def test_tasks_spread_over_executors_in_contiguous_runs() -> None:
    w = _wiring(split={"topology.executor.receive.buffer.size": 64})
    size = w.acker_queue_size
    assert w.executors == [
        ExecutorPlan(0, "s", True, (1,), size),
        ExecutorPlan(1, "s", True, (2,), size),
        ExecutorPlan(2, "split", False, (3, 4, 5), 64),
        ExecutorPlan(3, "split", False, (6, 7), 64),
        ExecutorPlan(4, "sink", False, (8,), size),
    ]
    assert w.task_executor == [0, 0, 1, 2, 2, 2, 3, 3, 4]
    assert w.spout_executors == [0, 1] and w.num_ackers == 2


def test_downstream_lists_every_bolt_a_tuple_can_reach_nearest_first() -> None:
    w = _wiring()
    assert [d.id for d in w.downstream("s")] == ["split", "sink"]
    assert [d.id for d in w.downstream("split")] == ["sink"]
    assert w.downstream("sink") == []


def test_subscribers_per_source_stream() -> None:
    subs = _wiring().subscribers
    assert {k: [(d.id, s.kind) for d, s in v] for k, v in subs.items()} == {
        ("s", "default"): [("split", "shuffle")],
        ("split", "default"): [("sink", "fields")],
    }


def test_split_never_makes_empty_executors() -> None:
    assert split([1, 2], 5) == [[1], [2]]
    assert split(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]
