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
    """An autocommit connection to ``path`` in WAL mode, creating the directory if needed.

    Processes that open one file at once (the workers of ``--workers N`` on one host share
    ``topology.state.dir``) take turns: a new file starts in rollback-journal mode, where
    SQLite answers a second writer "database is locked" at once instead of waiting, and
    switching it to WAL is such a write. A lock file beside it (``<name>-open.lock``)
    orders the openings; once in WAL mode, writers wait for each other (``timeout``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with _opening(path):
        # check_same_thread off: SqliteMap.shared hands one connection to whichever loop
        # asks; the engine uses a connection from one event loop at a time.
        conn = sqlite3.connect(path, isolation_level=None, timeout=30,
                               check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    return conn


@contextmanager
def _opening(path: Path) -> Iterator[None]:
    """Hold the exclusive lock of ``path``'s openings (nothing where the platform has no
    ``flock``)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path.with_name(path.name + "-open.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


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
