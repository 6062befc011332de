"""Broker outages as two log lines: one WARNING when it starts, one INFO when it ends.

Pure (time is an argument, from the running loop): the spout and the bolt tell it what
they see, ``down`` on a connection error or a stall (requests sent and no answer for a
while: a network blackhole neither resets nor answers), ``up`` on the next answer. Whatever
happens in between (retries, refused connections, timeouts) is counted, not logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["IdleProbe", "Outage", "StallWatch", "servers_text"]


class Outage:
    """The reachability of the broker as one client sees it.

    Guarantee: between two ``up`` lines there is exactly one ``down`` line, whatever the
    number of ``down`` calls; ``up`` while reachable logs nothing.
    """

    __slots__ = ("_errors", "_log", "_where", "_who", "down_since")

    def __init__(self, who: str, log: logging.Logger, where: str | None = None) -> None:
        self._who = who
        self._log = log
        # The bootstrap servers, named in the WARNING: with a source and a sink on
        # different brokers, the operator sees which one is down.
        self._where = "" if where is None else f"; bootstrap servers {where}"
        #: when the current outage started (loop time), or None while reachable; a plain
        #: attribute, so callers on a per-record path can test it cheaply before ``up``
        self.down_since: float | None = None
        self._errors = 0

    def down(self, now: float, cause: str) -> None:
        """An error or stall that means the broker cannot be reached (``now``: when it was
        first seen; a stall reports when the answers stopped)."""
        self._errors += 1
        if self.down_since is None:
            self.down_since = now
            self._log.warning("%s: Kafka broker unreachable (%s%s); retrying quietly until "
                              "it answers", self._who, cause, self._where)

    def up(self, now: float) -> None:
        """The broker answered."""
        since = self.down_since
        if since is None:
            return
        self.down_since = None
        errors, self._errors = self._errors, 0
        self._log.info("%s: Kafka broker reachable again after an outage of %.1f s "
                       "(%d errors meanwhile)", self._who, now - since, errors)


class StallWatch:
    """Detects answers that stop coming while requests are outstanding.

    Fed every second or so with a progress marker (any value that changes when the
    broker answers) and whether anything is waiting for an answer; ``check`` returns how
    long the marker has been still while something waited (0.0 when it moved or nothing
    waited).
    """

    __slots__ = ("_marker", "_since")

    def __init__(self) -> None:
        self._marker: object = None
        self._since: float | None = None

    def check(self, marker: object, waiting: bool, now: float) -> float:
        """Seconds without progress while waiting, as of ``now``."""
        if not waiting or marker != self._marker or self._since is None:
            self._marker = marker
            self._since = now
            return 0.0
        return now - self._since


def servers_text(bootstrap_servers: str | list[str]) -> str:
    """``bootstrap_servers`` as one line: ``"host1:9092,host2:9092"``."""
    return bootstrap_servers if isinstance(bootstrap_servers, str) else ",".join(
        bootstrap_servers)


class IdleProbe:
    """What a client with nothing waiting for the broker sends to see an outage: a small
    request of its own, every ``every`` seconds while the broker answers, every look while
    it does not. Its failure (``failure(exc)`` gives the cause, or None for an error that is
    an answer from a reachable broker), or its silence for ``after`` seconds, starts an
    outage (``outage.down``: one WARNING); its answer ends one (``outage.up``: one INFO).
    ``what`` names the request in the silence's cause. At most one request is
    outstanding."""

    __slots__ = ("_after", "_every", "_failure", "_next", "_outage", "_since", "_task",
                 "_what")

    def __init__(self, outage: Outage, after: float, every: float, what: str,
                 failure: Callable[[BaseException], str | None]) -> None:
        self._outage = outage
        self._after = after
        self._every = every
        self._what = what
        self._failure = failure
        self._task: asyncio.Task[Any] | None = None
        self._since = 0.0
        self._next = 0.0

    def look(self, now: float, request: Callable[[], Awaitable[Any]] | None) -> None:
        """Judge the outstanding probe, or send ``request()`` when one is due; ``request``
        None: the client is not idle (its own requests show the broker's answers)."""
        task = self._task
        if task is None:
            if request is not None and now >= self._next:
                self._since = now
                self._task = asyncio.ensure_future(request())
            return
        if not task.done():
            if now - self._since >= self._after:
                self._outage.down(self._since, f"no answer for {now - self._since:.0f} s to "
                                               f"{self._what}")
            return
        self._task = None
        exc = None if task.cancelled() else task.exception()
        if exc is None:
            self._outage.up(now)
        elif (cause := self._failure(exc)) is not None:
            self._outage.down(self._since, cause)
        self._next = now if self._outage.down_since is not None else now + self._every

    async def close(self) -> None:
        """Cancel the outstanding probe, if any, and wait for it to end."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
