"""Log lines an operator can read under a storm (pure: time is an argument or the loop's).

Two helpers, one state object each, shared by every task of a component or kept per task:

``ErrorThrottle``: repeated errors of one component. At most ``limit`` (5) lines per
``window`` (10 s), as Storm's ``topology.max.error.report.per.interval``; the first line
after a window in which errors were dropped says how many::

    throttle = ErrorThrottle(log)               # one per component (or per task)
    ...
    except Exception as exc:
        throttle.error("bolt 'count' task 3: execute raised %r", exc)

``IntervalWarning``: a condition that may hold for a long time (trees timing out, a queue
staying full, the loop blocked, flow control cutting its limit). At most one WARNING per
``interval`` (10 s) per key, carrying the number of occurrences since the last line::

    timeouts = IntervalWarning(log)
    ...
    timeouts.warn("spout 'words'", "%d trees timed out in the last %.0f s", n=len(failed))

Both take ``now`` as an optional argument; without it they read the running loop's clock
(``asyncio.get_running_loop().time()``), never a wall or monotonic clock of their own.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

__all__ = ["ErrorThrottle", "IntervalWarning"]


def _now(now: float | None) -> float:
    return asyncio.get_running_loop().time() if now is None else now


class ErrorThrottle:
    """At most ``limit`` ERROR lines per ``window`` seconds; then one line counts the rest.

    Windows are fixed: the first error starts one; the first error after it ends starts the
    next, and, when errors were dropped, logs ``"... (N similar errors suppressed in the
    last W s)"`` appended to its own text.
    """

    __slots__ = ("_count", "_log", "_start", "_suppressed", "limit", "window")

    def __init__(self, log: logging.Logger, limit: int = 5, window: float = 10.0) -> None:
        if limit < 1 or window <= 0:
            raise ValueError(f"ErrorThrottle needs limit >= 1 and window > 0, got "
                             f"{limit!r}, {window!r}")
        self._log = log
        self.limit = limit
        self.window = window
        self._start = float("-inf")
        self._count = 0
        self._suppressed = 0

    @property
    def suppressed(self) -> int:
        """Errors dropped in the current window so far."""
        return self._suppressed

    def allow(self, now: float | None = None) -> tuple[bool, int]:
        """Whether an error at ``now`` may be logged, and how many were dropped before it.

        For callers that format their own line (or add a traceback only when allowed).
        """
        t = _now(now)
        dropped = 0
        if t >= self._start + self.window:
            dropped, self._suppressed = self._suppressed, 0
            self._start, self._count = t, 0
        if self._count < self.limit:
            self._count += 1
            return True, dropped
        self._suppressed += 1
        return False, dropped

    def error(self, msg: str, *args: Any, now: float | None = None,
              exc_info: Any = None) -> bool:
        """Log ``msg % args`` at ERROR unless over the limit; True when it was logged."""
        ok, dropped = self.allow(now)
        if ok:
            if dropped:
                msg += f" ({dropped} similar errors suppressed in the last {self.window:g} s)"
            self._log.error(msg, *args, exc_info=exc_info)
        return ok


class IntervalWarning:
    """One WARNING per ``interval`` seconds per key (a component, or component and task).

    ``warn`` counts every call; the line it logs (at most one per interval per key) starts
    with the key and ends with how many times the condition was seen since the last line.
    """

    __slots__ = ("_last", "_log", "_seen", "interval")

    def __init__(self, log: logging.Logger, interval: float = 10.0) -> None:
        if interval <= 0:
            raise ValueError(f"IntervalWarning needs interval > 0, got {interval!r}")
        self._log = log
        self.interval = interval
        self._last: dict[str, float] = {}
        self._seen: dict[str, int] = {}

    def warn(self, key: str, msg: str, *args: Any, n: int = 1,
             now: float | None = None) -> bool:
        """Record ``n`` occurrences for ``key``; log ``"<key>: <msg % args>"`` when due.

        Returns True when a line was logged.
        """
        t = _now(now)
        seen = self._seen.get(key, 0) + n
        last = self._last.get(key)
        if last is not None and t < last + self.interval:
            self._seen[key] = seen
            return False
        self._last[key] = t
        self._seen[key] = 0
        suffix = f" ({seen} times since the last report)" if last is not None else ""
        self._log.warning(f"%s: {msg}{suffix}", key, *args)
        return True

    def forget(self, key: str) -> None:
        """Drop ``key``'s state (the component stopped): its next warning logs at once."""
        self._last.pop(key, None)
        self._seen.pop(key, None)
