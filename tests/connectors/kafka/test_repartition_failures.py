"""Acking and failing across a repartition hop, on the test broker, in one process with
``topology.workers=2`` (the hop is the same in one process as across several).

The upstream tree completes when the broker confirmed the repartition record; a produce
the broker cannot take fails it with the producer's error as reason. The downstream record
(a record of the rows written together) is a tree of its own: failed there, it is retried
and given up to the failed topic by the reader spout, with the downstream reason, and its
offset is committed only then.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from aiokafka import AIOKafkaProducer

from connectors.kafka import KafkaSpout
from connectors.kafka.failed import FailedRecord
from connectors.kafka.repartition import topic_name
from connectors.kafka.repartition_codec import decode_rows
from engine import BasicBolt, Config, FailedException, LocalCluster, TopologyBuilder
from engine.keyed import reader_id, writer_id
from engine.murmur2 import default_partition
from tests.connectors.kafka.helpers import (
    FAST_GROUP,
    committed,
    eventually,
    high_watermarks,
    read_all,
    unique,
)


class Split(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def execute(self, tup: Any, collector: Any) -> None:
        for word in tup["value"].split():
            collector.emit([word])


class Count(BasicBolt):
    """Counts words; refuses the word ``bad``."""

    seen: list[str] = []

    def declare_output_fields(self, declarer: Any) -> None:
        pass

    def execute(self, tup: Any, collector: Any) -> None:
        if tup["word"] == "bad":
            raise FailedException("bad word")
        Count.seen.append(tup["word"])


async def test_failures_on_both_sides_of_the_hop(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    source, failed, group = unique("in"), unique("failed"), unique("g")
    for topic in (source, failed):
        await kafka_broker.create_topic(topic, 2)
    huge = "x" * 1_100_000  # larger than the producer's max_request_size: never written
    lines = ["good words here", "one bad word", f"too {huge}", "more good words"]
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, max_request_size=2_000_000)
    await producer.start()
    try:
        for line in lines:
            await producer.send_and_wait(source, line.encode())
    finally:
        await producer.stop()
    spout = KafkaSpout(source, bootstrap, group, fields=("value",), failed_topic=failed,
                       max_retries=1, retry_backoff_secs=(0.02, 0.05),
                       commit_interval_secs=0.3, **FAST_GROUP)
    b = TopologyBuilder()
    b.set_spout("lines", spout)
    b.set_bolt("split", Split()).shuffle_grouping("lines")
    b.set_bolt("count", Count(), 2).fields_grouping("split", ["word"])
    conf = Config({"topology.workers": 2, "topology.message.timeout.secs": 30})
    Count.seen = []
    ends = await high_watermarks(bootstrap, source)
    hop = topic_name(group, "count")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("hop-failures", conf, b.create_topology())

        async def at(topic: str) -> dict[int, int]:
            # An empty partition has nothing to commit: none committed reads as offset 0.
            return {p: offset or 0 for p, offset in
                    (await committed(bootstrap, group, topic)).items()}

        async def done() -> bool:
            if await at(source) != ends:
                return False
            # Records of rows: the 10 words and "too" again with the retry of its sentence
            hop_at = await at(hop)
            return hop_at == await high_watermarks(bootstrap, hop) and sum(hop_at.values()) > 0

        await eventually(done, 120, "both sides committed to the end")  # joins on a busy machine
        stats = cluster.stats("hop-failures")["components"]
        await cluster.kill_topology("hop-failures", wait_secs=5)
    expected = Counter("good words here one word too too more good words".split())
    assert set(Count.seen) == set(expected) and Counter(Count.seen) >= expected, Count.seen
    records = [FailedRecord.from_json(r.value) for r in await read_all(bootstrap, failed)]
    by_topic = {r.topic: r for r in records}
    assert sorted(by_topic) == sorted([source, hop]), records
    upstream, downstream = by_topic[source], by_topic[hop]
    assert upstream.value.startswith(b"too ")
    assert "MessageSizeTooLarge" in upstream.reason, upstream.reason
    assert upstream.failed_by == writer_id("count")
    assert "bad word" in downstream.reason and downstream.failed_by == "count"
    # The failed record is the packed record the word came in, rows as the hop wrote them.
    assert ["bad"] in decode_rows(downstream.value)
    # Its key is its first row's, which Kafka's partitioner sends back to its partition:
    # a replay of the failed record reaches the process that holds the rows' keys.
    assert downstream.key is not None
    assert default_partition(downstream.key, [0, 1], [0, 1]) == downstream.partition
    # A record of rows is one tree: emitted, like acked and pending, counts records.
    assert 1 <= stats[reader_id("count")]["emitted"] < 10
