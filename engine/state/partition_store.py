"""``PartitionStore``: an input partition's state on this host's disk, with the changelog
offset it reflects, kept across revokes and restarts.

A stateful bolt behind a repartition hop keeps one namespace per input partition. Beside
its committed map (the ``kv`` table of the ``SqliteStateStore``), each namespace has a
position row: the changelog topic, the changelog offset the map reflects
(``next_offset``: every record below it is in the map), and what the changelog's newest
marker said (``marker``: the group's committed input offset when it was written, and the
input offset its tuples did not reach), and ``started``, whether its start record was
seen. A restore reads the changelog only past ``next_offset``.

A checkpoint's changes reach this store only after the broker confirmed them in the
changelog (``commit``, with the offset after them), so the map is never ahead of the
changelog. They stay *unsettled* while the group's committed input offset has not passed
the lowest input offset behind them (``first``): a restore after a crash drops the unsettled
changes whose tuples will be read again (``resume``), exactly as a restore from the
changelog skips their records, and settles the rest into the map. Every method is one
SQLite transaction, so a killed process leaves either the old or the new position with
its map, never a map without its position.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from engine.state.store import DELETED, SqliteStateStore, decode_key

__all__ = ["PartitionStore", "Position"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS partition_position (
    ns TEXT PRIMARY KEY, topic TEXT NOT NULL, next_offset INTEGER NOT NULL,
    marked INTEGER, covered INTEGER, started INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS unsettled (
    ns TEXT NOT NULL, seq INTEGER NOT NULL, first INTEGER NOT NULL,
    key BLOB NOT NULL, value BLOB,
    PRIMARY KEY (ns, seq, key)) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class Position:
    """Where a partition's local state stands in its changelog (see the module docstring)."""

    topic: str
    next_offset: int
    marker: tuple[int, int] | None
    started: bool


class PartitionStore:
    """Per-partition maps with their changelog positions, in a ``SqliteStateStore``'s file."""

    def __init__(self, store: SqliteStateStore) -> None:
        self.store = store
        self._conn = store.connection
        self._conn.executescript(_SCHEMA)

    def position(self, ns: str) -> Position | None:
        """Where ``ns`` stands, or None if this host holds nothing of it."""
        row = self._conn.execute("SELECT topic, next_offset, marked, covered, started FROM "
                                 "partition_position WHERE ns = ?", (ns,)).fetchone()
        if row is None:
            return None
        marker = None if row[3] is None else (row[2], row[3])
        return Position(row[0], row[1], marker, bool(row[4]))

    def load(self, ns: str) -> dict[Any, Any]:
        """The map of ``ns``: its settled map with its unsettled changes on top, in order."""
        conn = self._conn
        data = {decode_key(k): orjson.loads(v)
                for k, v in conn.execute("SELECT key, value FROM kv WHERE ns = ?", (ns,))}
        for k, v in conn.execute("SELECT key, value FROM unsettled WHERE ns = ? "
                                 "ORDER BY seq", (ns,)):
            if v is None:
                data.pop(decode_key(k), None)
            else:
                data[decode_key(k)] = orjson.loads(v)
        return data

    def begin(self, ns: str, topic: str) -> None:
        """Forget what this host holds of ``ns``: a restore from the changelog's start
        follows."""
        with self.store.transaction() as conn:
            self._forget(conn, ns)
            conn.execute("INSERT INTO partition_position (ns, topic, next_offset) "
                         "VALUES (?, ?, 0)", (ns, topic))

    def resume(self, ns: str, committed: int) -> None:
        """Before a restore from the held position: drop the unsettled changes whose lowest
        input offset is at or beyond ``committed`` (their tuples will be read again) and
        settle the others; forget the checkpoint ids of an earlier run."""
        with self.store.transaction() as conn:
            conn.execute("DELETE FROM unsettled WHERE ns = ? AND first >= ?", (ns, committed))
            self._settle(conn, ns, None)
            conn.execute("DELETE FROM committed WHERE ns = ?", (ns,))
            conn.execute("DELETE FROM prepared WHERE ns = ?", (ns,))
            conn.execute("DELETE FROM prepared_kv WHERE ns = ?", (ns,))

    def apply(self, ns: str, records: Mapping[bytes, bytes | None], next_offset: int,
              marker: tuple[int, int] | None, started: bool) -> None:
        """Restore: put encoded changelog ``records`` (``None``: deleted) in the map and
        move the position to ``next_offset``, in one transaction."""
        with self.store.transaction() as conn:
            self._put(conn, ns, records)
            self._move(conn, ns, next_offset, marker, started)

    def commit(self, ns: str, changes: Mapping[Any, Any], first: int, next_offset: int,
               marker: tuple[int, int] | None) -> None:
        """A checkpoint's ``changes`` (``DELETED`` for a removed key), confirmed in the
        changelog up to ``next_offset``, whose tuples' lowest input offset is ``first``:
        kept unsettled; earlier changes with a lower ``first`` are settled (the group's
        committed offset has passed them)."""
        dumps, deleted = orjson.dumps, DELETED
        rows = [(ns, next_offset, first, dumps(k), None if v is deleted else dumps(v))
                for k, v in changes.items()]
        with self.store.transaction() as conn:
            self._settle(conn, ns, first)
            conn.executemany("INSERT OR REPLACE INTO unsettled (ns, seq, first, key, value) "
                             "VALUES (?, ?, ?, ?, ?)", rows)
            self._move(conn, ns, next_offset, marker, True)

    def stage(self, ns: str, rows: list[tuple[int, int, bytes, bytes | None]],
              next_offset: int, marker: tuple[int, int] | None, started: bool,
              topic: str) -> None:
        """A standby's copy: changelog ``rows`` ``(offset, first, key, value)`` (JSON;
        ``None``: deleted) kept unsettled, as this host's own commits are, and the position
        moved to ``next_offset``, in one transaction."""
        with self.store.transaction() as conn:
            conn.execute("INSERT OR IGNORE INTO partition_position (ns, topic, next_offset) "
                         "VALUES (?, ?, 0)", (ns, topic))
            conn.executemany("INSERT OR REPLACE INTO unsettled (ns, seq, first, key, value) "
                             "VALUES (?, ?, ?, ?, ?)", [(ns, *row) for row in rows])
            self._move(conn, ns, next_offset, marker, started)

    def settle(self, ns: str, committed: int) -> None:
        """Fold the unsettled changes whose lowest input offset is below ``committed`` (the
        group's committed offset has passed them) into the map."""
        with self.store.transaction() as conn:
            self._settle(conn, ns, committed)

    def adopt(self, ns: str, standby: str) -> bool:
        """Take the standby copy ``standby`` as ``ns`` when it is further along in the same
        changelog than what ``ns`` holds; whether it did."""
        mine, copy = self.position(ns), self.position(standby)
        if copy is None or (mine is not None and (mine.topic != copy.topic
                                                  or mine.next_offset >= copy.next_offset)):
            return False
        with self.store.transaction() as conn:
            self._forget(conn, ns)
            for table in ("kv", "unsettled", "partition_position"):
                conn.execute(f"UPDATE {table} SET ns = ? WHERE ns = ?", (ns, standby))
        return True

    @staticmethod
    def _move(conn: Any, ns: str, next_offset: int, marker: tuple[int, int] | None,
              started: bool) -> None:
        marked, covered = (None, None) if marker is None else marker
        conn.execute("UPDATE partition_position SET next_offset = ?, marked = ?, covered = ?, "
                     "started = ? WHERE ns = ?",
                     (next_offset, marked, covered, int(started), ns))

    @staticmethod
    def _settle(conn: Any, ns: str, below: int | None) -> None:
        """Fold the unsettled changes (those with ``first`` below ``below``; all for None)
        into the map, in order."""
        bound = "" if below is None else " AND first < ?"
        args: tuple[Any, ...] = (ns,) if below is None else (ns, below)
        rows = conn.execute("SELECT key, value FROM unsettled WHERE ns = ?" + bound +
                            " ORDER BY seq", args).fetchall()
        if not rows:
            return
        PartitionStore._put(conn, ns, dict(rows))  # in order: each key's last change
        conn.execute("DELETE FROM unsettled WHERE ns = ?" + bound, args)

    @staticmethod
    def _put(conn: Any, ns: str, records: Mapping[bytes, bytes | None]) -> None:
        """Encoded ``key -> value`` records (``None``: deleted) into ``ns``'s map."""
        conn.executemany("INSERT OR REPLACE INTO kv (ns, key, value) VALUES (?, ?, ?)",
                         [(ns, k, v) for k, v in records.items() if v is not None])
        gone = [(ns, k) for k, v in records.items() if v is None]
        if gone:
            conn.executemany("DELETE FROM kv WHERE ns = ? AND key = ?", gone)

    @staticmethod
    def _forget(conn: Any, ns: str) -> None:
        for table in ("kv", "unsettled", "partition_position", "committed", "prepared",
                      "prepared_kv"):
            conn.execute(f"DELETE FROM {table} WHERE ns = ?", (ns,))
