"""The engine's group assignor: what members state, who the leader refuses, what a refused
member says, and that no state is shared between consumers."""

from __future__ import annotations

import json
from typing import Any

from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from connectors.kafka.assignor import NAME, GroupAssignor, strategy
from engine import TopologyBuilder
from engine.keyed import TopologyFingerprint, fingerprint
from engine.testing import FeederSpout
from tests.engine.helpers import Split


class Cluster:
    """The leader's cluster metadata: partition numbers per topic."""

    def __init__(self, **topics: int) -> None:
        self._topics = topics

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        n = self._topics.get(topic)
        return None if n is None else set(range(n))


def word_count(workers: int = 2, count: str = "count") -> TopologyFingerprint:
    builder = TopologyBuilder()
    builder.set_spout("lines", FeederSpout(["line"]))
    builder.set_bolt("split", Split()).shuffle_grouping("lines")
    builder.set_bolt(count, Split()).fields_grouping("split", ["word"])
    return fingerprint(builder.create_topology(), {"topology.workers": workers})


class Member:
    """One consumer's assignor and the lines it refused with."""

    def __init__(self, fp: TopologyFingerprint | None) -> None:
        self.refusals: list[str] = []
        self.assignor = GroupAssignor(fp, "g", "KafkaSpout 'lines' task 1",
                                      self.refusals.append)


def rebalance(group: dict[str, Member], topics: tuple[str, ...] = ("in",),
              **partitions: int) -> dict[str, set[int]]:
    """One join: every member states itself, the first (by id) computes, every member
    takes its assignment; returns each member's partitions of ``in``."""
    metadata = {m: ConsumerProtocolMemberMetadata.decode(
        member.assignor.metadata(set(topics)).encode()) for m, member in group.items()}
    leader = group[min(group)].assignor
    out = leader.assign(Cluster(**(partitions or {"in": 4})), metadata)  # type: ignore[arg-type]
    out = {m: ConsumerProtocolMemberAssignment.decode(a.encode()) for m, a in out.items()}
    for m, assignment in out.items():
        group[m].assignor.on_assignment(assignment)
    return {m: {p for t, ps in a.assignment for p in ps if t == "in"} for m, a in out.items()}


def test_members_keep_their_partitions_when_one_joins() -> None:
    fp = word_count()
    group = {"a": Member(fp), "b": Member(fp)}
    first = rebalance(group, **{"in": 6})
    group["c"] = Member(fp)
    second = rebalance(group, **{"in": 6})
    assert second["a"] <= first["a"] and second["b"] <= first["b"]
    assert [len(second[m]) for m in "abc"] == [2, 2, 2]


def test_metadata_states_held_partitions_round_and_fingerprint() -> None:
    fp = word_count()
    group = {"a": Member(fp)}
    rebalance(group)
    stated = json.loads(group["a"].assignor.metadata({"in"}).user_data)
    assert stated["held"] == {"in": [0, 1, 2, 3]} and stated["round"] == 1
    assert stated["fp"] == fp.digest and stated["topology"] == fp.summary


def test_a_newcomer_with_other_workers_is_refused_and_the_running_members_keep_all() -> None:
    group = {"z": Member(word_count(2))}  # running, and the newcomer leads the join
    rebalance(group)
    group["a"] = Member(word_count(1))
    got = rebalance(group)
    assert got == {"z": {0, 1, 2, 3}, "a": set()}
    assert group["z"].refusals == []
    [line] = group["a"].refusals
    assert "topology.workers=1 here, 2 in the group" in line, line
    assert "consumer group 'g'" in line and "KafkaSpout 'lines' task 1" in line, line
    rebalance(group)  # the refused member is still there until its process stops
    assert len(group["a"].refusals) == 1


def test_a_refused_assignment_carries_an_error() -> None:
    group = {"a": Member(word_count(2)), "b": Member(word_count(2))}
    rebalance(group)
    group["c"] = Member(word_count(1))
    metadata = {m: member.assignor.metadata({"in"}) for m, member in group.items()}
    out = group["a"].assignor.assign(Cluster(**{"in": 4}), metadata)  # type: ignore[arg-type]
    reply = json.loads(out["c"].user_data)
    assert out["c"].assignment == [] and reply["error"]
    assert "error" not in json.loads(out["a"].user_data)


def test_the_running_version_wins_even_when_outnumbered() -> None:
    group = {"a": Member(word_count(2))}
    rebalance(group)
    for m in "bcd":
        group[m] = Member(word_count(2, count="tally"))
    got = rebalance(group)
    assert got["a"] == {0, 1, 2, 3} and not group["a"].refusals
    assert all(len(group[m].refusals) == 1 for m in "bcd")


def test_in_a_new_group_the_majority_wins() -> None:
    group = {"a": Member(word_count(1)), "b": Member(word_count(2)), "c": Member(word_count(2))}
    got = rebalance(group)
    assert got["a"] == set() and len(group["a"].refusals) == 1
    assert got["b"] | got["c"] == {0, 1, 2, 3}


def test_an_assignment_from_another_topology_is_refused_by_the_member_itself() -> None:
    """A static member's rejoin skips the leader: the assignment it gets back was made
    for its predecessor, whose topology the group runs."""
    running = {"a": Member(word_count(2))}
    rebalance(running)
    [(_, assignment)] = running["a"].assignor.assign(  # type: ignore[arg-type]
        Cluster(**{"in": 4}), {"a": running["a"].assignor.metadata({"in"})}).items()
    restarted = Member(word_count(1))
    restarted.assignor.on_assignment(assignment)
    assert len(restarted.refusals) == 1 and "topology.workers=1 here" in restarted.refusals[0]


def test_a_refusal_handed_back_to_a_member_now_running_the_groups_topology_is_not() -> None:
    """A static member refused, then restarted with the group's topology, can be handed
    back its old assignment without a join: the group's fingerprint decides, not the
    error."""
    group = {"a": Member(word_count(2))}
    rebalance(group)
    group["b"] = Member(word_count(1))
    metadata = {m: member.assignor.metadata({"in"}) for m, member in group.items()}
    old = group["a"].assignor.assign(Cluster(**{"in": 4}), metadata)["b"]  # type: ignore[arg-type]
    assert json.loads(old.user_data)["error"]
    restarted = Member(word_count(2))
    restarted.assignor.on_assignment(old)
    assert restarted.refusals == []


def test_a_member_without_fingerprint_is_never_refused() -> None:
    group = {"a": Member(word_count(2)), "b": Member(None)}
    got = rebalance(group)
    assert got["a"] and got["b"] and not group["a"].refusals and not group["b"].refusals


def test_consumers_share_no_state() -> None:
    fp = word_count()
    one, two = Member(fp), Member(fp)
    rebalance({"a": one})
    assert json.loads(two.assignor.metadata({"in"}).user_data)["held"] == {}


def test_user_data_that_is_not_ours_states_nothing() -> None:
    fp = word_count()
    group: dict[str, Any] = {"a": Member(fp)}
    metadata = {"a": group["a"].assignor.metadata({"in"}),
                "x": ConsumerProtocolMemberMetadata(0, ["in"], b"\xff not json")}
    out = group["a"].assignor.assign(Cluster(**{"in": 2}), metadata)  # type: ignore[arg-type]
    assert sorted(len(a.assignment[0][1]) for a in out.values()) == [1, 1]


def test_the_users_own_strategy_is_kept() -> None:
    mine = (RoundRobinPartitionAssignor,)
    assert strategy({"partition_assignment_strategy": mine}, None, "g", "w", print) == {}
    [chosen] = strategy({}, None, "g", "w", print)["partition_assignment_strategy"]
    assert isinstance(chosen, GroupAssignor) and chosen.name == NAME
    [other] = strategy({}, None, "g", "w", print)["partition_assignment_strategy"]
    assert other is not chosen

