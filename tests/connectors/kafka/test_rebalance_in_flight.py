"""A member loses partitions while records are in flight (a second member joins): nothing is
lost; the records it had emitted complete before its revoke commits, so the new owner reads
none of them again (without that drain, duplicates stay within what was in flight)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from connectors.kafka import KafkaBolt, KafkaSpout
from engine import Config, LocalCluster, TopologyBuilder
from tests.connectors.kafka.helpers import (
    FAST_GROUP,
    Slow,
    eventually,
    produce,
    read_all,
    unique,
)

PENDING = 100  # topology.max.spout.pending: the most records one member has in flight



def member(bootstrap: str, source: str, sink: str, group: str, **spout_options: Any) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("kafka", KafkaSpout(source, bootstrap, group, commit_interval_secs=0.5,
                                          **FAST_GROUP, **spout_options))
    builder.set_bolt("slow", Slow(0.002), 4).shuffle_grouping("kafka")
    builder.set_bolt("out", KafkaBolt(sink, bootstrap, key_field="key", value_field="value"),
                     ).shuffle_grouping("slow")
    return builder.create_topology()


async def test_partitions_taken_with_records_in_flight_lose_nothing(kafka_broker) -> None:
    duplicates = await two_members(kafka_broker)
    assert duplicates == 0, duplicates  # in flight at the revoke, completed before its commit


async def test_without_a_drain_a_rebalance_reads_what_was_in_flight_again(kafka_broker) -> None:
    duplicates = await two_members(kafka_broker, revoke_drain_secs=0)
    # Each rebalance re-reads at most what member a had emitted and not yet completed.
    assert duplicates <= PENDING, duplicates


async def two_members(kafka_broker: Any, **spout_options: Any) -> int:
    """Member a busy with records in flight, then b joins; everything must come out. Returns
    the duplicates in the output."""
    bootstrap = kafka_broker.bootstrap
    source, sink, group = unique("in"), unique("out"), unique("g")
    await kafka_broker.create_topic(source, 4)
    await kafka_broker.create_topic(sink, 4)
    n = 4000
    await produce(bootstrap, source, [(b"k%d" % i, b"v%d" % i) for i in range(n)])
    conf = Config()
    conf.set_message_timeout_secs(60)
    conf.set_max_spout_pending(PENDING)
    async with LocalCluster() as a, LocalCluster() as b:
        await a.submit_topology("a", conf, member(bootstrap, source, sink, group,
                                                  **spout_options))

        async def flowing() -> bool:
            stats = a.stats("a")
            return stats["components"]["kafka"]["acked"] >= 500 and stats["spout_pending"] > 0

        await eventually(flowing, 30, "member a busy with records in flight")
        await b.submit_topology("b", conf, member(bootstrap, source, sink, group,
                                                  **spout_options))

        async def b_took_partitions() -> bool:
            return b.stats("b")["components"]["kafka"]["acked"] > 0

        await eventually(b_took_partitions, 30, "member b processing its partitions")

        async def everything_out() -> bool:
            done = {r.value for r in await read_all(bootstrap, sink)}
            return len(done) == n

        await eventually(everything_out, 60, f"all {n} records out", every=1.0)
        await a.kill_topology("a", wait_secs=5)
        await b.kill_topology("b", wait_secs=5)
    counts = Counter(r.value for r in await read_all(bootstrap, sink))
    assert set(counts) == {b"v%d" % i for i in range(n)}
    return sum(counts.values()) - n
