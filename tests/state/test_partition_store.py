"""A partition's local state and its changelog position, kept across restarts."""

from __future__ import annotations

from pathlib import Path

from engine.state.partition_store import PartitionStore, Position
from engine.state.store import DELETED, SqliteStateStore


def store_at(path: Path) -> PartitionStore:
    return PartitionStore(SqliteStateStore(path / "s.sqlite3"))


def test_a_commit_is_kept_with_its_changelog_position_across_a_reopen(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    store.begin("t/c/p0", "g-c-changelog")
    store.commit("t/c/p0", {"a": 1, ("k", 2): [3]}, first=0, next_offset=4, marker=(0, 10))
    store.commit("t/c/p0", {"a": 2, "b": 1}, first=0, next_offset=7, marker=(0, 12))
    again = store_at(tmp_path)
    assert again.position("t/c/p0") == Position("g-c-changelog", 7, (0, 12), True)
    assert again.load("t/c/p0") == {"a": 2, ("k", 2): [3], "b": 1}
    assert again.position("t/c/p1") is None and again.load("t/c/p1") == {}


def test_a_resume_drops_the_changes_whose_tuples_will_be_read_again(tmp_path: Path) -> None:
    """A host killed after a changelog write and before the input offsets behind it were
    committed: those changes are dropped, as a restore from the changelog skips them."""
    store = store_at(tmp_path)
    store.begin("ns", "cl")
    store.commit("ns", {"a": 1, "b": 1}, first=0, next_offset=3, marker=(0, 5))
    store.commit("ns", {"a": 2, "b": DELETED}, first=5, next_offset=6, marker=(5, 9))
    store.commit("ns", {"a": 3}, first=5, next_offset=8, marker=(5, 12))
    assert store.load("ns") == {"a": 3}
    store.resume("ns", committed=5)  # nothing from offset 5 on was committed
    assert store.load("ns") == {"a": 1, "b": 1}


def test_a_commit_settles_what_the_committed_offset_has_passed(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    store.begin("ns", "cl")
    store.commit("ns", {"a": 1}, first=0, next_offset=2, marker=(0, 5))
    store.commit("ns", {"a": 2, "z": DELETED}, first=5, next_offset=4, marker=(5, 9))
    # The group committed 5 when the next write went out: the first one is settled.
    rows = store.store.connection.execute("SELECT count(*) FROM unsettled").fetchone()[0]
    assert rows == 2
    store.resume("ns", committed=9)  # both are behind the committed offset now
    assert store.load("ns") == {"a": 2}
    assert store.store.connection.execute("SELECT count(*) FROM unsettled").fetchone()[0] == 0


def test_begin_forgets_what_the_host_held(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    store.begin("ns", "cl")
    store.commit("ns", {"a": 1}, first=0, next_offset=2, marker=None)
    store.apply("ns", {b'"b"': b"2"}, next_offset=9, marker=(3, 4), started=True)
    assert store.load("ns") == {"a": 1, "b": 2}
    store.begin("ns", "other")
    assert store.load("ns") == {} and store.position("ns") == Position("other", 0, None, False)
