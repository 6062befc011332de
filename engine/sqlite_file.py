"""The SQLite files that keep the engine's state (stateful bolts, transactional
topologies): where they live by default, how a connection is opened, one write
transaction.

Durability: WAL journal with ``synchronous=NORMAL``: a killed process loses nothing that
was committed (an OS crash may lose the last commits).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["DEFAULT_STATE_DIR", "connect", "transaction"]

# Where state (topology.state.dir) and transactional progress (transactional.state.dir)
# are kept unless configured, relative to the working directory.
DEFAULT_STATE_DIR = ".stormloop-state"


def connect(path: Path) -> sqlite3.Connection:
    """An autocommit connection to ``path`` in WAL mode, creating the directory if needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # check_same_thread off: SqliteMap.shared hands one connection to whichever loop asks;
    # the engine uses a connection from one event loop at a time.
    conn = sqlite3.connect(path, isolation_level=None, timeout=30, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` on an autocommit connection, or ``ROLLBACK`` if
    the block raised."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
