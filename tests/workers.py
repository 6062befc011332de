"""How many pytest-xdist workers the suite starts: one per core this process may use.

``-n auto`` (pyproject's default) asks ``pytest_xdist_auto_num_workers``; the suite's
conftest answers with ``auto_workers()``: the CPUs in this process's affinity mask, fewer
under a cgroup CPU quota (a container given 2 CPUs of a 64-core host), at most
``MAX_WORKERS``, at least 1. ``PYTEST_XDIST_AUTO_NUM_WORKERS=N`` chooses N instead;
``-n N`` on the command line wins over both.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

__all__ = ["MAX_WORKERS", "auto_workers", "quota_cpus"]

MAX_WORKERS = 4
"""Above this, workers add JVMs (Spark) and brokers' clients more than they save."""

_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def quota_cpus(cpu_max: str) -> int | None:
    """CPUs a cgroup v2 ``cpu.max`` (``"QUOTA PERIOD"`` or ``"max PERIOD"``) allows, rounded
    up; None without a quota."""
    quota, _, period = cpu_max.strip().partition(" ")
    if quota == "max" or not period:
        return None
    return max(1, math.ceil(int(quota) / int(period)))


def _available_cpus() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    try:
        quota = quota_cpus(_CPU_MAX.read_text())
    except (OSError, ValueError):
        quota = None
    return cpus if quota is None else min(cpus, quota)


def auto_workers(env: dict[str, str] | None = None, cpus: int | None = None) -> int:
    """Workers for ``-n auto`` (see the module docstring)."""
    given = (os.environ if env is None else env).get("PYTEST_XDIST_AUTO_NUM_WORKERS", "")
    if given.strip().isdigit() and int(given) > 0:
        return int(given)
    return max(1, min(_available_cpus() if cpus is None else cpus, MAX_WORKERS))
