"""Broker outages as two log lines: one WARNING when it starts, one INFO when it ends.

Pure (time is an argument, from the running loop): the spout and the bolt tell it what
they see, ``down`` on a connection error or a stall (requests sent and no answer for a
while: a network blackhole neither resets nor answers), ``up`` on the next answer. Whatever
happens in between (retries, refused connections, timeouts) is counted, not logged.
"""

from __future__ import annotations

import logging

__all__ = ["Outage", "StallWatch", "servers_text"]


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
