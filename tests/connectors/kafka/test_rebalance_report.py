"""A rebalance is reported as one, not as a broker outage.

A second member joins the spout's group while the spout has tuples in flight that take
longer than its ``revoke_drain_secs``: its revoke waits that long. Records are written all
along; the consumer fetches each partition ahead once and then no more until they are
taken: seconds in which nothing is fetched while the broker answers. The spout watches for
outages every second with ``outage_after_secs=1``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from connectors.kafka import KafkaSpout
from connectors.kafka.assignor import strategy
from connectors.kafka.rebalance import ASKED, RebalanceWatch
from engine import Config, LocalCluster, TopologyBuilder
from tests.connectors.kafka.helpers import FAST_GROUP, Slow, eventually, produce, unique

DRAIN_SECS = 3.0  # how long the spout's revoke waits for its tuples in flight


async def test_a_long_rebalance_is_reported_as_a_rebalance_not_an_outage(
        kafka_broker, caplog) -> None:
    caplog.set_level(logging.INFO, logger="connectors.kafka")
    bootstrap = kafka_broker.bootstrap
    topic, group = unique("in"), unique("g")
    await kafka_broker.create_topic(topic, 4)
    await produce(bootstrap, topic, [(b"k%d" % i, b"v") for i in range(100)])
    builder = TopologyBuilder()
    builder.set_spout("kafka", KafkaSpout(topic, bootstrap, group, outage_after_secs=1.0,
                                          revoke_drain_secs=DRAIN_SECS, **FAST_GROUP))
    builder.set_bolt("slow", Slow(30.0), 4).shuffle_grouping("kafka")
    conf = Config()
    conf.set_message_timeout_secs(60)
    joiner = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                              enable_auto_commit=False, **FAST_GROUP,
                              **strategy({}, None, group, "joiner", print))
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf, builder.create_topology())

        async def in_flight() -> bool:
            return cluster.stats("t")["spout_pending"] > 0

        await eventually(in_flight, 30, "tuples in flight")
        writing = asyncio.create_task(_write_all_along(bootstrap, topic))
        await joiner.start()
        try:
            async def rebalanced() -> bool:
                await joiner.getmany(timeout_ms=100)
                return "group rebalance done in" in caplog.text

            await eventually(rebalanced, 60, "the spout's rebalance to end", every=0.0)
        finally:
            writing.cancel()
            await joiner.stop()
            await cluster.kill_topology("t", wait_secs=0)
    lines = [r.getMessage() for r in caplog.records if r.name == "connectors.kafka"]
    assert not [line for line in lines if "unreachable" in line or "outage" in line], lines
    done = [line for line in lines if "group rebalance done in" in line]
    assert done and f"({ASKED})" in done[0], lines
    seconds = float(done[0].split("done in ")[1].split(" s")[0])
    assert seconds >= DRAIN_SECS, done
    under_way = [line for line in lines if "group rebalance under way for" in line]
    assert under_way, lines  # once it ran outage_after_secs


async def _write_all_along(bootstrap: str, topic: str) -> None:
    """A few records into each of the 4 partitions every 0.1 s, until cancelled."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        while True:
            for partition in range(4):
                await producer.send(topic, b"v", key=b"k", partition=partition)
            await asyncio.sleep(0.1)
    finally:
        await producer.stop()


class _Inner:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def on_partitions_revoked(self, revoked: Any) -> None:
        self.calls.append("revoked")

    async def on_partitions_assigned(self, assigned: Any) -> None:
        self.calls.append("assigned")


async def test_the_first_join_is_no_rebalance_and_a_lost_membership_is_named(caplog) -> None:
    caplog.set_level(logging.INFO, logger="t")
    coordinator = type("C", (), {"member_id": "m-1"})()
    consumer = type("K", (), {"_coordinator": coordinator})()
    clock = [0.0]
    inner = _Inner()
    watch = RebalanceWatch(inner, consumer, "task", logging.getLogger("t"), 15.0,
                           lambda: clock[0])
    await watch.on_partitions_revoked(set())
    clock[0] = 5.0
    await watch.on_partitions_assigned({1, 2})
    assert inner.calls == ["revoked", "assigned"] and watch.since is None
    assert caplog.records == []  # joining at start: no line
    coordinator.member_id = ""  # aiokafka resets it when the group no longer knows the member
    await watch.on_partitions_revoked({1, 2})
    for clock[0] in (10.0, 20.0, 21.0, 30.0):
        watch.look(clock[0])
    await watch.on_partitions_assigned({1})
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert lines[0].startswith("task: group rebalance under way for 15 s (this member had "
                               "been dropped from the group"), lines
    assert lines[1].startswith("task: group rebalance done in 25.0 s (this member had been "
                               "dropped"), lines
    assert lines[1].endswith("; 1 partitions assigned"), lines
