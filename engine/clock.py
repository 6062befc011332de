"""The one clock the engine and the connectors read: the running event loop's.

Timeouts, back-off, ticks and rates read ``now()`` (or a ``Clock`` handed in), never
``time.monotonic()``: under ``engine.testing``'s virtual-time loop every part then sees
the same virtual seconds, and a test of a 30 s timeout takes milliseconds. Pure cores
(the timer wheel, the acker ledger) take the time as an argument instead. Wall-clock
timestamps written into records (epoch milliseconds) are the one exception: those use
``time.time()`` because they mean a date, not a duration.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["Clock", "loop_clock", "now"]

Clock = Callable[[], float]
"""Seconds on a monotonic scale; only differences mean anything."""


def now() -> float:
    """The running loop's time (seconds); call it from a coroutine or loop callback."""
    return asyncio.get_running_loop().time()


def loop_clock() -> Clock:
    """The running loop's ``time`` method, bound once, or ``now`` outside a running loop."""
    try:
        return asyncio.get_running_loop().time
    except RuntimeError:
        return now
