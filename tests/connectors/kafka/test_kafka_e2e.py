"""KafkaSpout → bolt → KafkaBolt on the real test broker: nothing lost, offsets committed."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import orjson

from connectors.kafka import KafkaBolt, KafkaSpout
from connectors.memory import ListSpout
from engine import BasicBolt, Config, FailedException, LocalCluster, TopologyBuilder
from tests.connectors.kafka.helpers import (
    FAST_GROUP,
    committed,
    eventually,
    high_watermarks,
    produce,
    read_all,
    unique,
    wait_committed,
)


class Upper(BasicBolt):
    """``(key, value)`` → ``(key, VALUE)``; fails values listed in ``poison`` every time."""

    def __init__(self, poison: frozenset[str] = frozenset(), delay: float = 0.0) -> None:
        self.poison = poison
        self.delay = delay

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "value"])

    async def execute(self, tup: Any, collector: Any) -> None:
        if self.delay:
            await asyncio.sleep(self.delay)
        value = tup["value"]
        text = value["v"] if isinstance(value, dict) else value
        if text in self.poison:
            raise FailedException(f"poison {text}")
        collector.emit([tup["key"], text.upper()])


def pipeline(bootstrap: str, source: str, sink: str, group: str, *, parallelism: int = 1,
             poison: frozenset[str] = frozenset(), delay: float = 0.0,
             **spout_options: Any) -> tuple[Any, KafkaSpout]:
    builder = TopologyBuilder()
    options = {**FAST_GROUP, "commit_interval_secs": 0.5, **spout_options}
    spout = KafkaSpout(source, bootstrap, group, **options)
    builder.set_spout("kafka", spout, parallelism)
    builder.set_bolt("upper", Upper(poison, delay), 2).shuffle_grouping("kafka")
    builder.set_bolt("out", KafkaBolt(sink, bootstrap, key_field="key", value_field="value"),
                     2).shuffle_grouping("upper")
    return builder.create_topology(), spout


def conf(timeout: float = 10) -> Config:
    c = Config()
    c.set_message_timeout_secs(timeout)
    c.set_max_spout_pending(1000)
    return c


async def wait_committed_to_end(bootstrap: str, group: str, topic: str,
                                timeout: float = 20) -> None:
    ends = await high_watermarks(bootstrap, topic)
    await wait_committed(bootstrap, group, topic, ends, timeout,
                         f"group {group} committed {ends} on {topic}")


async def test_every_record_out_and_offsets_committed_to_partition_ends(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    source, sink, group = unique("in"), unique("out"), unique("g")
    await kafka_broker.create_topic(source, 3)
    await kafka_broker.create_topic(sink, 3)
    n = 3000
    await produce(bootstrap, source, [(f"k{i}".encode(), f"v{i}".encode()) for i in range(n)])
    async with LocalCluster() as cluster:
        await cluster.submit_topology("e2e", conf(), pipeline(bootstrap, source, sink, group,
                                                              parallelism=2)[0])

        async def all_out() -> bool:
            return cluster.stats("e2e")["components"]["kafka"]["acked"] >= n

        await eventually(all_out, 30, f"{n} acks")
        await wait_committed_to_end(bootstrap, group, source)
        stats = cluster.stats("e2e")["components"]["kafka"]
        await cluster.kill_topology("e2e", wait_secs=5)
    assert stats["failed"] == 0
    out = await read_all(bootstrap, sink)
    assert sorted((r.key, r.value) for r in out) == sorted(
        (f"k{i}".encode(), f"V{i}".encode()) for i in range(n))


async def test_permanently_failing_records_land_once_on_failed_topic(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    source, sink, failed, group = unique("in"), unique("out"), unique("failed"), unique("g")
    for topic in (source, sink, failed):
        await kafka_broker.create_topic(topic, 2)
    n = 200
    poison = frozenset({"v3", "v77", "v150"})
    records = [(f"k{i}".encode() if i % 2 else None, f"v{i}".encode()) for i in range(n)]
    await produce(bootstrap, source, records)
    topology, spout = pipeline(bootstrap, source, sink, group, poison=poison,
                               failed_topic=failed, max_retries=2,
                               retry_backoff_secs=(0.05, 0.2))
    async with LocalCluster() as cluster:
        await cluster.submit_topology("e2e-failed", conf(), topology)
        await wait_committed_to_end(bootstrap, group, source)
        await cluster.kill_topology("e2e-failed", wait_secs=5)
    source_records = {r.value: r for r in await read_all(bootstrap, source)}
    written = [orjson.loads(r.value) for r in await read_all(bootstrap, failed)]
    assert sorted(base64.b64decode(w["value"]) for w in written) == sorted(
        p.encode() for p in poison)
    for w in written:
        original = source_records[base64.b64decode(w["value"])]
        assert (w["topic"], w["partition"], w["offset"]) == (
            original.topic, original.partition, original.offset)
        assert w["key"] == (None if original.key is None
                            else base64.b64encode(original.key).decode())
        assert w["attempts"] == 3
        assert w["reason"] == f"FailedException: poison {original.value.decode()}"
        assert w["failed_by"] == "upper" and "raise FailedException" in w["error_trace"]
        assert (w["topology"], w["component"]) == ("e2e-failed", "kafka")
        assert w["failed_at"] > 0
    out = {r.value for r in await read_all(bootstrap, sink)}
    assert out == {v.upper() for _, v in records if v.decode() not in poison}
    assert (spout.counters.failed_records, spout.counters.retried) == (3, 6)


async def test_malformed_json_goes_to_failed_topic_and_stream_goes_on(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    source, sink, failed, group = unique("in"), unique("out"), unique("failed"), unique("g")
    for topic in (source, sink, failed):
        await kafka_broker.create_topic(topic, 1)
    good = [(b"k%d" % i, orjson.dumps({"v": f"v{i}"})) for i in range(50)]
    bad = [(b"bad1", b"{not json"), (b"bad2", b"\xff\xfe")]
    await produce(bootstrap, source, good[:20] + bad[:1] + good[20:40] + bad[1:] + good[40:])
    spout_options = {"failed_topic": failed, "value_format": "json"}
    topology, spout = pipeline(bootstrap, source, sink, group, **spout_options)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("e2e-json", conf(), topology)
        await wait_committed_to_end(bootstrap, group, source)
        await cluster.kill_topology("e2e-json", wait_secs=5)
    written = [orjson.loads(r.value) for r in await read_all(bootstrap, failed)]
    assert sorted((base64.b64decode(w["key"]), base64.b64decode(w["value"]))
                  for w in written) == sorted(bad)
    assert {w["offset"] for w in written} == {20, 41}
    assert all(w["attempts"] == 1 and "not valid JSON" in w["reason"] for w in written)
    assert (spout.counters.decode_failures, spout.counters.failed_records) == (2, 2)
    out = sorted(r.value for r in await read_all(bootstrap, sink))
    assert out == sorted(f"V{i}".encode() for i in range(50))


async def test_killed_mid_stream_then_restarted_processes_everything(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    source, sink, group = unique("in"), unique("out"), unique("g")
    await kafka_broker.create_topic(source, 2)
    await kafka_broker.create_topic(sink, 2)
    n = 4000
    await produce(bootstrap, source, [(None, f"v{i}".encode()) for i in range(n)])
    topology, _ = pipeline(bootstrap, source, sink, group, delay=0.0005,
                           commit_interval_secs=0.2)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("first", conf(), topology)

        async def some_done() -> bool:
            return cluster.stats("first")["components"]["kafka"]["acked"] >= n // 4

        await eventually(some_done, 30, "a quarter of the records acked")
        await cluster.kill_topology("first", wait_secs=0)
    part_way = await committed(bootstrap, group, source)
    assert sum(o or 0 for o in part_way.values()) < n, "killed too late to test a restart"
    topology, _ = pipeline(bootstrap, source, sink, group)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("second", conf(), topology)
        await wait_committed_to_end(bootstrap, group, source, timeout=30)
        await cluster.kill_topology("second", wait_secs=5)
    out = [r.value for r in await read_all(bootstrap, sink)]
    assert set(out) == {f"V{i}".encode() for i in range(n)}


class Reasons(ListSpout):
    """A ``ListSpout`` that keeps each failure's reason and gives up at the first."""

    def __init__(self, items: list[list[Any]]) -> None:
        super().__init__(items, ["key", "value"], max_retries=0)
        self.reasons: list[Any] = []

    def fail(self, msg_id: Any, reason: Any = None) -> None:
        self.reasons.append(reason)
        super().fail(msg_id, reason)


async def test_a_record_the_bolt_cannot_encode_fails_alone_in_its_batch(kafka_broker) -> None:
    """The Kafka bolt takes whole queue batches: the one tuple whose value JSON cannot
    encode fails with the error as its reason; the rest of its batch is written."""
    sink = unique("sink")
    await kafka_broker.create_topic(sink, 1)
    items = [[f"k{i}", {"n": i}] for i in range(200)]
    items[77] = ["k77", {"n": {1, 2}}]  # a set: not JSON
    spout = Reasons(items)
    builder = TopologyBuilder()
    builder.set_spout("items", spout)
    builder.set_bolt("out", KafkaBolt(sink, kafka_broker.bootstrap, key_field="key",
                                      value_field="value", value_format="json")
                     ).shuffle_grouping("items")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("encode", conf(), builder.create_topology())
        await eventually(lambda: _settled(spout, len(items)), 30, "every item acked or failed")
    assert spout.failed == [(0, 77)] and len(spout.acked) == len(items) - 1
    assert spout.reasons[0].kind == "error" and "TypeError" in spout.reasons[0].message
    written = {r.key.decode() for r in await read_all(kafka_broker.bootstrap, sink)}
    assert written == {f"k{i}" for i in range(200)} - {"k77"}


async def _settled(spout: ListSpout, n: int) -> bool:
    return len(spout.acked) + len(spout.failed) >= n
