"""KafkaSpout and KafkaBolt behaviours on the test broker: the per-partition cap, retries
that succeed, and a produce that fails."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import orjson

from connectors.kafka import KafkaBolt, KafkaSpout
from engine import BasicBolt, Bolt, Config, FailedException, LocalCluster, TopologyBuilder
from tests.connectors.kafka.helpers import (
    FAST_GROUP,
    eventually,
    high_watermarks,
    produce,
    read_all,
    unique,
    wait_committed,
)

N = 120


class Gate(Bolt):
    """Acks tuples from partitions not in ``hold``; keeps the others until released."""

    def __init__(self, hold: set[int]) -> None:
        self.hold = hold
        self.seen: list[tuple[int, bytes]] = []
        self.held: list[tuple[Any, Any]] = []

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.seen.append((tup["partition"], tup["value"]))
        if tup["partition"] in self.hold:
            self.held.append((self.collector, tup))
        else:
            self.collector.ack(tup)

    def release(self) -> None:
        self.hold.clear()
        held, self.held = self.held, []
        for collector, tup in held:
            collector.ack(tup)


async def test_cap_pauses_only_the_partition_at_it(kafka_broker) -> None:
    # A resumed partition waits for the consumer's in-flight long poll (fetch_max_wait_ms)
    # before it is fetched again, hence the short wait here.
    bootstrap = kafka_broker.bootstrap
    topic, group = unique("capped"), unique("g")
    await kafka_broker.create_topic(topic, 2)
    for partition in (0, 1):
        await produce(bootstrap, topic, [(None, b"p%d-%d" % (partition, i)) for i in range(N)],
                      partition=partition)
    gate = Gate(hold={0})
    builder = TopologyBuilder()
    builder.set_spout("kafka", KafkaSpout(topic, bootstrap, group, fields=("partition", "value"),
                                          value_format="bytes", max_uncommitted_offsets=20,
                                          commit_interval_secs=0.2, fetch_max_wait_ms=50,
                                          **FAST_GROUP))
    builder.set_bolt("gate", gate).shuffle_grouping("kafka")
    conf = Config()
    conf.set_message_timeout_secs(60)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("capped", conf, builder.create_topology())

        async def partition_one_done() -> bool:
            return sum(1 for p, _ in gate.seen if p == 1) == N

        await eventually(partition_one_done, 20, "partition 1 flowing past the cap")
        from_zero = [v for p, v in gate.seen if p == 0]
        assert from_zero == [b"p0-%d" % i for i in range(20)]  # exactly the cap, in order
        gate.release()
        await wait_committed(bootstrap, group, topic, {0: N, 1: N}, 20,
                             "partition 0 resumed and committed")
        await cluster.kill_topology("capped", wait_secs=5)
    assert Counter(v for _, v in gate.seen) == Counter(
        b"p%d-%d" % (p, i) for p in (0, 1) for i in range(N))


class Flaky(BasicBolt):
    """Fails each value its first ``failures`` times, then passes it on."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.attempts: Counter[str] = Counter()

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["value"])

    def execute(self, tup: Any, collector: Any) -> None:
        value = tup["value"]
        self.attempts[value] += 1
        if self.attempts[value] <= self.failures:
            raise FailedException(f"attempt {self.attempts[value]} of {value}")
        collector.emit([value])


async def test_transient_failures_are_retried_with_backoff_and_pass(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    source, sink, failed, group = unique("in"), unique("out"), unique("failed"), unique("g")
    for topic in (source, sink, failed):
        await kafka_broker.create_topic(topic, 1)
    values = [f"v{i}" for i in range(30)]
    await produce(bootstrap, source, [(None, v.encode()) for v in values])
    flaky = Flaky(failures=2)
    spout = KafkaSpout(source, bootstrap, group, fields=("value",), max_retries=2,
                       retry_backoff_secs=(0.05, 0.1), failed_topic=failed,
                       commit_interval_secs=0.2, **FAST_GROUP)
    builder = TopologyBuilder()
    builder.set_spout("kafka", spout)
    builder.set_bolt("flaky", flaky).shuffle_grouping("kafka")
    builder.set_bolt("out", KafkaBolt(sink, bootstrap)).shuffle_grouping("flaky")
    ends = await high_watermarks(bootstrap, source)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("flaky", Config(), builder.create_topology())
        await wait_committed(bootstrap, group, source, ends, 20, "every record committed")
        await cluster.kill_topology("flaky", wait_secs=5)
    assert flaky.attempts == Counter(dict.fromkeys(values, 3))
    assert spout.counters.retried == 60
    assert sorted(r.value.decode() for r in await read_all(bootstrap, sink)) == sorted(values)
    assert await read_all(bootstrap, failed) == []


async def test_failed_produce_fails_the_tuple_until_the_failed_topic(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    source, sink, failed, group = unique("in"), unique("out"), unique("failed"), unique("g")
    for topic in (source, sink, failed):
        await kafka_broker.create_topic(topic, 1)
    big = b"x" * 5000
    records = [(None, b"small-1"), (b"big", big), (None, b"small-2")]
    await produce(bootstrap, source, records)
    builder = TopologyBuilder()
    builder.set_spout("kafka", KafkaSpout(source, bootstrap, group, fields=("value",),
                                          value_format="bytes", max_retries=1,
                                          retry_backoff_secs=(0.05, 0.1), failed_topic=failed,
                                          commit_interval_secs=0.2, **FAST_GROUP))
    # Records above max_request_size are refused by the producer: the produce fails.
    builder.set_bolt("out", KafkaBolt(sink, bootstrap, value_format="bytes",
                                      max_request_size=2000)).shuffle_grouping("kafka")
    ends = await high_watermarks(bootstrap, source)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("produce-fails", Config(), builder.create_topology())
        await wait_committed(bootstrap, group, source, ends, 20, "every record committed")
        stats = cluster.stats("produce-fails")["components"]
        await cluster.kill_topology("produce-fails", wait_secs=5)
    assert stats["out"]["failed"] >= 2 and stats["kafka"]["failed"] == 2
    assert sorted(r.value for r in await read_all(bootstrap, sink)) == [b"small-1", b"small-2"]
    [written] = [orjson.loads(r.value) for r in await read_all(bootstrap, failed)]
    assert (written["offset"], written["attempts"], written["key"]) == (1, 2, "Ymln")
    assert written["reason"].startswith("MessageSizeTooLargeError: The message is")
    assert written["failed_by"] == "out"


class HoldFrom(Bolt):
    """Acks tuples below ``offset``; keeps the others until ``release``; records all."""

    def __init__(self, offset: int | None) -> None:
        self.offset = offset
        self.seen: list[tuple[int, int]] = []
        self.held: list[tuple[Any, Any]] = []

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.seen.append((tup["partition"], tup["offset"]))
        if self.offset is not None and tup["offset"] >= self.offset:
            self.held.append((self.collector, tup))
        else:
            self.collector.ack(tup)

    def release(self) -> None:
        self.offset = None
        held, self.held = self.held, []
        for collector, tup in held:
            collector.ack(tup)


def holding_topology(topic: str, bootstrap: str, group: str, bolt: Bolt) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("kafka", KafkaSpout(topic, bootstrap, group,
                                          fields=("partition", "offset"),
                                          commit_interval_secs=0.2, **FAST_GROUP))
    builder.set_bolt("hold", bolt).shuffle_grouping("kafka")
    return builder.create_topology()


async def test_rebalance_commits_done_offsets_and_new_owner_resumes_there(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    topic, group = unique("rebalanced"), unique("g")
    await kafka_broker.create_topic(topic, 2)
    for partition in (0, 1):
        await produce(bootstrap, topic, [(None, b"x")] * 40, partition=partition)
    first, second = HoldFrom(20), HoldFrom(None)
    conf = Config()
    conf.set_message_timeout_secs(60)
    async with LocalCluster() as a, LocalCluster() as b:
        await a.submit_topology("a", conf, holding_topology(topic, bootstrap, group, first))
        await wait_committed(bootstrap, group, topic, {0: 20, 1: 20}, 20,
                             "offsets 0-19 committed, 20-39 held")
        assert len(first.seen) == 80
        await b.submit_topology("b", conf, holding_topology(topic, bootstrap, group, second))

        async def second_got_a_partition() -> bool:
            return any(offset >= 20 for _, offset in second.seen)

        await eventually(second_got_a_partition, 20, "the new member reading from offset 20")
        # The old owner's late acks for the revoked partition must be ignored, harmlessly.
        first.release()
        await wait_committed(bootstrap, group, topic, {0: 40, 1: 40}, 20,
                             "every offset committed after the rebalance")
        errors = [a.stats("a")["components"]["kafka"]["errors"],
                  b.stats("b")["components"]["kafka"]["errors"]]
    assert errors == [0, 0]
    # The new member started at the committed offset: nothing below 20 was re-read.
    assert second.seen and min(offset for _, offset in second.seen) == 20
    assert {(p, o) for p in (0, 1) for o in range(40)} <= set(first.seen) | set(second.seen)


async def test_small_buffer_pauses_fetching_without_losing_records(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    topic, group = unique("small-buffer"), unique("g")
    await kafka_broker.create_topic(topic, 3)
    await produce(bootstrap, topic, [(None, b"%d" % i) for i in range(600)])
    gate = Gate(hold=set())
    builder = TopologyBuilder()
    builder.set_spout("kafka", KafkaSpout(topic, bootstrap, group, fields=("partition", "value"),
                                          value_format="bytes", buffer_size=16,
                                          commit_interval_secs=0.2, **FAST_GROUP))
    builder.set_bolt("gate", gate).shuffle_grouping("kafka")
    ends = await high_watermarks(bootstrap, topic)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("small-buffer", Config(), builder.create_topology())
        await wait_committed(bootstrap, group, topic, ends, 20, "every record committed")
        await cluster.kill_topology("small-buffer", wait_secs=5)
    assert sorted(int(v) for _, v in gate.seen) == list(range(600))


async def test_without_failed_topic_given_up_records_are_dropped_and_counted(
        kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    source, sink, group = unique("in"), unique("out"), unique("g")
    await kafka_broker.create_topic(source, 1)
    await kafka_broker.create_topic(sink, 1)
    values = [f"v{i}" for i in range(10)]
    await produce(bootstrap, source, [(None, v.encode()) for v in values])
    spout = KafkaSpout(source, bootstrap, group, fields=("value",), max_retries=0,
                       commit_interval_secs=0.2, **FAST_GROUP)
    builder = TopologyBuilder()
    builder.set_spout("kafka", spout)
    builder.set_bolt("flaky", Flaky(failures=1)).shuffle_grouping("kafka")
    builder.set_bolt("out", KafkaBolt(sink, bootstrap)).shuffle_grouping("flaky")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("no-failed-topic", Config(), builder.create_topology())
        await wait_committed(bootstrap, group, source, {0: 10}, 20,
                             "offsets committed past the dropped records")
        tasks = cluster.stats("no-failed-topic")["metrics"]["kafka"]
        await cluster.kill_topology("no-failed-topic", wait_secs=5)
    assert (spout.counters.dropped, spout.counters.retried, spout.counters.failed_records) == (
        10, 0, 0)
    assert [m["dropped"] for m in tasks.values()] == [10]  # what the runner's verdict reads
    assert await read_all(bootstrap, sink) == []


class SlowToLookUpCommits(KafkaSpout):
    """Its committed-offset look-ups take a while, as on a loaded machine: the consumer
    starts fetching newly assigned partitions while the assignment callback still runs."""

    async def _start_clients(self) -> None:
        await super()._start_clients()
        consumer = self._consumer
        look_up = consumer.committed

        async def slow_committed(tp: Any) -> Any:
            await asyncio.sleep(0.3)
            return await look_up(tp)

        consumer.committed = slow_committed  # type: ignore[method-assign]


async def test_records_fetched_during_a_slow_assignment_are_not_skipped(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    topic, group = unique("slow-assign"), unique("g")
    await kafka_broker.create_topic(topic, 2)
    await produce(bootstrap, topic, [(None, b"%d" % i) for i in range(400)])
    gate = Gate(hold=set())
    builder = TopologyBuilder()
    builder.set_spout("kafka", SlowToLookUpCommits(topic, bootstrap, group,
                                                   fields=("partition", "value"),
                                                   value_format="bytes",
                                                   commit_interval_secs=0.2, **FAST_GROUP))
    builder.set_bolt("gate", gate).shuffle_grouping("kafka")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("slow-assign", Config(), builder.create_topology())
        # Once the group has settled (the first records committed), more records: were the
        # first ones skipped while the assignment callback ran, the commits passed them.
        first = await high_watermarks(bootstrap, topic)
        await wait_committed(bootstrap, group, topic, first, 30, "the first records committed")
        await produce(bootstrap, topic, [(None, b"%d" % i) for i in range(400, 800)])
        ends = await high_watermarks(bootstrap, topic)
        await wait_committed(bootstrap, group, topic, ends, 20, "every record committed")
        await cluster.kill_topology("slow-assign", wait_secs=5)
    assert sorted(int(v) for _, v in gate.seen) == list(range(800))
