"""The outage watch while the group rebalances: stopped fetches are no outage, a probe that
fails is one."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiokafka import TopicPartition
from aiokafka.errors import KafkaConnectionError

from connectors.kafka.broker_watch import BrokerWatch
from connectors.kafka.outage import Outage

TP = TopicPartition("t", 0)


class _Consumer:
    """One assigned partition whose fetches stopped; probes answer or fail."""

    def __init__(self, probe_fails: bool) -> None:
        self.probe_fails = probe_fails

    def assignment(self) -> set[TopicPartition]:
        return {TP}

    def paused(self) -> set[TopicPartition]:
        return set()

    def last_poll_timestamp(self, tp: TopicPartition) -> int:
        return 1000  # never moves

    async def beginning_offsets(self, tps: Any) -> dict[TopicPartition, int]:
        if self.probe_fails:
            raise KafkaConnectionError("connection refused")
        return dict.fromkeys(tps, 0)


async def _look(consumer: _Consumer, rebalancing: bool, caplog: Any) -> list[str]:
    log = logging.getLogger("watch-test")
    outage = Outage("task", log)
    watch = BrokerWatch(consumer, outage, after=3.0, probe_every=1.0)  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO, logger="watch-test"):
        for now in range(10):
            watch.look(float(now), False, rebalancing)
            await asyncio.sleep(0)  # the probe, if any, runs
            await asyncio.sleep(0)
        await watch.close()
    return [r.getMessage() for r in caplog.records if r.name == "watch-test"]


async def test_fetches_stopped_by_a_rebalance_are_no_outage(caplog) -> None:
    assert await _look(_Consumer(probe_fails=False), True, caplog) == []


async def test_the_same_stop_outside_a_rebalance_is_a_stall(caplog) -> None:
    lines = await _look(_Consumer(probe_fails=False), False, caplog)
    assert lines == ["task: Kafka broker unreachable (no fetch answered for 3 s); retrying "
                     "quietly until it answers"]


async def test_a_broker_unreachable_during_a_rebalance_is_an_outage(caplog) -> None:
    lines = await _look(_Consumer(probe_fails=True), True, caplog)
    assert lines == ["task: Kafka broker unreachable (KafkaConnectionError: connection "
                     "refused); retrying quietly until it answers"]
