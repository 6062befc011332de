"""Changelog records and their restore; the per-partition state front."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.state.changelog import ChangelogRestore, encode_changes, partition_namespace
from engine.state.kv import KeyValueState
from engine.state.partitioned import PartitionedState
from engine.state.store import DELETED, SqliteStateStore


def test_records_carry_the_covered_offset_and_a_delete_keeps_it() -> None:
    records = encode_changes({"a": 1, ("k", 2): {"x": [1]}, "gone": DELETED}, 42)
    assert records == [(b'"a"', b"42 1"), (b'["k",2]', b'42 {"x":[1]}'), (b'"gone"', b"42")]


def test_restore_applies_only_what_the_committed_offset_covers(tmp_path: Path) -> None:
    store = SqliteStateStore(tmp_path / "s.sqlite3")
    ns = partition_namespace("t/count", 3)
    stale = KeyValueState(store, ns)
    stale.put("stale", 1)
    stale.commit()
    log = [*encode_changes({"a": 1, "b": 1, "c": 1}, 10),
           *encode_changes({"a": 2, "b": DELETED}, 20),
           *encode_changes({"a": 3, "c": 5}, 30),  # every tuple behind it is read again
           *encode_changes({"b": 9}, 25)]  # at the committed offset: read again too
    restore = ChangelogRestore(store, ns, committed=25, batch=2)
    restore.add(log)
    assert restore.finish() == 5 and restore.skipped == 3
    state = KeyValueState(store, ns)
    assert dict(state) == {"a": 2, "c": 1}  # the stale local map was replaced
    assert KeyValueState(store, partition_namespace("t/count", 4)).get("a") is None


def test_a_record_with_some_tuples_below_the_committed_offset_is_applied(
        tmp_path: Path) -> None:
    # Tuples complete out of order: a checkpoint that covered offsets 5 and 40 is applied
    # with a committed offset of 30 (offset 5 is never read again; 40 is, and over-counts).
    store = SqliteStateStore(tmp_path / "s.sqlite3")
    restore = ChangelogRestore(store, "t/c/p0", committed=30)
    restore.add(encode_changes({"a": 2}, 5))
    restore.finish()
    assert dict(KeyValueState(store, "t/c/p0")) == {"a": 2}


def test_the_last_record_of_a_key_wins_across_batches(tmp_path: Path) -> None:
    store = SqliteStateStore(tmp_path / "s.sqlite3")
    log = [r for i in range(50) for r in encode_changes({f"k{i % 7}": i}, i)]
    restore = ChangelogRestore(store, "t/c/p0", committed=100, batch=3)
    restore.add(log)
    restore.finish()
    assert dict(KeyValueState(store, "t/c/p0")) == {f"k{i % 7}": i for i in range(43, 50)}


def test_the_front_routes_to_the_selected_partition(tmp_path: Path) -> None:
    store = SqliteStateStore(tmp_path / "s.sqlite3")
    state = PartitionedState(store, "t/count")
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


def test_commits_are_per_partition_and_say_what_changed(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    state = PartitionedState(SqliteStateStore(path), "t/count")
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
    state.prepare_commit(1)
    state.rollback()
    assert state.take_committed() == {}
    again = SqliteStateStore(path)
    assert dict(KeyValueState(again, "t/count/p1")) == {"k1": 1}
    assert dict(KeyValueState(again, "t/count/p0")) == {"k0": 0}
    state.close(0)
    assert state.partitions.keys() == {1}
