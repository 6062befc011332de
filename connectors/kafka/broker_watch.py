"""What a Kafka spout task watches to see a broker outage: its fetches, or a probe of its own
while nothing fetches.

A fetch answers every partition it asks for, records or not (aiokafka's
``last_poll_timestamp`` moves), so a fetching partition whose timestamp stands still for
``after`` seconds is a stall (a blackhole), and one that moves means the broker answers.
A paused partition is not fetched at all, and a spout pauses every partition exactly when
an outage hits it hardest: its pending trees at the limit (the sink is down, or slow) and
its buffer full. While nothing fetches, the watch therefore sends a small request of its
own, ListOffsets "earliest" for the assigned partitions (it goes to their leaders, the
brokers the fetches would go to; the answer's offsets are not used): every ``probe_every``
seconds while the broker answers, every look while it does not. Its error, or its silence
for ``after`` seconds, is an outage; its answer ends one. A task with no partitions
assigned has nothing to watch (the group coordinator's own errors are aiokafka's lines).
While the task's group rebalances, its partitions are not fetched though the broker
answers: the watch then probes them as it does paused ones, so only a probe's error or
silence, a real outage, is reported.

Every line goes through the task's ``Outage``: one WARNING when an outage starts, one INFO
with its length when it ends.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer

from connectors.kafka.kafka_errors import describe, is_outage
from connectors.kafka.outage import IdleProbe, Outage, StallWatch

__all__ = ["BrokerWatch", "FetchAnswers"]


class FetchAnswers:
    """Whether any fetch was answered between two looks at the partitions' last-fetch
    timestamps (pure: the timestamps are the argument)."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: Mapping[Any, int | None] = {}

    def moved(self, polls: Mapping[Any, int | None]) -> bool:
        """True if a partition's timestamp is set and differs from the previous look's."""
        seen, self._seen = self._seen, polls
        return any(ts is not None and ts != seen.get(tp) for tp, ts in polls.items())


class BrokerWatch:
    """One spout task's outage watch; ``look`` is called about once a second.

    Guarantees: a fetch unanswered for ``after`` seconds, or a probe that fails or stays
    unanswered for ``after`` seconds, calls ``outage.down`` (one WARNING per outage); a fetch
    or probe answered afterwards calls ``outage.up`` (one INFO). At most one probe is
    outstanding; ``close`` cancels it.
    """

    def __init__(self, consumer: AIOKafkaConsumer, outage: Outage, after: float,
                 probe_every: float) -> None:
        self._consumer = consumer
        self._outage = outage
        self._after = after
        self._answers = FetchAnswers()
        self._stall = StallWatch()
        self._probe = IdleProbe(outage, after, probe_every,
                                "a probe sent while every partition is paused",
                                lambda exc: describe(exc) if is_outage(exc) else None)

    def look(self, now: float, halted: bool, rebalancing: bool = False) -> None:
        """Compare the fetches with the last look; probe if nothing fetches (while the group
        rebalances nothing is fetched, and that is no stall: ``rebalance.py``)."""
        consumer = self._consumer
        try:
            assigned = consumer.assignment()
            fetching = set() if rebalancing else assigned - consumer.paused()
            polls = {tp: consumer.last_poll_timestamp(tp) for tp in assigned}
        except AssertionError:
            return  # a rebalance ran between the calls: look again next time
        if self._answers.moved(polls):
            self._outage.up(now)
        marker = tuple(sorted((tp, polls[tp]) for tp in fetching))
        still = self._stall.check(marker, bool(fetching) and not halted, now)
        if still >= self._after:
            self._outage.down(now - still, f"no fetch answered for {still:.0f} s")
        idle = not (fetching or halted) and bool(assigned)
        self._probe.look(now, functools.partial(consumer.beginning_offsets, sorted(assigned))
                         if idle else None)

    async def close(self) -> None:
        """Cancel the outstanding probe, if any, and wait for it to end."""
        await self._probe.close()
