"""The submit-time rewrite that carries fields groupings across processes
(``engine/keyed/hops.py``), on a stand-in for a shared spout; the Kafka hop itself is
tested against the test broker (tests/connectors/kafka/test_keyed_processes.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from engine import BasicBolt, Bolt, ConfigError, Spout, TopologyBuilder, TopologyError
from engine.config import validate_config
from engine.keyed import hop_sources, reader_id, with_hops, writer_id
from engine.state import StatefulBolt
from engine.supervisor import worker_argv


class Out(BasicBolt):
    def __init__(self, *fields: str) -> None:
        self.fields = list(fields)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(self.fields)

    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit(list(tup.values))


class Reader(Spout):
    def __init__(self, fields: tuple[str, ...]) -> None:
        self.fields = fields

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(list(self.fields))

    def next_tuple(self) -> None:
        pass


class Writer(Bolt):
    def execute(self, tup: Any) -> None:
        pass


class Shared(Spout):
    """Declares what a shared spout that can carry a fields grouping declares."""

    shared_across_processes = True
    keyed_downstream = False

    def __init__(self) -> None:
        self.hops: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = []

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "value"])

    def next_tuple(self) -> None:
        pass

    def repartition_hop(self, receiver: str, key_fields: tuple[str, ...],
                        fields: tuple[str, ...]) -> tuple[Bolt, Spout]:
        self.hops.append((receiver, key_fields, fields))
        return Writer(), Reader(fields)


def word_count(spout: Spout) -> Any:
    b = TopologyBuilder()
    b.set_spout("sentences", spout, 2)
    b.set_bolt("split", Out("word"), 2).shuffle_grouping("sentences")
    b.set_bolt("count", Out("word", "count"), 2).fields_grouping("split", ["word"])
    b.set_bolt("out", Out("word", "count")).fields_grouping("count", ["word"])
    return b.create_topology()


def test_one_worker_keeps_the_topology_and_marks_the_spout() -> None:
    spout = Shared()
    topology = word_count(spout)
    marked = with_hops(topology, validate_config({}))
    assert list(marked.components) == list(topology.components)
    assert marked.components["count"] is topology.components["count"]
    assert marked.components["sentences"].obj.keyed_downstream is True
    assert spout.keyed_downstream is False  # the user's object is left as it was
    assert spout.hops == []


def test_no_fields_grouping_no_change() -> None:
    b = TopologyBuilder()
    b.set_spout("s", Shared())
    b.set_bolt("b", Out("key")).shuffle_grouping("s")
    topology = b.create_topology()
    assert with_hops(topology, {"topology.workers": 2}) is topology


def test_several_workers_replace_the_grouping_by_a_hop() -> None:
    spout = Shared()
    topology = with_hops(word_count(spout), validate_config({"topology.workers": 2}))
    assert spout.hops == [("count", ("word",), ("word",))]
    reader, writer = topology.components[reader_id("count")], topology.components[
        writer_id("count")]
    assert reader.is_spout and reader.parallelism == 2
    assert [(s.source, s.kind) for s in writer.inputs] == [("split", "local_or_shuffle")]
    count = topology.components["count"]
    assert [(s.source, s.kind, s.fields) for s in count.inputs] == [
        (reader_id("count"), "fields", ("word",))]
    # "out" groups on the key "count" was grouped on: it stays in process.
    assert [s.source for s in topology.components["out"].inputs] == ["count"]
    assert [d.id for d in topology.spouts()] == ["sentences", reader_id("count")]


def test_a_spout_that_cannot_carry_the_grouping_is_left_alone() -> None:
    class Plain(Shared):
        repartition_hop = None  # type: ignore[assignment]

    topology = word_count(Plain())
    assert with_hops(topology, {"topology.workers": 2}) is topology


def test_two_crossing_groupings_into_one_bolt_are_refused() -> None:
    b = TopologyBuilder()
    b.set_spout("s", Shared())
    b.set_bolt("a", Out("k")).shuffle_grouping("s")
    b.set_bolt("b", Out("k")).shuffle_grouping("s")
    b.set_bolt("join", Out("k")).fields_grouping("a", ["k"]).fields_grouping("b", ["k"])
    with pytest.raises(TopologyError, match="bolt 'join': fields groupings from 2 sources"):
        with_hops(b.create_topology(), {"topology.workers": 3})


def test_topology_workers_is_checked() -> None:
    assert validate_config({})["topology.workers"] == 1
    bad = re.escape("'topology.workers' must be an int >= 1, got 0")
    with pytest.raises(ConfigError, match=bad):
        validate_config({"topology.workers": 0})
    with pytest.raises(ConfigError, match=re.escape("did you mean 'topology.workers'?")):
        validate_config({"topology.worker": 2})


def test_workers_n_sets_topology_workers_in_each_worker() -> None:
    argv = ["run", "t.py", "--workers", "3", "--conf", "topology.workers=9"]
    assert worker_argv(argv, 1, 3) == ["run", "t.py", "--conf", "topology.workers=9",
                                       "--conf", "topology.workers=3"]


class KeyedReader(Reader):
    """A reader that offers what a stateful bolt needs to keep state per partition."""

    def changelog_input(self, component: str, key_fields: tuple[str, ...]) -> Any:
        return ("input of", component, key_fields)


class KeyedShared(Shared):
    def repartition_hop(self, receiver: str, key_fields: tuple[str, ...],
                        fields: tuple[str, ...]) -> tuple[Bolt, Spout]:
        return Writer(), KeyedReader(fields)


class Count(StatefulBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "count"])

    def init_state(self, state: Any) -> None:
        self.state = state

    def execute(self, tup: Any) -> None:
        pass


def stateful_word_count(count_grouping: str = "fields") -> Any:
    b = TopologyBuilder()
    b.set_spout("sentences", KeyedShared(), 2)
    b.set_bolt("split", Out("word"), 2).shuffle_grouping("sentences")
    declarer = b.set_bolt("count", Count(), 2)
    if count_grouping == "fields":
        declarer.fields_grouping("split", ["word"])
    else:
        declarer.shuffle_grouping("split")
    b.set_bolt("out", Out("word", "count")).fields_grouping("count", ["word"])
    return b.create_topology()


def test_a_stateful_bolt_behind_a_hop_keeps_state_per_partition_in_one_task() -> None:
    from engine.state.partitioned_executor import PartitionedBoltExecutor

    topology = with_hops(stateful_word_count(), validate_config({"topology.workers": 2}))
    count = topology.components["count"]
    assert isinstance(count.obj, PartitionedBoltExecutor)
    assert count.obj.source == ("input of", "count", ("word",))
    assert (count.parallelism, count.num_tasks) == (1, 1)
    # The checkpoint stream into count does not make "out" cross processes again.
    assert writer_id("out") not in topology.components
    one = with_hops(stateful_word_count(), validate_config({}))
    assert not isinstance(one.components["count"].obj, PartitionedBoltExecutor)


def test_a_stateful_bolt_that_cannot_follow_partitions_is_refused_with_workers() -> None:
    with pytest.raises(TopologyError, match=re.escape(
            "bolt 'count': with topology.workers > 1 a stateful bolt keeps its state per")):
        with_hops(stateful_word_count("shuffle"), validate_config({"topology.workers": 2}))
    with_hops(stateful_word_count("shuffle"), validate_config({}))  # one worker: as always


class OffsetReader(KeyedReader):
    """A reader that can also put record offsets in a field (as the Kafka one does)."""

    offsets_in: str | None = None

    def with_offsets_in(self, field: str) -> OffsetReader:
        reader = OffsetReader(self.fields)
        reader.offsets_in = field
        return reader


class OffsetShared(Shared):
    def __init__(self, reader: type[Reader] = OffsetReader) -> None:
        super().__init__()
        self.reader = reader

    def repartition_hop(self, receiver: str, key_fields: tuple[str, ...],
                        fields: tuple[str, ...]) -> tuple[Bolt, Spout]:
        return Writer(), self.reader(fields)


def stateful_window(reader: type[Reader] = OffsetReader, id_field: str = "id",
                    more_input: bool = False) -> Any:
    from engine.windowing import BaseStatefulWindowedBolt, Count

    class Sum(BaseStatefulWindowedBolt):
        def declare_output_fields(self, declarer: Any) -> None:
            declarer.declare(["word", "n"])

        def execute(self, window: Any) -> None:
            pass

    b = TopologyBuilder()
    b.set_spout("sentences", OffsetShared(reader), 2)
    b.set_bolt("split", Out("word", "id"), 2).shuffle_grouping("sentences")
    declarer = b.set_bolt("sum", Sum().with_tumbling_window(Count(3))
                          .with_message_id_field(id_field), 2).fields_grouping("split", ["word"])
    if more_input:
        declarer.shuffle_grouping("split")
    return b.create_topology()


def test_a_stateful_window_behind_a_hop_gets_a_window_per_partition_and_offset_ids() -> None:
    from engine.windowing.partitioned import PartitionedWindowsExecutor

    topology = with_hops(stateful_window(), validate_config({"topology.workers": 2}))
    window = topology.components["sum"]
    assert isinstance(window.obj, PartitionedWindowsExecutor)
    assert window.obj.source == ("input of", "sum", ("word",))
    assert (window.parallelism, window.num_tasks) == (1, 1)
    reader = topology.components[reader_id("sum")].obj
    assert isinstance(reader, OffsetReader) and reader.offsets_in == "id"
    # Other hops keep their reader as it is.
    plain = with_hops(stateful_word_count(), validate_config({"topology.workers": 2}))
    assert not hasattr(plain.components[reader_id("count")].obj, "offsets_in")


@pytest.mark.parametrize(("topology", "why"), [
    (lambda: stateful_window(more_input=True), "it also reads ['split']"),
    (lambda: stateful_window(id_field="offset"),
     "its message id field 'offset' is not one of ['word', 'id']"),
    (lambda: stateful_window(reader=KeyedReader),
     f"{reader_id('sum')!r} cannot give record offsets"),
])
def test_a_stateful_window_that_cannot_be_kept_per_partition_is_refused(topology: Any,
                                                                        why: str) -> None:
    with pytest.raises(TopologyError, match=re.escape(
            "bolt 'sum': with topology.workers > 1 a stateful windowed bolt reads only "
            f"through its fields grouping, with record offsets as message ids, and {why}; "
            "run it with topology.workers=1")):
        with_hops(topology(), validate_config({"topology.workers": 2}))
    with_hops(topology(), validate_config({}))  # one worker: as always


def test_hop_sources_name_what_each_reader_carries() -> None:
    topology = with_hops(word_count(Shared()), validate_config({"topology.workers": 2}))
    assert hop_sources(topology) == {reader_id("count"): "split"}
    assert hop_sources(word_count(Shared())) == {}
