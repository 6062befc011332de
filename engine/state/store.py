"""Where stateful bolts keep their state: the ``StateStore`` interface and its SQLite default.

A store holds, per namespace (``"<topology>/<component>-<task>"``), a committed key-value map
with the id of the checkpoint that committed it, and at most one prepared change set
waiting for its commit. The three-phase checkpoint maps onto it directly:

- ``prepare(ns, txid, changes)`` saves the changes made since the last prepare, durably,
  beside the committed map (merged into a change set already prepared, if any);
- ``commit(ns, txid)`` applies the prepared changes to the committed map, atomically;
  committing a txid already committed does nothing, so a commit replayed after a crash is
  harmless;
- ``rollback(ns)`` drops the prepared changes.

``write(ns, changes)`` applies changes directly (the checkpoint spout's own progress).
Keys and values are JSON (``orjson``); a key read back as a list becomes a tuple.

``SqliteStateStore``: one file, ``<topology.state.dir>/state.sqlite3``, WAL journal, every
call its own transaction, so a killed process loses no call that returned. A network store
implements the same five methods.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

import orjson

from engine.config import TOPOLOGY_STATE_DIR
from engine.sqlite_file import DEFAULT_STATE_DIR, connect, transaction

__all__ = ["DELETED", "SqliteStateStore", "StateStore", "decode_key", "open_store",
           "release_store", "state_path"]

STATE_FILE = "state.sqlite3"


class _Deleted:
    def __repr__(self) -> str:
        return "DELETED"


DELETED: Any = _Deleted()
"""The value of a key deleted in a change set."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (
    ns TEXT NOT NULL, key BLOB NOT NULL, value BLOB NOT NULL,
    PRIMARY KEY (ns, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS committed (ns TEXT PRIMARY KEY, txid INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS prepared (ns TEXT PRIMARY KEY, txid INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS prepared_kv (
    ns TEXT NOT NULL, key BLOB NOT NULL, value BLOB,
    PRIMARY KEY (ns, key)) WITHOUT ROWID;
"""


class StateStore(Protocol):
    """Committed maps and prepared change sets, per namespace."""

    def load(self, ns: str) -> tuple[int | None, dict[Any, Any]]:
        """The committed txid (None if never committed) and the committed map."""
        ...

    def prepared_txid(self, ns: str) -> int | None:
        """The txid of the change set prepared and not yet committed, if any."""
        ...

    def prepare(self, ns: str, txid: int, changes: Mapping[Any, Any]) -> None:
        """Save ``changes`` (``DELETED`` for a removed key) for the commit of ``txid``."""

    def commit(self, ns: str, txid: int) -> None:
        """Apply the prepared changes; a txid at or below the committed one is a no-op."""

    def rollback(self, ns: str) -> None:
        """Drop the prepared changes."""

    def write(self, ns: str, changes: Mapping[Any, Any]) -> None:
        """Apply ``changes`` to the committed map at once."""


def decode_key(raw: bytes) -> Any:
    """A stored key: JSON lists come back as tuples, so that keys stay hashable."""
    key = orjson.loads(raw)
    return _freeze(key)


def _freeze(value: Any) -> Any:
    return tuple(_freeze(v) for v in value) if isinstance(value, list) else value


def _encode(value: Any, what: str, ns: str) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError as exc:
        raise TypeError(f"state {ns!r}: {what} {value!r} is not JSON-serialisable: {exc}") from None


def _rows(ns: str, changes: Mapping[Any, Any]) -> list[tuple[str, bytes, bytes | None]]:
    """``changes`` as ``(ns, key, value)`` rows, ``None`` for a deleted key: one pass of
    ``orjson``; a second, per item, only to name what is not JSON-serialisable."""
    dumps, deleted = orjson.dumps, DELETED
    try:
        return [(ns, dumps(k), None if v is deleted else dumps(v)) for k, v in changes.items()]
    except TypeError:
        return [(ns, _encode(k, "key", ns), None if v is DELETED else _encode(v, "value", ns))
                for k, v in changes.items()]


class SqliteStateStore:
    """The default store: a SQLite file; see the module docstring."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn = connect(path)
        self._conn.executescript(_SCHEMA)
        self.users = 0

    def load(self, ns: str) -> tuple[int | None, dict[Any, Any]]:
        rows = self._conn.execute("SELECT key, value FROM kv WHERE ns = ?", (ns,))
        data = {decode_key(k): orjson.loads(v) for k, v in rows}
        row = self._conn.execute("SELECT txid FROM committed WHERE ns = ?", (ns,)).fetchone()
        return (None if row is None else row[0]), data

    def prepared_txid(self, ns: str) -> int | None:
        row = self._conn.execute("SELECT txid FROM prepared WHERE ns = ?", (ns,)).fetchone()
        return None if row is None else row[0]

    def prepare(self, ns: str, txid: int, changes: Mapping[Any, Any]) -> None:
        rows = _rows(ns, changes)
        with self._transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO prepared (ns, txid) VALUES (?, ?)", (ns, txid))
            conn.executemany("INSERT OR REPLACE INTO prepared_kv (ns, key, value) "
                             "VALUES (?, ?, ?)", rows)

    def commit(self, ns: str, txid: int) -> None:
        with self._transaction() as conn:
            row = conn.execute("SELECT txid FROM committed WHERE ns = ?", (ns,)).fetchone()
            if row is not None and row[0] >= txid:
                return
            prepared = conn.execute("SELECT txid FROM prepared WHERE ns = ?", (ns,)).fetchone()
            if prepared is not None and prepared[0] == txid:
                conn.execute("INSERT OR REPLACE INTO kv (ns, key, value) SELECT ns, key, value "
                             "FROM prepared_kv WHERE ns = ? AND value IS NOT NULL", (ns,))
                conn.execute("DELETE FROM kv WHERE ns = ? AND key IN (SELECT key FROM "
                             "prepared_kv WHERE ns = ? AND value IS NULL)", (ns, ns))
                self._drop_prepared(conn, ns)
            conn.execute("INSERT OR REPLACE INTO committed (ns, txid) VALUES (?, ?)", (ns, txid))

    def rollback(self, ns: str) -> None:
        with self._transaction() as conn:
            self._drop_prepared(conn, ns)

    def write(self, ns: str, changes: Mapping[Any, Any]) -> None:
        with self._transaction() as conn:
            for k, v in changes.items():
                key = _encode(k, "key", ns)
                if v is DELETED:
                    conn.execute("DELETE FROM kv WHERE ns = ? AND key = ?", (ns, key))
                else:
                    conn.execute("INSERT OR REPLACE INTO kv (ns, key, value) VALUES (?, ?, ?)",
                                 (ns, key, _encode(v, "value", ns)))

    @property
    def connection(self) -> sqlite3.Connection:
        """The file's connection, for reads of the tables that modules beside this one keep
        in the same file (``PartitionStore``)."""
        return self._conn

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """One write transaction on the file: committed when the block ends, rolled back
        if it raises."""
        return transaction(self._conn)

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    @staticmethod
    def _drop_prepared(conn: sqlite3.Connection, ns: str) -> None:
        conn.execute("DELETE FROM prepared WHERE ns = ?", (ns,))
        conn.execute("DELETE FROM prepared_kv WHERE ns = ?", (ns,))

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        return transaction(self._conn)


_shared: dict[Path, SqliteStateStore] = {}
_shared_lock = threading.Lock()


def state_path(conf: Mapping[str, Any]) -> Path:
    """The SQLite file under ``topology.state.dir`` (default ``.stormloop-state``)."""
    return Path(conf.get(TOPOLOGY_STATE_DIR) or DEFAULT_STATE_DIR) / STATE_FILE


def open_store(conf: Mapping[str, Any]) -> SqliteStateStore:
    """The store for ``conf``, shared by every task that uses the same file."""
    path = state_path(conf).resolve()
    with _shared_lock:
        store = _shared.get(path)
        if store is None:
            store = _shared[path] = SqliteStateStore(path)
        store.users += 1
        return store


def release_store(store: SqliteStateStore) -> None:
    """One user of ``open_store`` is done; the last one closes the file."""
    with _shared_lock:
        store.users -= 1
        if store.users <= 0 and _shared.get(store.path) is store:
            del _shared[store.path]
            store.close()
