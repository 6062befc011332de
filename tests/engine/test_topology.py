"""create_topology() rejects invalid topologies with one line naming the component."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine import LocalCluster, Spout, TopologyBuilder, TopologyError
from engine.testing import CaptureBolt, FeederSpout
from tests.engine.helpers import Split


def builder() -> TopologyBuilder:
    b = TopologyBuilder()
    b.set_spout("s", FeederSpout(["sentence"]))
    return b


def test_duplicate_id() -> None:
    b = builder()
    b.set_bolt("s", CaptureBolt()).shuffle_grouping("s")
    with pytest.raises(TopologyError, match=r"^bolt 's': duplicate component id; it is already "
                                            r"a spout$"):
        b.create_topology()


def test_reserved_id() -> None:
    b = builder()
    b.set_bolt("__acker", CaptureBolt()).shuffle_grouping("s")
    with pytest.raises(TopologyError, match=r"^bolt '__acker': ids starting with '__' are "
                                            r"reserved"):
        b.create_topology()


def test_unknown_source() -> None:
    b = builder()
    b.set_bolt("x", CaptureBolt()).shuffle_grouping("nope")
    with pytest.raises(TopologyError, match=r"^bolt 'x': shuffle_grouping on unknown component "
                                            r"'nope'; components are \['s', 'x'\]$"):
        b.create_topology()


def test_unknown_stream() -> None:
    b = builder()
    b.set_bolt("x", CaptureBolt()).shuffle_grouping("s", stream="other")
    with pytest.raises(TopologyError, match=r"^bolt 'x': shuffle_grouping on 's' stream 'other',"
                                            r" which it does not declare; it declares "
                                            r"\['default'\]$"):
        b.create_topology()


def test_fields_grouping_on_undeclared_field() -> None:
    b = builder()
    b.set_bolt("split", Split()).shuffle_grouping("s")
    b.set_bolt("count", CaptureBolt()).fields_grouping("split", ["wrd"])
    with pytest.raises(TopologyError, match=r"^bolt 'count': fields_grouping on 'split' uses "
                                            r"field 'wrd'; 'split' declares \['word'\] on "
                                            r"stream 'default'$"):
        b.create_topology()


@pytest.mark.parametrize(("kw", "what", "value"), [
    ({"parallelism": 0}, "parallelism", "0"),
    ({"num_tasks": 0}, "num_tasks", "0"),
    ({"parallelism": -2}, "parallelism", "-2"),
])
def test_parallelism_and_tasks_at_least_one(kw: dict[str, Any], what: str, value: str) -> None:
    b = builder()
    b.set_bolt("x", CaptureBolt(), **kw).shuffle_grouping("s")
    with pytest.raises(TopologyError, match=rf"^bolt 'x': {what} must be an int >= 1, "
                                            rf"got {value}$"):
        b.create_topology()


def test_bolt_without_input() -> None:
    b = builder()
    b.set_bolt("lonely", CaptureBolt())
    with pytest.raises(TopologyError, match=r"^bolt 'lonely': has no input"):
        b.create_topology()


def test_direct_grouping_needs_a_direct_stream() -> None:
    b = builder()
    b.set_bolt("x", CaptureBolt()).direct_grouping("s")
    with pytest.raises(TopologyError, match=r"^bolt 'x': direct_grouping on 's' stream "
                                            r"'default', which is not declared with direct=True$"):
        b.create_topology()


def test_wrong_component_type() -> None:
    b = TopologyBuilder()
    b.set_spout("s", CaptureBolt())  # type: ignore[arg-type]
    with pytest.raises(TopologyError, match=r"^spout 's': expected an instance of Spout, "
                                            r"got CaptureBolt$"):
        b.create_topology()


async def test_duplicate_running_name() -> None:
    topology = builder().create_topology()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, topology)
        with pytest.raises(TopologyError, match=r"^topology 't': a topology with this name is "
                                                r"running$"):
            await cluster.submit_topology("t", {}, topology)


async def test_failing_open_is_reported_with_component_and_task() -> None:
    class Broken(Spout):
        def open(self, conf: Any, context: Any, collector: Any) -> None:
            raise RuntimeError("no source")

    b = TopologyBuilder()
    b.set_spout("src", Broken())
    async with LocalCluster() as cluster:
        with pytest.raises(TopologyError, match=r"^spout 'src' task 1: open raised "
                                                r"RuntimeError: no source$"):
            await cluster.submit_topology("t", {}, b.create_topology())
        assert cluster.topologies() == []


async def test_context_reports_tasks_and_indexes() -> None:
    contexts: list[Any] = []

    class Probe(CaptureBolt):
        def prepare(self, conf: Any, context: Any, collector: Any) -> None:
            contexts.append(context)

    b = builder()
    b.set_bolt("p", Probe(), 2, num_tasks=4).shuffle_grouping("s")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, b.create_topology())
    assert sorted(c.task_id for c in contexts) == [2, 3, 4, 5]
    assert sorted(c.task_index for c in contexts) == [0, 1, 2, 3]
    assert contexts[0].component_tasks("p") == [2, 3, 4, 5]
    assert contexts[0].component_tasks("s") == [1]


def test_a_created_topology_is_frozen_against_its_declarers() -> None:
    b = TopologyBuilder()
    b.set_spout("s", FeederSpout(["v"]))
    declarer = b.set_bolt("sink", CaptureBolt()).shuffle_grouping("s")
    topology = b.create_topology()
    declarer.all_grouping("s").add_configuration("topology.debug", True).set_num_tasks(4)
    sink = topology.components["sink"]
    assert [s.kind for s in sink.inputs] == ["shuffle"]
    assert dict(sink.conf) == {} and sink.num_tasks == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        sink.num_tasks = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        sink.conf["topology.debug"] = True  # type: ignore[index]
    with pytest.raises(TypeError):
        topology.components["other"] = sink  # type: ignore[index]
    with pytest.raises(TypeError):
        topology.components["s"].streams["x"] = sink  # type: ignore[index]
    assert b.create_topology().components["sink"].num_tasks == 4  # the builder goes on


def test_creating_a_plain_topology_imports_neither_windowing_nor_state() -> None:
    # In a fresh interpreter: this test process may have imported both packages already.
    code = """
import sys
from engine import TopologyBuilder
from engine.testing import CaptureBolt, FeederSpout
b = TopologyBuilder()
b.set_spout("s", FeederSpout(["x"]))
b.set_bolt("b", CaptureBolt()).shuffle_grouping("s")
b.create_topology()
print(sorted(m for m in ("engine.windowing", "engine.state") if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"
