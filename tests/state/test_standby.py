"""Standby copies: caught up from the changelog, settled as the input is committed, taken
over by the restore of a partition that moves here, stopped at a record they cannot read."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.state.changelog import encode_changes, encode_marker, encode_start
from engine.state.partition_store import PartitionStore
from engine.state.standby import StandbyCopy, StandbyKeeper, standby_namespace
from engine.state.store import DELETED, SqliteStateStore
from tests.state.helpers import settle


def new_store(tmp_path: Path) -> PartitionStore:
    return PartitionStore(SqliteStateStore(tmp_path / "s.sqlite3"))


def at(records: list[tuple[bytes, bytes]], start: int = 0) -> list[tuple[int, bytes, bytes]]:
    return [(start + i, k, v) for i, (k, v) in enumerate(records)]


def test_a_copy_is_adopted_and_drops_what_will_be_read_again(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    copy = StandbyCopy(store, "ns@standby", "cl")
    copy.add(at([encode_start(None), *encode_changes({"a": 1, "b": 1}, 0),
                 encode_marker(0, 10)]))
    copy.flush(committed=None)
    copy.add(at([*encode_changes({"a": 2, "b": DELETED}, 10), encode_marker(10, 20)], 4))
    copy.flush(committed=10)  # the first change set is settled now
    assert copy.next_offset == 7
    assert store.adopt("ns", "ns@standby") and store.position("ns@standby") is None
    position = store.position("ns")
    assert position is not None and position.next_offset == 7 and position.started
    assert store.load("ns") == {"a": 2}
    store.resume("ns", committed=10)  # offset 10 on is read again: its changes drop
    assert store.load("ns") == {"a": 1, "b": 1}


def test_a_copy_behind_what_the_host_holds_is_not_adopted(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    store.begin("ns", "cl")
    store.commit("ns", {"a": 5}, first=0, next_offset=9, marker=None)
    copy = StandbyCopy(store, "ns@standby", "cl")
    copy.add(at(encode_changes({"a": 1}, 0)))
    copy.flush(None)
    assert not store.adopt("ns", "ns@standby") and store.load("ns") == {"a": 5}


def test_a_copy_stops_before_a_record_it_cannot_read(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    copy = StandbyCopy(store, "ns@standby", "cl")
    copy.add(at([*encode_changes({"a": 1}, 0), (b'"b"', b"0 {nope"), (b'"c"', b"xyz"),
                 *encode_changes({"d": 1}, 0)]))
    assert copy.stopped_at == 2  # "xyz" is seen first; the JSON is checked at the flush
    copy.flush(None)
    assert copy.stopped_at == 1 and copy.next_offset == 1
    assert store.load("ns@standby") == {"a": 1}


async def test_the_keeper_follows_until_a_partition_is_owned(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    followed: list[int] = []
    stopped: list[int] = []

    async def follow(partition: int, copy: StandbyCopy) -> None:
        followed.append(partition)
        try:
            await asyncio.Event().wait()
        finally:
            stopped.append(partition)

    keeper = StandbyKeeper(store, lambda p: f"t/c/p{p}", "cl", follow)
    keeper.keep([0, 1, 2])
    await settle()
    assert sorted(followed) == [0, 1, 2] and keeper.following() == [0, 1, 2]
    await keeper.drop([1])
    assert stopped == [1] and keeper.following() == [0, 2]
    assert standby_namespace("t/c/p1") == "t/c/p1@standby"
    await keeper.close()
    assert sorted(stopped) == [0, 1, 2]
