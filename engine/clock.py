"""The one clock the engine and the connectors read: the running event loop's.

Timeouts, back-off, ticks and rates read ``now()`` (or a ``Clock`` handed in), never
``time.monotonic()``: under ``engine.testing``'s virtual-time loop every part then sees
the same virtual seconds, and a test of a 30 s timeout takes milliseconds. Pure cores
(``engine.deadlines``, the acker ledger) take the time as an argument instead. Two
exceptions: wall-clock timestamps written into records (epoch milliseconds) use
``time.time()`` because they mean a date, not a duration; and the loop watchdog's thread
reads ``time.monotonic()``, since a blocked loop cannot tell it the time.
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
