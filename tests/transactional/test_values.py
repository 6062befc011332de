"""The exact-once committer rules and the SQLite-backed maps that apply them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engine.transactional import (
    OpaqueMap,
    OpaqueValue,
    SqliteMap,
    TransactionalMap,
    TransactionalValue,
)


def add(n: int) -> Callable[[int], int]:
    return lambda v: v + n


def test_transactional_value_applies_each_txid_once() -> None:
    v = TransactionalValue(0)
    v = v.update(1, add(5))
    assert v == TransactionalValue(5, 1)
    assert v.update(1, add(5)) == v  # a replay of txid 1 is skipped
    assert v.update(2, add(3)) == TransactionalValue(8, 2)


def test_opaque_value_replaces_a_replayed_txid() -> None:
    v = OpaqueValue(0, 0).update(1, add(5)).update(2, add(3))
    assert v == OpaqueValue(8, 5, 2)
    # txid 2 replayed with a different batch: its earlier contribution is replaced
    assert v.update(2, add(4)) == OpaqueValue(9, 5, 2)
    assert v.update(3, add(1)) == OpaqueValue(9, 8, 3)


def test_json_round_trip() -> None:
    assert TransactionalValue.from_json(TransactionalValue(3, 4).to_json()) == \
        TransactionalValue(3, 4)
    assert OpaqueValue.from_json(OpaqueValue(3, 2, 4).to_json()) == OpaqueValue(3, 2, 4)
    assert TransactionalValue.from_json(None, 0) == TransactionalValue(0, None)
    assert OpaqueValue.from_json(None, 0) == OpaqueValue(0, 0, None)


def test_sqlite_map_persists(tmp_path: Path) -> None:
    m = SqliteMap(tmp_path / "m.db", "counts")
    m.put_many([("a", 1), (["k", 2], {"x": [1]})])
    m.put("a", 2)
    m.close()
    m = SqliteMap(tmp_path / "m.db", "counts")
    assert m.get("a") == 2
    assert m.get(["k", 2]) == {"x": [1]}
    assert m.get_many(["a", "nope"]) == [2, None]
    assert sorted(k for k, _ in m.items() if isinstance(k, str)) == ["a"]
    assert SqliteMap.shared(tmp_path / "m.db", "counts") is \
        SqliteMap.shared(tmp_path / "m.db", "counts")


def test_transactional_map_skips_a_replayed_batch(tmp_path: Path) -> None:
    m = TransactionalMap(SqliteMap(tmp_path / "m.db"))
    m.update(1, {"cat": add(2), "dog": add(1)})
    m.update(1, {"cat": add(2), "dog": add(1)})
    m.update(2, {"cat": add(1)})
    assert m.get("cat") == TransactionalValue(3, 2)
    assert m.get("dog") == TransactionalValue(1, 1)


def test_opaque_map_recomputes_a_changed_batch(tmp_path: Path) -> None:
    m = OpaqueMap(SqliteMap(tmp_path / "m.db"))
    m.update(1, {"n": add(10)})
    m.update(2, {"n": add(5)})
    m.update(2, {"n": add(7)})  # txid 2 replayed with a bigger batch
    assert m.get("n") == OpaqueValue(17, 10, 2)
