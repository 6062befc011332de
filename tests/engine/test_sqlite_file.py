"""The engine's SQLite files: several processes opening one new file at once."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from engine.sqlite_file import connect, transaction

PROCESSES = 6
ROUNDS = 40


def _open_and_write(path: str, start: multiprocessing.synchronize.Barrier) -> None:
    start.wait()
    conn = connect(Path(path))
    conn.execute("CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY)")
    with transaction(conn):
        conn.execute("INSERT INTO t DEFAULT VALUES")
    conn.close()


def test_processes_opening_one_new_file_at_once_all_get_it(tmp_path: Path) -> None:
    """The workers of one host share their state file: the first openings race to switch
    a new file to WAL, where SQLite would answer one of them "database is locked"."""
    ctx = multiprocessing.get_context("fork")
    for i in range(ROUNDS):
        path = tmp_path / f"{i}" / "state.sqlite3"
        start = ctx.Barrier(PROCESSES)
        procs = [ctx.Process(target=_open_and_write, args=(str(path), start))
                 for _ in range(PROCESSES)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(30)
        assert [p.exitcode for p in procs] == [0] * PROCESSES, f"round {i}"
        rows = connect(path).execute("SELECT count(*) FROM t").fetchone()[0]
        assert rows == PROCESSES
