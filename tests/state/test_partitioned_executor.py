"""The per-partition stateful executor driven by hand, with an in-memory input standing in
for Kafka (the real one is tested against the test broker in
tests/connectors/kafka/test_keyed_state_processes.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from engine.state.changelog import StateRefused
from engine.state.checkpoint import COMMIT, INITSTATE, PREPARE
from engine.state.partition_store import PartitionStore
from engine.state.partitioned_executor import PartitionedBoltExecutor
from engine.state.restored import Restored, Written
from engine.state.store import DELETED
from tests.state.helpers import Recorder, checkpoint, context, settle
from tests.state.test_stateful_executor import SOURCES, TASKS, Count, word


class Input:
    """Partitions by the word's first letter; restores nothing; records writes."""

    def __init__(self) -> None:
        self.written: list[dict[int, dict[Any, Any]]] = []
        self.marked: list[list[int]] = []
        self.fail_writes = 0
        self.refuse: dict[int, str] = {}
        self.held: list[int] = []
        self.gate = asyncio.Event()
        self.gate.set()

    def partition_of(self, values: Sequence[Any]) -> int:
        return 0 if values[0] < "m" else 1

    async def start(self, on_revoked: Any, on_assigned: Any = None,
                    allow_empty: bool = False) -> None:
        self.on_revoked, self.on_assigned = on_revoked, on_assigned

    def hold(self, partition: int) -> None:
        self.held.append(partition)

    async def restore(self, partition: int, store: PartitionStore, namespace: str) -> Restored:
        await self.gate.wait()
        if partition in self.refuse:
            raise StateRefused(self.refuse[partition])
        if store.position(namespace) is None:
            store.begin(namespace, "cl")
        return Restored(0, 0, 0, 0.0, False)

    async def write(self, changes: Mapping[int, Mapping[Any, Any]],
                    partitions: Iterable[int]) -> dict[int, Written]:
        if self.fail_writes:
            self.fail_writes -= 1
            raise OSError("broker gone")
        self.written.append({p: dict(c) for p, c in changes.items()})
        self.marked.append(sorted(partitions))
        end = len(self.written) * 10
        return {p: Written(0, end, (0, end)) for p in set(partitions) | set(changes)}

    async def stop(self) -> None:
        pass


async def started(tmp_path: Any) -> tuple[PartitionedBoltExecutor, Recorder, Input]:
    conf = {"topology.state.dir": str(tmp_path)}
    source = Input()
    ex = PartitionedBoltExecutor(Count(), source)
    out = Recorder()
    await ex.prepare(conf, context("count", 4, TASKS, SOURCES, conf), out)
    await ex.execute(checkpoint(-1, INITSTATE))
    return ex, out, source


async def test_changes_reach_the_changelog_before_their_tuples_are_acked(tmp_path) -> None:
    ex, out, source = await started(tmp_path)
    a, z = word("apple"), word("zebra")
    await ex.execute(a)
    await ex.execute(z)
    await settle()  # both partitions restored (empty), the held tuples run
    assert [e[1] for e in out.emits if e[0] == "default"] == [["apple", 1], ["zebra", 1]]
    await ex.execute(checkpoint(0, PREPARE))
    source.fail_writes = 1
    await ex.execute(checkpoint(0, COMMIT))
    assert source.written == [] and a not in out.acks  # the checkpoint failed
    assert ex.partition_store.load("t/count/p0") == {}  # nothing local unconfirmed
    await ex.execute(checkpoint(0, COMMIT))  # the recovery commits again
    assert source.written == [{0: {"apple": 1}, 1: {"zebra": 1}}]
    assert a in out.acks and z in out.acks
    # Confirmed: the local state has it, at the changelog's offset.
    assert ex.partition_store.load("t/count/p0") == {"apple": 1}
    assert ex.partition_store.position("t/count/p1").next_offset == 10  # type: ignore[union-attr]
    ex.state.select(1)
    ex.state.delete("zebra")
    await ex.execute(checkpoint(1, PREPARE))
    await ex.execute(checkpoint(1, COMMIT))
    assert source.written[-1] == {1: {"zebra": DELETED}}
    await ex.cleanup()


async def test_a_restoring_partition_holds_its_tuples_and_a_revoke_fails_them(
        tmp_path) -> None:
    ex, out, source = await started(tmp_path)
    await ex.execute(word("apple"))
    await settle()
    source.gate.clear()
    await source.on_assigned([1])
    z = word("zebra")
    await ex.execute(z)
    await ex.execute(word("banana"))  # partition 0: in place, runs now
    await settle()
    assert [e[1][0] for e in out.emits if e[0] == "default"] == ["apple", "banana"]
    assert ex.metrics()["state_restoring"] == 1
    await source.on_revoked([1])
    assert z in out.fails and ex.metrics()["state_restoring"] == 0
    source.gate.set()
    await source.on_assigned([1])
    await settle()
    assert ex.metrics()["state_restores"] == 2 and 1 in ex.holds.ready
    await ex.cleanup()


async def test_a_revoke_fails_the_tuples_whose_acks_wait_for_a_commit(tmp_path) -> None:
    """A revoked partition's changes leave unwritten: its tuples acked by the bolt but not
    yet by a commit are failed, not acked by the next COMMIT (their offsets could be
    committed before the changelog has their changes)."""
    ex, out, source = await started(tmp_path)
    a, z = word("apple"), word("zebra")
    await ex.execute(a)
    await ex.execute(z)
    await settle()
    await ex.execute(checkpoint(0, PREPARE))  # both prepared
    b, y = word("banana"), word("yak")
    await ex.execute(b)
    await ex.execute(y)  # both acked by the bolt, not prepared yet
    await source.on_revoked([1])
    assert z in out.fails and y in out.fails
    await ex.execute(checkpoint(0, COMMIT))
    assert source.written == [{0: {"apple": 1}}]
    assert a in out.acks and z not in out.acks
    await ex.execute(checkpoint(1, PREPARE))
    await ex.execute(checkpoint(1, COMMIT))
    assert b in out.acks and y not in out.acks and b not in out.fails
    await ex.cleanup()


async def test_a_tuple_of_a_revoked_partition_is_failed_until_it_is_assigned_again(
        tmp_path) -> None:
    """A tuple the spout sent before a revoke ended (a retry, say) starts no restore of a
    partition another process holds now: the restore would stay in place, and the state
    go stale, until the partition came back."""
    ex, out, source = await started(tmp_path)
    await ex.execute(word("zebra"))
    await settle()
    await source.on_revoked([1])
    late = word("yak")
    await ex.execute(late)
    await settle()
    assert late in out.fails and ex.metrics()["state_restores"] == 1
    assert 1 not in ex.parts.partitions
    await source.on_assigned([1])
    again = word("yak")
    await ex.execute(again)
    await settle()
    assert ex.metrics()["state_restores"] == 2 and again not in out.fails
    assert [e[1] for e in out.emits if e[0] == "default"][-1] == ["yak", 1]
    await ex.cleanup()


async def test_every_held_partition_gets_a_marker_even_without_changes(tmp_path) -> None:
    ex, _out, source = await started(tmp_path)
    await ex.execute(word("apple"))
    await ex.execute(word("zebra"))
    await settle()
    await ex.execute(checkpoint(0, PREPARE))
    await ex.execute(checkpoint(0, COMMIT))
    await ex.execute(checkpoint(1, PREPARE))  # nothing changed since
    await ex.execute(checkpoint(1, COMMIT))
    assert source.marked == [[0, 1], [0, 1]] and source.written[-1] == {}
    await ex.cleanup()


async def test_an_assignment_holds_the_partition_back_before_its_restore(tmp_path) -> None:
    ex, _out, source = await started(tmp_path)
    source.gate.clear()
    await source.on_assigned([1])
    assert source.held == [1] and ex.metrics()["state_restoring"] == 1
    source.gate.set()
    await settle()
    assert 1 in ex.holds.ready
    await ex.cleanup()


async def test_a_refused_restore_refuses_the_topology_and_fails_nothing(tmp_path) -> None:
    ex, out, source = await started(tmp_path)
    source.refuse[1] = "changelog 'cl' partition 1 is empty, but group 'g' committed 40"
    z = word("zebra")
    await ex.execute(z)
    await ex.execute(word("apple"))  # another partition runs on
    await settle()
    refused = ex.context.refused
    assert refused is not None and "partition 1" in refused and "committed 40" in refused
    assert z not in out.fails and z not in out.acks
    assert [e[1][0] for e in out.emits if e[0] == "default"] == ["apple"]
    await ex.cleanup()
