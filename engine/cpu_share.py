"""How much CPU a thread got over a stretch of wall time, and how long it waited for one.

A loop held for 1.5 s by a call that takes 1 µs is not the call's fault: on an overloaded
machine the process waits for a CPU. Linux counts, per thread, the time spent running and
the time spent runnable but waiting in a run queue (``/proc/self/task/<tid>/schedstat``,
nanoseconds). Elsewhere only the process's CPU time is known (``time.process_time``),
which tells busy code from everything else but not starvation from a sleep or blocking
I/O; ``verdict`` says as much as its figures allow.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CpuTimes", "thread_cpu", "verdict"]

_WAITS = "a sleep, blocking I/O, a lock"


@dataclass(frozen=True, slots=True)
class CpuTimes:
    """Cumulative seconds a thread (or the process) ran on a CPU, and waited for one
    (``None`` where the system does not say)."""

    ran: float
    waited: float | None


def thread_cpu(native_id: int) -> Callable[[], CpuTimes]:
    """A reader of thread ``native_id``'s times (``threading.get_native_id()``): from its
    schedstat on Linux, else the process's CPU time with no wait figure."""
    path = f"/proc/self/task/{native_id}/schedstat"

    def read() -> CpuTimes:
        try:
            with open(path, "rb") as f:
                ran, waited = f.read().split()[:2]
            return CpuTimes(int(ran) / 1e9, int(waited) / 1e9)
        except (OSError, ValueError):
            return CpuTimes(time.process_time(), None)

    return read


def verdict(wall: float, start: CpuTimes, end: CpuTimes) -> str:
    """What ``wall`` seconds between two readings were: busy code, starvation, or waiting.

    Half of the wall time is the line: a thread that ran for more than half was kept busy
    by its code; one that waited in a run queue for more than half was starved.
    """
    ran = max(0.0, end.ran - start.ran)
    text = f"its thread got {ran:.2f} s of CPU in those {wall:.2f} s"
    if ran > wall / 2:
        return f"{text}: the code kept the CPU busy"
    if start.waited is None or end.waited is None:
        return f"{text}: the code waited ({_WAITS}) or the machine is starved"
    waited = max(0.0, end.waited - start.waited)
    text = f"{text} and waited {waited:.2f} s for one"
    if waited > wall / 2:
        return f"{text}: the machine is starved, not the code"
    return f"{text}: the code waited ({_WAITS})"
