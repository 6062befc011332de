"""What ``TransactionalTopologyBuilder`` builds, and what it refuses."""

from __future__ import annotations

from typing import Any

import pytest

from engine import Bolt, TopologyError
from engine.transactional import (
    BatchBolt,
    Committer,
    MemoryTransactionalSpout,
    TransactionalTopologyBuilder,
)
from engine.transactional.coordinated import (
    BATCH_STREAM,
    COMMIT_STREAM,
    COORD_STREAM,
    CoordinatedBolt,
)
from engine.transactional.coordinator import CoordinatorSpout
from engine.transactional.emitter import EmitterBolt


class Emits(BatchBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["id", "n"])


class Commits(Emits, Committer):
    pass


def builder() -> TransactionalTopologyBuilder:
    spout = MemoryTransactionalSpout({0: [["a"]]}, ["word"], 10)
    return TransactionalTopologyBuilder("tid", "spout", spout, 2)


def test_shape() -> None:
    b = builder()
    b.set_bolt("a", Emits(), 3).shuffle_grouping("spout")
    b.set_bolt("b", Commits()).global_grouping("a")
    b.set_committer_bolt("c", Emits(), 2).fields_grouping("a", ["n"])
    b.set_bolt("d", Emits()).shuffle_grouping("b").shuffle_grouping("a")
    comps = b.build_topology().components
    assert list(comps) == ["spout/coordinator", "spout", "a", "b", "c", "d"]
    assert isinstance(comps["spout/coordinator"].obj, CoordinatorSpout)
    assert comps["spout/coordinator"].num_tasks == 1
    assert isinstance(comps["spout"].obj, EmitterBolt) and comps["spout"].parallelism == 2
    assert [(s.source, s.stream, s.kind) for s in comps["spout"].inputs] == \
        [("spout/coordinator", BATCH_STREAM, "all")]
    inputs = {cid: {(s.source, s.stream, s.kind) for s in comps[cid].inputs} for cid in "abcd"}
    assert inputs["a"] == {("spout", "default", "shuffle"), ("spout", COORD_STREAM, "direct")}
    assert inputs["b"] == {("a", "default", "global"), ("a", COORD_STREAM, "direct"),
                           ("spout/coordinator", COMMIT_STREAM, "all")}
    assert ("spout/coordinator", COMMIT_STREAM, "all") in inputs["c"]
    assert ("spout/coordinator", COMMIT_STREAM, "all") not in inputs["d"]
    plans = {cid: comps[cid].obj.plan for cid in "abcd"}
    assert isinstance(comps["a"].obj, CoordinatedBolt)
    assert (plans["a"].committer, plans["a"].commit_phase) == (False, False)
    assert (plans["b"].committer, plans["b"].commit_phase) == (True, True)
    assert (plans["c"].committer, plans["c"].commit_phase) == (True, True)
    assert (plans["d"].committer, plans["d"].commit_phase) == (False, True)
    assert plans["d"].sources == {"a": False, "b": True}
    assert plans["a"].downstream == ("b", "c", "d")
    assert comps["spout"].obj.downstream == ("a",)


def test_unknown_source() -> None:
    b = builder()
    b.set_bolt("a", Emits()).shuffle_grouping("nope")
    with pytest.raises(TopologyError, match=r"unknown source component 'nope'"):
        b.build_topology()


def test_no_input() -> None:
    b = builder()
    b.set_bolt("a", Emits())
    with pytest.raises(TopologyError, match=r"^bolt 'a': has no input"):
        b.build_topology()


def test_cycle() -> None:
    b = builder()
    b.set_bolt("a", Emits()).shuffle_grouping("spout").shuffle_grouping("b")
    b.set_bolt("b", Emits()).shuffle_grouping("a")
    with pytest.raises(TopologyError, match=r"must be acyclic"):
        b.build_topology()


def test_rejects_plain_bolts_duplicates_and_bad_spouts() -> None:
    b = builder()
    with pytest.raises(TopologyError, match=r"^bolt 'x': a transactional topology takes"):
        b.set_bolt("x", Bolt())
    b.set_bolt("a", Emits()).shuffle_grouping("spout")
    with pytest.raises(TopologyError, match=r"^bolt 'a': duplicate component id$"):
        b.set_bolt("a", Emits())
    with pytest.raises(TopologyError, match=r"^spout 's': expected a TransactionalSpout"):
        TransactionalTopologyBuilder("t", "s", object())


def test_engine_validation_still_applies() -> None:
    b = builder()
    b.set_bolt("a", Emits()).fields_grouping("spout", ["wrd"])
    with pytest.raises(TopologyError, match=r"uses field 'wrd'"):
        b.build_topology()


def test_transactional_declarer_is_the_engines_declarer() -> None:
    from engine.topology import BoltDeclarer
    from engine.transactional.builder import TransactionalBoltDeclarer

    declarer = TransactionalBoltDeclarer("b")
    assert isinstance(declarer, BoltDeclarer)
    chained = declarer.shuffle_grouping("a").add_configuration("k", 1).set_num_tasks(3)
    assert chained is declarer and declarer.sources() == {"a"}
