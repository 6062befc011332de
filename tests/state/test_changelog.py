"""Changelog records and their restore; what a restore refuses; the per-partition front."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.state.changelog import (
    ChangelogRestore,
    ChangelogUnreadable,
    encode_changes,
    encode_marker,
    encode_start,
    partition_namespace,
    refusal,
)
from engine.state.partition_store import PartitionStore
from engine.state.partitioned import PartitionedState
from engine.state.store import DELETED, SqliteStateStore


def new_store(tmp_path: Path) -> PartitionStore:
    return PartitionStore(SqliteStateStore(tmp_path / "s.sqlite3"))


def restore_of(store: PartitionStore, ns: str, committed: int, batch: int = 20_000
               ) -> ChangelogRestore:
    store.begin(ns, "cl")
    return ChangelogRestore(store, ns, committed, "changelog 'cl' partition 0", batch=batch)


def at(records: list[tuple[bytes, bytes]], start: int = 0) -> list[tuple[int, bytes, bytes]]:
    return [(start + i, k, v) for i, (k, v) in enumerate(records)]


def test_records_carry_the_covered_offset_and_a_delete_keeps_it() -> None:
    records = encode_changes({"a": 1, ("k", 2): {"x": [1]}, "gone": DELETED}, 42)
    assert records == [(b'"a"', b"42 1"), (b'["k",2]', b'42 {"x":[1]}'), (b'"gone"', b"42")]
    assert encode_marker(None, 7) == (b"\x00marker", b"-1 7")
    assert encode_start(3) == (b"\x00start", b"3")


def test_restore_applies_only_what_the_committed_offset_covers(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    ns = partition_namespace("t/count", 3)
    store.begin(ns, "cl")
    store.commit(ns, {"stale": 1}, first=0, next_offset=1, marker=None)
    log = [*encode_changes({"a": 1, "b": 1, "c": 1}, 10),
           *encode_changes({"a": 2, "b": DELETED}, 20),
           *encode_changes({"a": 3, "c": 5}, 30),  # every tuple behind it is read again
           *encode_changes({"b": 9}, 25)]  # at the committed offset: read again too
    restore = restore_of(store, ns, committed=25, batch=2)
    restore.add(at(log))
    assert restore.finish() == 5 and restore.skipped == 3 and restore.records == 8
    assert store.load(ns) == {"a": 2, "c": 1}  # the stale local map was replaced
    assert store.position(ns).next_offset == 8  # type: ignore[union-attr]
    assert store.load(partition_namespace("t/count", 4)) == {}


def test_a_record_with_some_tuples_below_the_committed_offset_is_applied(
        tmp_path: Path) -> None:
    # Tuples complete out of order: a checkpoint that covered offsets 5 and 40 is applied
    # with a committed offset of 30 (offset 5 is never read again; 40 is, and over-counts).
    store = new_store(tmp_path)
    restore = restore_of(store, "t/c/p0", committed=30)
    restore.add(at(encode_changes({"a": 2}, 5)))
    restore.finish()
    assert store.load("t/c/p0") == {"a": 2}


def test_the_last_record_of_a_key_wins_across_batches(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    log = [r for i in range(50) for r in encode_changes({f"k{i % 7}": i}, i)]
    restore = restore_of(store, "t/c/p0", committed=100, batch=3)
    restore.add(at(log))
    restore.finish()
    assert store.load("t/c/p0") == {f"k{i % 7}": i for i in range(43, 50)}


def test_a_restore_goes_on_from_where_the_host_stood(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    first = restore_of(store, "ns", committed=100)
    first.add(at([encode_start(None), *encode_changes({"a": 1, "b": 1}, 0),
                  encode_marker(0, 10)]))
    first.finish()
    position = store.position("ns")
    assert position is not None and position.next_offset == 4 and position.started
    later = ChangelogRestore(store, "ns", 100, "w", position.marker, position.started)
    later.add(at(encode_changes({"a": 2}, 10), start=4))
    assert later.finish() == 1 and later.records == 1 and later.started
    assert store.load("ns") == {"a": 2, "b": 1}


def test_an_unreadable_record_is_named_once_with_its_coordinates(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    restore = restore_of(store, "ns", committed=100, batch=2)
    restore.add(at([*encode_changes({"a": 1}, 0), (b'"bad"', b"xyz"),
                    *encode_changes({"c": 1, "d": 1}, 0)], start=40))
    with pytest.raises(ChangelogUnreadable) as caught:
        restore.finish()
    line = str(caught.value)
    assert "changelog 'cl' partition 0 offset 41" in line and "b'\"bad\"'" in line
    assert "xyz" in line and "\n" not in line
    # The position stops before it: a restore after the fix reads it again.
    assert store.position("ns").next_offset == 41  # type: ignore[union-attr]


def test_a_value_that_is_not_json_is_named_too(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    restore = restore_of(store, "ns", committed=100)
    restore.add(at([(b'"k"', b"0 {nope"), *encode_changes({"fine": 1}, 0)], start=7))
    with pytest.raises(ChangelogUnreadable, match=r"offset 7.*value is not JSON"):
        restore.finish()
    assert store.load("ns") == {"fine": 1}


def test_an_unreadable_record_a_later_one_replaces_does_no_harm(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    restore = restore_of(store, "ns", committed=100)
    restore.add(at([(b'"k"', b"xyz"), *encode_changes({"k": 2}, 0)]))
    assert restore.finish() == 1 and store.load("ns") == {"k": 2}


def read(store: PartitionStore, records: list[tuple[bytes, bytes]],
         committed: int) -> ChangelogRestore:
    restore = restore_of(store, "ns", committed)
    restore.add(at(records))
    restore.finish()
    return restore


@pytest.mark.parametrize(("records", "committed", "empty", "refused"), [
    ([], None, True, None),  # a first start
    ([], 0, True, None),
    ([], 120, True, "is empty, but group 'g' committed input offset 120"),
    ([encode_start(None), encode_marker(0, 50)], 40, False, None),
    ([encode_start(None), encode_marker(0, 50)], 60, False, "behind the input"),
    ([encode_marker(10, 50)], 40, False, "no start record"),
    ([encode_start(None), encode_marker(30, 50)], None, False, "offsets are gone"),
    ([encode_start(None), encode_marker(0, 5)], None, False, None),  # never committed
    (encode_changes({"a": 1}, 3), 40, False, None),  # written before markers existed
])
def test_state_that_is_gone_is_refused(tmp_path: Path, records: list[tuple[bytes, bytes]],
                                       committed: int | None, empty: bool,
                                       refused: str | None) -> None:
    restore = read(new_store(tmp_path), records, committed or 0)
    why = refusal("changelog 'cl' partition 0", "g", committed, restore, empty)
    if refused is None:
        assert why is None
    else:
        assert why is not None and refused in why and "changelog 'cl' partition 0" in why


def test_the_front_routes_to_the_selected_partition(tmp_path: Path) -> None:
    state = PartitionedState(new_store(tmp_path), "t/count")
    state.open(0)
    state.open(1)
    state.select(0)
    state.put("a", 1)
    state.select(1)
    state.put("b", 2)
    assert state.get("a") is None and "a" not in state
    state.select(None)  # a tick tuple: every held partition
    assert state.get("a") == 1 and "b" in state and len(state) == 2
    assert sorted(state) == [("a", 1), ("b", 2)]
    state.put("a", 5)
    with pytest.raises(KeyError, match="t/count"):
        state.put("new", 1)
    assert state.delete("b") == 2


def test_a_partition_held_again_is_selected_with_its_new_map(tmp_path: Path) -> None:
    state = PartitionedState(new_store(tmp_path), "t/count")
    state.open(0)
    state.select(0)
    state.put("a", 1)
    state.close(0)  # revoked, then assigned again: a new map
    again = state.open(0)
    state.select(0)
    state.put("b", 2)
    assert state.current is again and again.get("b") == 2 and again.get("a") is None


async def test_a_task_that_awaits_keeps_its_partition(tmp_path: Path) -> None:
    """An ``async def execute`` of partition 1 that awaits while another task runs a
    tuple of partition 0 still writes into partition 1."""
    state = PartitionedState(new_store(tmp_path), "t/count")
    state.open(0)
    state.open(1)
    go = asyncio.Event()

    async def slow_tuple_of_partition_1() -> None:
        state.select(1)
        await go.wait()
        state.put("b", 1)

    async def tuple_of_partition_0() -> None:
        state.select(0)
        state.put("a", 1)
        go.set()

    await asyncio.gather(slow_tuple_of_partition_1(), tuple_of_partition_0())
    assert dict(state.partitions[1]) == {"b": 1} and dict(state.partitions[0]) == {"a": 1}


def test_commits_say_what_changed_and_leave_the_local_store_to_the_changelog(
        tmp_path: Path) -> None:
    store = new_store(tmp_path)
    state = PartitionedState(store, "t/count")
    for p in (0, 1):
        state.open(p)
        state.select(p)
        state.put(f"k{p}", p)
    state.prepare_commit(0)
    state.select(0)
    state.put("late", 1)  # after the prepare: not in this commit
    state.commit(0)
    assert state.take_committed() == {0: {"k0": 0}, 1: {"k1": 1}}
    assert state.take_committed() == {}
    assert store.load("t/count/p0") == {}  # nothing local before the changelog confirms
    state.prepare_commit(1)
    state.rollback()
    assert state.take_committed() == {} and dict(state.partitions[0]) == {}
    state.give_back({0: {"k0": 0}})
    state.rollback()  # what is still owed to the changelog stays in the live map
    assert dict(state.partitions[0]) == {"k0": 0}
    state.close(0)
    assert state.partitions.keys() == {1}
