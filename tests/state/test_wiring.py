"""The builder wires checkpointing in when a bolt is stateful, and only then."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from engine import Bolt, ConfigError, TopologyBuilder
from engine.config import validate_config
from engine.state import StatefulBolt
from engine.state.checkpoint import CHECKPOINT_COMPONENT, CHECKPOINT_STREAM, CheckpointSpout
from engine.state.executor import CheckpointForwarder, StatefulBoltExecutor
from engine.testing import CaptureBolt, FeederSpout
from engine.windowing import BaseWindowedBolt, Count
from engine.windowing.executor import WindowedBoltExecutor


class Split(Bolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])


class Count_(StatefulBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "count"])


class Window(BaseWindowedBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])


def builder(stateful: bool) -> TopologyBuilder:
    b = TopologyBuilder()
    b.set_spout("a", FeederSpout(["line"]))
    b.set_spout("b", FeederSpout(["line"]))
    b.set_bolt("split", Split(), 2).shuffle_grouping("a").shuffle_grouping("b")
    b.set_bolt("count", Count_() if stateful else Split(), 3).fields_grouping("split", ["word"])
    b.set_bolt("window", Window().with_window(Count(5))).shuffle_grouping("split")
    b.set_bolt("sink", CaptureBolt()).shuffle_grouping("count").shuffle_grouping("window")
    return b


def checkpoint_inputs(topology: Any, cid: str) -> list[tuple[str, str]]:
    return [(s.source, s.kind) for s in topology.components[cid].inputs
            if s.stream == CHECKPOINT_STREAM]


def test_a_stateful_bolt_brings_the_checkpoint_spout_and_stream() -> None:
    b = builder(stateful=True)
    topology = b.create_topology()
    comps = topology.components
    assert isinstance(comps[CHECKPOINT_COMPONENT].obj, CheckpointSpout)
    assert comps[CHECKPOINT_COMPONENT].num_tasks == 1
    assert isinstance(comps["count"].obj, StatefulBoltExecutor)
    for cid in ("split", "window", "sink"):
        assert isinstance(comps[cid].obj, CheckpointForwarder)
    assert isinstance(comps["window"].obj.inner, WindowedBoltExecutor)
    # Spouts are stood in for by the checkpoint spout, once; bolts by their own stream.
    assert checkpoint_inputs(topology, "split") == [(CHECKPOINT_COMPONENT, "all")]
    assert checkpoint_inputs(topology, "count") == [("split", "all")]
    assert checkpoint_inputs(topology, "sink") == [("count", "all"), ("window", "all")]
    assert CHECKPOINT_STREAM in comps["sink"].streams
    again = b.create_topology()  # the builder's own definitions were left as declared
    assert isinstance(again.components["count"].obj, StatefulBoltExecutor)
    assert isinstance(again.components["count"].obj.inner, Count_)
    assert checkpoint_inputs(again, "count") == [("split", "all")]


def test_without_a_stateful_bolt_nothing_is_added() -> None:
    topology = builder(stateful=False).create_topology()
    assert CHECKPOINT_COMPONENT not in topology.components
    assert isinstance(topology.components["split"].obj, Split)
    assert isinstance(topology.components["window"].obj, WindowedBoltExecutor)
    assert all(not checkpoint_inputs(topology, c) for c in topology.components)


@pytest.mark.parametrize(("key", "value"), [
    ("topology.state.checkpoint.interval.ms", 0),
    ("topology.state.checkpoint.interval.ms", 1.5),
    ("topology.state.dir", 3),
    ("topology.state.dir", ""),
])
def test_state_config_is_checked(key: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=f"config '{key}' must be"):
        validate_config({key: value})


def test_state_config_defaults() -> None:
    conf = validate_config({})
    assert conf["topology.state.checkpoint.interval.ms"] == 1000
    assert conf["topology.state.dir"] == ".stormloop-state"


class AsyncCount(StatefulBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "count"])

    async def pre_commit(self, txid: int) -> None:
        pass


def test_sync_bolts_run_as_sync_bolts_and_async_ones_stay_async() -> None:
    comps = builder(stateful=True).create_topology().components
    # Every method a sync bolt's executor calls is sync: the engine then calls it without a
    # coroutine per tuple (it decides by whether ``execute`` is a coroutine function).
    assert not inspect.iscoroutinefunction(comps["count"].obj.execute)
    assert not inspect.iscoroutinefunction(comps["split"].obj.execute)
    b = TopologyBuilder()
    b.set_spout("a", FeederSpout(["word"]))
    b.set_bolt("count", AsyncCount()).shuffle_grouping("a")
    count = b.create_topology().components["count"].obj
    assert isinstance(count, StatefulBoltExecutor)
    assert inspect.iscoroutinefunction(count.execute)  # an async hook needs the event loop
