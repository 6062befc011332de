"""Coordinator and partition state in SQLite: survives reopening, ordered cleanup."""

from __future__ import annotations

from pathlib import Path

from engine.transactional.state import (
    COORDINATOR_SCOPE,
    DEFAULT_STATE_DIR,
    TRANSACTIONAL_STATE_DIR,
    TransactionalState,
    partition_scope,
    state_dir,
)


def test_new_topology_starts_at_one(tmp_path: Path) -> None:
    state = TransactionalState(tmp_path / "s.db", "t")
    assert state.next_txid() == 1
    assert state.get(COORDINATOR_SCOPE, 1) is None
    assert not state.has(COORDINATOR_SCOPE, 1)
    assert state.latest_before(COORDINATOR_SCOPE, 5) is None


def test_commit_and_metadata_survive_reopening(tmp_path: Path) -> None:
    state = TransactionalState(tmp_path / "s.db", "t")
    for txid in (1, 2, 3):
        state.put(COORDINATOR_SCOPE, txid, {"n": txid})
    state.commit(2)
    state.close()
    again = TransactionalState(tmp_path / "s.db", "t")
    assert again.next_txid() == 3
    assert again.get(COORDINATOR_SCOPE, 1) is None  # before the committed one: gone
    assert again.get(COORDINATOR_SCOPE, 2) == {"n": 2}  # seeds txid 3
    assert again.latest_before(COORDINATOR_SCOPE, 4) == (3, {"n": 3})


def test_transactional_ids_and_scopes_are_separate(tmp_path: Path) -> None:
    a = TransactionalState(tmp_path / "s.db", "a")
    b = TransactionalState(tmp_path / "s.db", "b")
    a.put(partition_scope(0), 1, [1, 2])
    a.commit(7)
    assert b.next_txid() == 1
    assert b.get(partition_scope(0), 1) is None
    assert a.get(partition_scope(1), 1) is None
    assert a.get(partition_scope(0), 1) == [1, 2]


def test_put_drop_later_and_cleanup_before(tmp_path: Path) -> None:
    state = TransactionalState(tmp_path / "s.db", "t")
    scope = partition_scope(3)
    for txid in range(1, 6):
        state.put(scope, txid, txid * 10)
    state.put(scope, 3, 33, drop_later=True)
    assert [state.get(scope, t) for t in range(1, 6)] == [10, 20, 33, None, None]
    state.cleanup_before(scope, 3)
    assert [state.get(scope, t) for t in range(1, 4)] == [None, None, 33]


def test_state_dir_from_conf(tmp_path: Path) -> None:
    assert state_dir({}) == Path(DEFAULT_STATE_DIR)
    conf = {TRANSACTIONAL_STATE_DIR: str(tmp_path / "x")}
    state = TransactionalState.from_conf(conf, "t")
    assert state.path.parent == tmp_path / "x" and state.path.exists()
