"""A topology's fingerprint: equal for the same topology, and differences said in words; the
runtime hands it to each spout task that declares ``set_topology_fingerprint``."""

from __future__ import annotations

from typing import Any

from engine import BasicBolt, LocalCluster, TopologyBuilder
from engine.keyed import TopologyFingerprint, differences, fingerprint
from engine.state import KeyValueState, StatefulBolt
from engine.testing import CaptureBolt, FeederSpout


class Words(BasicBolt):
    """Declares ``fields``; emits nothing (only the declaration matters here)."""

    def __init__(self, fields: tuple[str, ...] = ("word",)) -> None:
        self.fields = fields

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(list(self.fields))

    def execute(self, tup: Any, collector: Any) -> None:
        pass


class Counted(StatefulBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "count"])

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, tup: Any) -> None:
        pass


def word_count(workers: int = 2, *, count: str = "count", key: str = "word",
               grouping: str = "fields", split_fields: tuple[str, ...] = ("word", "w"),
               stateful: bool = False, tasks: int = 2) -> TopologyFingerprint:
    builder = TopologyBuilder()
    builder.set_spout("lines", FeederSpout(["line"]), tasks)
    builder.set_bolt("split", Words(split_fields), tasks).shuffle_grouping("lines")
    bolt = builder.set_bolt(count, Counted() if stateful else Words(("word", "count")), tasks)
    if grouping == "fields":
        bolt.fields_grouping("split", [key])
    else:
        bolt.shuffle_grouping("split")
    return fingerprint(builder.create_topology(), {"topology.workers": workers})


def said(here: TopologyFingerprint, group: TopologyFingerprint) -> list[str]:
    assert here.digest != group.digest
    return differences(here.summary, group.summary)


def test_the_same_topology_has_the_same_fingerprint_whatever_its_task_counts() -> None:
    assert word_count().digest == word_count(tasks=3).digest
    assert word_count().summary == word_count(tasks=1).summary


def test_workers() -> None:
    assert said(word_count(1), word_count(2)) == ["topology.workers=1 here, 2 in the group"]


def test_key_fields() -> None:
    assert said(word_count(key="w"), word_count()) == [
        "bolt 'count': fields grouping on ['w'] here, ['word'] in the group"]


def test_grouping_kind() -> None:
    assert said(word_count(grouping="shuffle"), word_count()) == [
        "bolt 'count': shuffle grouping from 'split' here, fields grouping on ['word'] in "
        "the group"]


def test_components() -> None:
    assert said(word_count(count="count2"), word_count()) == [
        "components differ: 'count2' only here, 'count' only in the group"]


def test_declared_fields() -> None:
    assert said(word_count(split_fields=("word", "x")), word_count()) == [
        "bolt 'split': stream 'default' of fields ['word', 'x'] here, ['word', 'w'] in the "
        "group"]


def test_stateful_bolts() -> None:
    found = said(word_count(stateful=True), word_count())
    assert "bolt 'count': stateful here, not stateful in the group" in found, found


def test_a_summary_of_another_layout_names_nothing() -> None:
    assert differences(word_count().summary, {"v": 99}) == []
    assert differences(word_count().summary, {"v": 1, "workers": 2}) == []


class Member(FeederSpout):
    """A spout that notes the fingerprint it was given before ``open``."""

    given: list[tuple[str, TopologyFingerprint]] = []

    def set_topology_fingerprint(self, fingerprint: TopologyFingerprint) -> None:
        self.fingerprint = fingerprint

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        Member.given.append((context.component_id, self.fingerprint))
        super().open(conf, context, collector)


async def test_the_runtime_gives_each_spout_task_the_fingerprint_before_open() -> None:
    builder = TopologyBuilder()
    builder.set_spout("lines", Member(["line"]), 2)
    builder.set_bolt("out", CaptureBolt()).shuffle_grouping("lines")
    topology = builder.create_topology()
    Member.given.clear()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("fp", {"topology.workers": 3}, topology)
    expected = fingerprint(topology, {"topology.workers": 3})
    assert Member.given == [("lines", expected), ("lines", expected)]
    assert expected.summary["workers"] == 3


def test_inputs() -> None:
    builder = TopologyBuilder()
    builder.set_spout("lines", FeederSpout(["line"]))
    builder.set_spout("more", FeederSpout(["line"]))
    builder.set_bolt("split", Words(("word", "w"))).shuffle_grouping("more")
    builder.set_bolt("count", Words(("word", "count"))).fields_grouping("split", ["word"])
    other = fingerprint(builder.create_topology(), {"topology.workers": 2})
    assert said(other, word_count()) == [
        "components differ: 'more' only here",
        "bolt 'split': reads 'more' here, 'lines' in the group"]


class Hopping(FeederSpout):
    """A spout whose hops write records of layout ``hop_format``."""

    def __init__(self, layout: int | None) -> None:
        super().__init__(["line"])
        if layout is not None:
            self.hop_format = layout


def hopping(layout: int | None, workers: int = 2) -> TopologyFingerprint:
    builder = TopologyBuilder()
    builder.set_spout("lines", Hopping(layout))
    builder.set_bolt("count", Words(("line", "n"))).fields_grouping("lines", ["line"])
    return fingerprint(builder.create_topology(), {"topology.workers": workers})


def test_a_member_whose_hops_write_another_record_layout_differs() -> None:
    """A member that packs rows into records and one that wrote a row per record (no
    layout stated) cannot share a group above one worker; at one there is no hop."""
    assert said(hopping(2), hopping(None)) == [
        "spout 'lines': its hops write records of layout 2 here, 1 in the group (every "
        "member must run the same stormloop version)"]
    assert hopping(2, workers=1) == hopping(None, workers=1)
    assert hopping(2) == hopping(2)
