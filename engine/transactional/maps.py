"""A key → value map in SQLite, and the two exact-once committer maps built on it.

``SqliteMap`` is the store the example committers keep real state in: JSON values, keys of
any JSON type, ``put_many`` atomic. ``TransactionalMap`` and ``OpaqueMap`` apply a batch's
updates to many keys in one SQLite transaction with the "value + txid" and "value + previous
value + txid" rules (``values``), so a committer that crashes mid-write leaves either all or
none of a transaction's updates.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

import orjson

from engine.sqlite_file import connect, transaction
from engine.transactional.values import OpaqueValue, TransactionalValue

__all__ = ["OpaqueMap", "SqliteMap", "TransactionalMap"]

V = TypeVar("V", TransactionalValue, OpaqueValue)

_shared: dict[tuple[Path, str], SqliteMap] = {}
_shared_lock = threading.Lock()


def _key(key: Any) -> bytes:
    return orjson.dumps(key, option=orjson.OPT_SORT_KEYS)


class SqliteMap:
    """A persistent ``key -> value`` map (both JSON) in table ``table`` of the file ``path``."""

    def __init__(self, path: Path | str, table: str = "kv") -> None:
        if not table.replace("_", "").isalnum():
            raise ValueError(f"table must be letters, digits and '_', got {table!r}")
        self.path = Path(path)
        self.table = table
        self._conn = connect(self.path)
        self._conn.execute(f'CREATE TABLE IF NOT EXISTS "{table}" '
                           "(k BLOB PRIMARY KEY, v BLOB NOT NULL)")

    @classmethod
    def shared(cls, path: Path | str, table: str = "kv") -> SqliteMap:
        """One instance per (file, table) in this process: cheap to ask for per batch."""
        key = (Path(path).resolve(), table)
        with _shared_lock:
            found = _shared.get(key)
            if found is None:
                found = _shared[key] = cls(path, table)
            return found

    def get(self, key: Any, default: Any = None) -> Any:
        """The value stored for ``key``, or ``default``."""
        row = self._conn.execute(f'SELECT v FROM "{self.table}" WHERE k = ?',
                                 (_key(key),)).fetchone()
        return default if row is None else orjson.loads(row[0])

    def get_many(self, keys: Iterable[Any]) -> list[Any]:
        """The values of ``keys`` in order, ``None`` where nothing is stored."""
        return [self.get(k) for k in keys]

    def put(self, key: Any, value: Any) -> None:
        """Store ``value`` for ``key``."""
        self.put_many({key: value}.items())

    def put_many(self, items: Iterable[tuple[Any, Any]]) -> None:
        """Store every ``(key, value)`` in one transaction: all or none."""
        rows = [(_key(k), orjson.dumps(v)) for k, v in items]
        with transaction(self._conn) as conn:
            conn.executemany(f'INSERT OR REPLACE INTO "{self.table}" VALUES (?, ?)', rows)

    def items(self) -> list[tuple[Any, Any]]:
        """Every ``(key, value)``, in key order of their JSON encoding."""
        rows = self._conn.execute(f'SELECT k, v FROM "{self.table}" ORDER BY k').fetchall()
        return [(orjson.loads(k), orjson.loads(v)) for k, v in rows]

    def close(self) -> None:
        """Close the connection (and forget a ``shared`` instance)."""
        with _shared_lock:
            for key, found in list(_shared.items()):
                if found is self:
                    del _shared[key]
        self._conn.close()


class _ValueMap(Generic[V]):
    """Keys holding values of type ``V`` (``from_json``, ``update``, ``to_json``)."""

    value_type: type[V]

    def __init__(self, store: SqliteMap, initial: Any = 0) -> None:
        self.store = store
        self.initial = initial

    def get(self, key: Any) -> V:
        """The stored value of ``key`` (``initial`` and no txid if none)."""
        return self.value_type.from_json(self.store.get(key), self.initial)

    def update(self, txid: int, changes: Mapping[Any, Callable[[Any], Any]]) -> dict[Any, V]:
        """Apply ``changes[key]`` for ``txid`` to each key, atomically; returns new values."""
        new = {k: self.get(k).update(txid, change) for k, change in changes.items()}
        self.store.put_many((k, v.to_json()) for k, v in new.items())
        return new


class TransactionalMap(_ValueMap[TransactionalValue]):
    """Keys holding ``TransactionalValue``s: each txid's update applies once per key."""

    value_type = TransactionalValue


class OpaqueMap(_ValueMap[OpaqueValue]):
    """Keys holding ``OpaqueValue``s: a replayed txid's update replaces its earlier one."""

    value_type = OpaqueValue
