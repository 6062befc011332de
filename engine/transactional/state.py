"""Coordinator and emitter state of transactional topologies, in a SQLite file.

What Storm kept in ZooKeeper (``TransactionalState`` and ``RotatingTransactionalState``):
the next transaction id to commit, and each live transaction's batch metadata, per scope
(``"coordinator"`` for the coordinator's metadata, ``"partition:<i>"`` for a partition's).
Rows are keyed by the transactional id, so topologies with different ids share one file.

Durability: WAL journal with ``synchronous=NORMAL``; every write is its own transaction, so
a killed process loses nothing that was written (an OS crash may lose the last writes).
Metadata must be JSON: ``None``, bools, numbers, strings, lists and dicts with str keys.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import orjson

from engine.sqlite_file import DEFAULT_STATE_DIR, connect, transaction

__all__ = [
    "COORDINATOR_SCOPE",
    "DEFAULT_STATE_DIR",
    "STATE_DB_NAME",
    "TRANSACTIONAL_STATE_DIR",
    "TransactionalState",
    "partition_scope",
    "state_dir",
]

TRANSACTIONAL_STATE_DIR = "transactional.state.dir"
STATE_DB_NAME = "transactional.sqlite3"
COORDINATOR_SCOPE = "coordinator"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tx_current (
    tx_id TEXT PRIMARY KEY,
    next_txid INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tx_meta (
    tx_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    txid INTEGER NOT NULL,
    meta BLOB NOT NULL,
    PRIMARY KEY (tx_id, scope, txid)
);
"""


def partition_scope(partition: int) -> str:
    """The scope under which partition ``partition``'s batch metadata is kept."""
    return f"partition:{partition}"


def state_dir(conf: Mapping[str, Any]) -> Path:
    """The directory named by ``transactional.state.dir`` (default ``.stormloop-state``)."""
    return Path(conf.get(TRANSACTIONAL_STATE_DIR) or DEFAULT_STATE_DIR)


class TransactionalState:
    """The persisted progress of one transactional topology (one transactional id).

    Guarantees: ``commit(txid)`` moves the next transaction to ``txid + 1`` and drops older
    coordinator metadata in one SQLite transaction; ``put`` with ``drop_later`` replaces a
    transaction's metadata and removes that of every later transaction atomically.
    """

    def __init__(self, path: Path | str, transactional_id: str) -> None:
        self.path = Path(path)
        self.transactional_id = transactional_id
        self._conn = connect(self.path)
        self._conn.executescript(_SCHEMA)

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any], transactional_id: str) -> TransactionalState:
        """The state of ``transactional_id`` in the directory ``conf`` names."""
        return cls(state_dir(conf) / STATE_DB_NAME, transactional_id)

    def next_txid(self) -> int:
        """The first transaction not yet committed (1 for a new topology)."""
        row = self._conn.execute("SELECT next_txid FROM tx_current WHERE tx_id = ?",
                                 (self.transactional_id,)).fetchone()
        return 1 if row is None else int(row[0])

    def get(self, scope: str, txid: int, default: Any = None) -> Any:
        """The metadata stored for ``txid`` in ``scope``, or ``default``."""
        row = self._conn.execute(
            "SELECT meta FROM tx_meta WHERE tx_id = ? AND scope = ? AND txid = ?",
            (self.transactional_id, scope, txid)).fetchone()
        return default if row is None else orjson.loads(row[0])

    def has(self, scope: str, txid: int) -> bool:
        """Whether metadata is stored for ``txid`` in ``scope``."""
        row = self._conn.execute(
            "SELECT 1 FROM tx_meta WHERE tx_id = ? AND scope = ? AND txid = ?",
            (self.transactional_id, scope, txid)).fetchone()
        return row is not None

    def latest_before(self, scope: str, txid: int) -> tuple[int, Any] | None:
        """``(txid', meta)`` for the largest stored ``txid' < txid`` in ``scope``, or None."""
        row = self._conn.execute(
            "SELECT txid, meta FROM tx_meta WHERE tx_id = ? AND scope = ? AND txid < ? "
            "ORDER BY txid DESC LIMIT 1", (self.transactional_id, scope, txid)).fetchone()
        return None if row is None else (int(row[0]), orjson.loads(row[1]))

    def put(self, scope: str, txid: int, meta: Any, *, drop_later: bool = False) -> None:
        """Store ``meta`` for ``txid``; with ``drop_later`` also forget every later txid."""
        blob = orjson.dumps(meta)
        with self._transaction() as conn:
            if drop_later:
                conn.execute("DELETE FROM tx_meta WHERE tx_id = ? AND scope = ? AND txid > ?",
                             (self.transactional_id, scope, txid))
            conn.execute("INSERT OR REPLACE INTO tx_meta VALUES (?, ?, ?, ?)",
                         (self.transactional_id, scope, txid, blob))

    def cleanup_before(self, scope: str, txid: int) -> None:
        """Forget the metadata of every transaction before ``txid`` in ``scope``."""
        self._conn.execute("DELETE FROM tx_meta WHERE tx_id = ? AND scope = ? AND txid < ?",
                           (self.transactional_id, scope, txid))

    def commit(self, txid: int) -> None:
        """Record ``txid`` as committed: the next transaction becomes ``txid + 1``.

        The coordinator metadata of ``txid`` itself is kept: it seeds ``txid + 1``'s.
        """
        with self._transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO tx_current VALUES (?, ?)",
                         (self.transactional_id, txid + 1))
            conn.execute("DELETE FROM tx_meta WHERE tx_id = ? AND scope = ? AND txid < ?",
                         (self.transactional_id, COORDINATOR_SCOPE, txid))

    def close(self) -> None:
        """Close the connection; the object is unusable afterwards."""
        self._conn.close()

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        return transaction(self._conn)
