"""When the Kafka spout commits, and that its commits land in order.

The schedule is pure; the ordering is checked against the test broker: a commit held back
(as aiokafka holds one it retries after a retriable error) while a revoke commits a later
offset must not land after it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from connectors.kafka import KafkaSpout
from connectors.kafka.commits import CommitSchedule
from connectors.kafka.fetcher import Fetcher, Partition
from engine import Config, LocalCluster, TopologyBuilder
from tests.connectors.kafka.helpers import (
    FAST_GROUP,
    Slow,
    committed,
    eventually,
    produce,
    total_committed,
    unique,
)


def test_the_interval_commits_only_what_is_ready() -> None:
    s = CommitSchedule(5.0, None, now=0.0)
    assert not s.due(4.9, 100)
    assert not s.due(5.0, 0)  # nothing new to commit
    assert s.due(5.0, 1)
    s.committed(5.1)
    assert not s.due(10.0, 1) and s.due(10.1, 1)


def test_an_interval_that_ran_out_during_a_join_commits_the_first_completed_record() -> None:
    s = CommitSchedule(5.0, 10_000, now=0.0)
    assert not s.due(6.0, 0)  # the join ended at 6 s: nothing done yet, nothing sent
    assert s.due(6.1, 1)  # not an interval later


def test_enough_ready_offsets_commit_before_the_interval() -> None:
    s = CommitSchedule(5.0, 200, now=0.0)
    assert not s.due(0.1, 199)
    assert s.due(0.1, 200)
    s.committed(0.2)
    assert not s.due(0.3, 150) and s.due(0.3, 250)


def test_a_failed_commit_is_tried_again_soon_not_at_once() -> None:
    s = CommitSchedule(5.0, 200, now=0.0, retry=0.5)
    assert s.due(1.0, 300)
    s.failed(1.0)
    assert not s.due(1.2, 10_000)  # not hammering a group that is rebalancing
    assert s.due(1.5, 1)  # and not waiting a whole interval either
    s.committed(1.6)
    assert not s.due(2.0, 1)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match=r"^CommitSchedule: interval must be > 0"):
        CommitSchedule(0, None, now=0.0)
    with pytest.raises(ValueError, match=r"every >= 1 or None, got 1.0, 0.5, 0$"):
        CommitSchedule(1.0, 0, now=0.0)


class HeldFirstCommit(AIOKafkaConsumer):
    """A real consumer whose first commit waits for ``release`` before it is sent; records
    the offsets of every commit in the order they landed."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.release = asyncio.Event()
        self.held = asyncio.Event()
        self.landed: list[dict[TopicPartition, int]] = []

    async def commit(self, offsets: Any = None) -> None:
        if not self.held.is_set():
            self.held.set()
            await self.release.wait()
        await super().commit(offsets)
        self.landed.append(dict(offsets))


async def _no_writes(parts: list[Partition]) -> None:
    return None


async def test_a_held_back_commit_never_lands_after_a_later_one(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    topic, group = unique("in"), unique("g")
    await kafka_broker.create_topic(topic, 1)
    await produce(bootstrap, topic, [(None, b"%d" % i) for i in range(10)])
    tp = TopicPartition(topic, 0)
    consumer = HeldFirstCommit(bootstrap_servers=bootstrap, group_id=group,
                               enable_auto_commit=False, **FAST_GROUP)
    fetcher = Fetcher(consumer, lambda record: [record.value], lambda *a: None, _no_writes,
                      max_uncommitted=100, max_buffer=100, commit_interval=3600)
    await consumer.start()
    consumer.subscribe([topic], listener=fetcher.listener)
    fetching = asyncio.create_task(fetcher.run(lambda exc: None))
    try:
        while len(fetcher.buffer) < 10:
            await asyncio.sleep(0.02)
        fetcher.ack_many([(topic, 0, o) for o in range(4)])
        periodic = asyncio.create_task(fetcher.commit())  # reads 4, then is held back
        await consumer.held.wait()
        fetcher.ack_many([(topic, 0, o) for o in range(4, 8)])
        revoke = asyncio.create_task(fetcher.revoke([tp]))  # commits 8
        await asyncio.wait({revoke}, timeout=0.3)  # lands here unless it waits its turn
        consumer.release.set()
        await asyncio.gather(periodic, revoke)
        assert [c[tp] for c in consumer.landed] == [4, 8]
        assert await committed(bootstrap, group, topic) == {0: 8}
    finally:
        fetching.cancel()
        await asyncio.gather(fetching, return_exceptions=True)
        await consumer.stop()


async def test_commits_follow_progress_not_only_the_interval(kafka_broker) -> None:
    """With an hour's commit interval, the group's committed offset still trails what was
    processed by about ``topology.max.spout.pending``: a crash re-reads little."""
    bootstrap = kafka_broker.bootstrap
    topic, group = unique("in"), unique("g")
    await kafka_broker.create_topic(topic, 2)
    n, pending = 1000, 50
    await produce(bootstrap, topic, [(None, b"%d" % i) for i in range(n)])
    b = TopologyBuilder()
    b.set_spout("kafka", KafkaSpout(topic, bootstrap, group, commit_interval_secs=3600,
                                    **FAST_GROUP))
    b.set_bolt("work", Slow(0.0), 2).shuffle_grouping("kafka")
    conf = Config()
    conf.set_max_spout_pending(pending)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf, b.create_topology())

        async def nearly_all_committed() -> bool:
            return await total_committed(bootstrap, group, topic) >= n - 2 * pending

        await eventually(nearly_all_committed, 30, "commits while the topology runs")
