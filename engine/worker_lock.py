"""One process per worker identity on a host: ``topology.worker.id`` held by a file lock.

Two processes of one topology with the same worker id would give their Kafka consumers the
same static member ids: Kafka fences one of them over and over, and a broker that does not
fence lets both read every partition. A second supervisor of the same topology on one
host (whose default ids are the same) is the easy way to get there. The runner therefore
holds an exclusive lock named after the topology and the worker id while it runs; a
second process that finds it taken stops with one line naming the holder. The operating
system drops the lock when the process ends, however it ends (a SIGKILLed worker's
successor takes it at once).
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.errors import ConfigError

__all__ = ["LOCK_DIR", "hold"]

LOCK_DIR = Path(tempfile.gettempdir()) / "stormloop-worker-ids"
"""Where the locks are (one empty-but-for-a-pid file per topology and worker id)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@contextlib.contextmanager
def hold(topology: str, worker_id: Any, where: Path = LOCK_DIR) -> Iterator[None]:
    """Hold ``worker_id``'s lock for ``topology`` (nothing for None); raises
    ``ConfigError`` (one line) when another live process holds it."""
    try:
        import fcntl
    except ImportError:  # no flock on this platform: nothing is held
        worker_id = None
    if worker_id is None:
        yield
        return
    where.mkdir(parents=True, exist_ok=True)
    path = where / _UNSAFE.sub("_", f"{topology}--{worker_id}.lock")
    with open(path, "a+", encoding="utf-8") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.seek(0)
            holder = file.read().strip() or "?"
            raise ConfigError(
                f"topology.worker.id {str(worker_id)!r} of topology {topology!r} is in use "
                f"by another process on this host (pid {holder}); give each process its "
                f"own (for --workers: --conf topology.worker.id=ID, worker I is ID-I)"
            ) from None
        file.truncate(0)
        file.write(str(os.getpid()))
        file.flush()
        yield
