"""A consumer group's rebalance as one spout task sees it: when it started, why, how long it
took; told apart from a broker outage.

aiokafka calls the listener's ``on_partitions_revoked`` when the member (re)joins its
group, before the join, and ``on_partitions_assigned`` once the group gave it its new
partitions; in between its partitions are not fetched, which looks like a stalled fetch
but is not an outage: the broker answers, the group is waiting for its members (for one
that stopped without leaving, up to its session timeout). ``RebalanceWatch`` wraps the
fetcher's listener, and while a rebalance runs the broker watch does not count the
stopped fetches (it probes the broker instead, so a real outage is still one).

Lines (through the task's logger): none for a quick rebalance, one INFO with its length
and cause when it ends (the first join at start is not a rebalance), and one WARNING once
one has run for ``after`` seconds (never silence while nothing is fetched).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from aiokafka import ConsumerRebalanceListener

__all__ = ["RebalanceWatch", "cause_of"]

DROPPED = ("this member had been dropped from the group (no heartbeat reached the "
           "coordinator for session_timeout_ms, or another member took its instance id)")
ASKED = "the group coordinator started it (a member joined, left or timed out)"
JOINING = "joining the group"


def cause_of(consumer: Any, joined: bool) -> str:
    """Why ``consumer`` is rejoining its group, as far as it can tell: its first join, its
    membership lost (aiokafka resets the member id), or a rebalance of the group."""
    if not joined:
        return JOINING
    coordinator = getattr(consumer, "_coordinator", None)
    if coordinator is not None and getattr(coordinator, "member_id", None) == "":
        return DROPPED
    return ASKED


class RebalanceWatch(ConsumerRebalanceListener):
    """Times this member's rebalances around ``inner``'s callbacks (see the module doc).

    Guarantees: ``since`` is the loop time the running rebalance started, None between
    rebalances; each rebalance after the first assignment logs one INFO when it ends, and
    one WARNING at most, when ``look`` sees it running for ``after`` seconds.
    """

    def __init__(self, inner: ConsumerRebalanceListener, consumer: Any, who: str,
                 log: logging.Logger, after: float, clock: Callable[[], float]) -> None:
        self._inner = inner
        self._consumer = consumer
        self._who = who
        self._log = log
        self._after = after
        self._clock = clock
        self.since: float | None = None
        self.cause = ""
        self._joined = False
        self._warned = False

    async def on_partitions_revoked(self, revoked: Any) -> None:
        """The member rejoins: note when and why, then let ``inner`` give them up."""
        self.since = self._clock()
        self.cause = cause_of(self._consumer, self._joined)
        self._warned = False
        await self._inner.on_partitions_revoked(revoked)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        """The group assigned ``assigned``: let ``inner`` take them, then say how long the
        rebalance took."""
        try:
            await self._inner.on_partitions_assigned(assigned)
        finally:  # a failing callback ends the rebalance all the same
            since, self.since = self.since, None
            if since is not None and self._joined:
                self._log.info("%s: group rebalance done in %.1f s (%s); %d partitions "
                               "assigned", self._who, self._clock() - since, self.cause,
                               len(assigned))
            self._joined = True

    def look(self, now: float) -> None:
        """Called about once a second: one WARNING once a rebalance ran ``after`` s."""
        since = self.since
        if since is None or self._warned or now - since < self._after:
            return
        self._warned = True
        what = "waiting for the group to assign partitions" if not self._joined else (
            "group rebalance under way")
        self._log.warning("%s: %s for %.0f s (%s); nothing is fetched until it completes "
                          "(a member that stopped without leaving holds it up to its "
                          "session_timeout_ms)", self._who, what, now - since, self.cause)
