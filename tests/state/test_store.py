"""The SQLite state store and ``KeyValueState``: prepare, commit, rollback, restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.state.kv import KeyValueState
from engine.state.store import SqliteStateStore, open_store, release_store


def reopen(path: Path, ns: str = "t/count-3") -> KeyValueState:
    """The state as a restarted process sees it."""
    return KeyValueState(SqliteStateStore(path), ns)


def test_get_put_delete_and_iteration(tmp_path: Path) -> None:
    state = reopen(tmp_path / "s.sqlite3")
    assert state.get("a") is None and state.get("a", 0) == 0
    state.put("a", 1)
    state.put(("k", 2), {"nested": [1, 2]})
    assert state.delete("missing") is None
    assert sorted(state, key=str) == sorted([("a", 1), (("k", 2), {"nested": [1, 2]})], key=str)
    assert state.delete("a") == 1  # the removed value, as Storm's delete returns it
    assert "a" not in state and len(state) == 1
    assert state.delete("a") is None
    assert state.delete(("k", 2)) == {"nested": [1, 2]}


def test_delete_returns_the_committed_value_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    state = reopen(path)
    state.put("a", [1, 2])
    state.prepare_commit(0)
    state.commit(0)
    again = reopen(path)
    assert again.delete("a") == [1, 2]
    assert again.delete("a") is None and len(again) == 0


def changes_prepared_over_a_commit(path: Path) -> KeyValueState:
    """The state at ``path`` with a=1 and b=2 committed (txid 0), then a=10 put and b
    deleted, prepared as txid 1 and not committed."""
    state = reopen(path)
    state.put("a", 1)
    state.put("b", 2)
    state.prepare_commit(0)
    state.commit(0)
    state.put("a", 10)
    state.delete("b")
    state.prepare_commit(1)
    return state


def test_only_committed_changes_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    state = changes_prepared_over_a_commit(path)  # txid 1 prepared, never committed
    state.put("c", 3)  # not even prepared
    again = reopen(path)
    assert dict(again) == {"a": 1, "b": 2}
    assert again.committed_txid == 0


def test_commit_applies_puts_and_deletes_atomically(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    state = changes_prepared_over_a_commit(path)
    state.commit(1)
    assert dict(reopen(path)) == {"a": 10}


def test_rollback_restores_the_committed_map(tmp_path: Path) -> None:
    state = reopen(tmp_path / "s.sqlite3")
    state.put("a", 1)
    state.prepare_commit(0)
    state.commit(0)
    state.put("a", 2)
    state.prepare_commit(1)
    state.put("b", 3)
    state.rollback()
    assert dict(state) == {"a": 1}
    state.prepare_commit(2)
    state.commit(2)
    assert dict(reopen(tmp_path / "s.sqlite3")) == {"a": 1}


def test_a_prepared_change_set_commits_after_a_restart(tmp_path: Path) -> None:
    """Recovery from COMMITTING: the commit of a txid prepared before the crash."""
    path = tmp_path / "s.sqlite3"
    state = reopen(path)
    state.put("a", 1)
    state.prepare_commit(7)
    restarted = reopen(path)
    assert dict(restarted) == {}
    assert restarted.store.prepared_txid(restarted.namespace) == 7
    restarted.commit(7)
    assert dict(reopen(path)) == {"a": 1}


def test_a_repeated_commit_is_a_no_op(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    state = reopen(path)
    state.put("a", 1)
    state.prepare_commit(3)
    state.commit(3)
    state.put("a", 2)
    state.prepare_commit(3)  # the same txid prepared again (a replayed PREPARE)
    state.commit(3)  # already committed: nothing happens
    assert dict(reopen(path)) == {"a": 1}


def test_namespaces_are_separate(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    one, two = reopen(path, "t/c-1"), reopen(path, "t/c-2")
    one.put("k", 1)
    two.put("k", 2)
    one.commit()
    two.commit()
    assert reopen(path, "t/c-1").get("k") == 1
    assert reopen(path, "t/c-2").get("k") == 2


def test_values_must_be_json(tmp_path: Path) -> None:
    state = reopen(tmp_path / "s.sqlite3")
    state.put("k", object())
    with pytest.raises(TypeError, match=r"^state 't/count-3': value .* is not JSON"):
        state.prepare_commit(0)


def test_open_store_is_shared_per_file_and_closed_by_its_last_user(tmp_path: Path) -> None:
    conf = {"topology.state.dir": str(tmp_path)}
    a, b = open_store(conf), open_store(conf)
    assert a is b and a.path == (tmp_path / "state.sqlite3").resolve()
    release_store(a)
    a.load("x")  # still open for b
    release_store(b)
    assert open_store(conf) is not a
