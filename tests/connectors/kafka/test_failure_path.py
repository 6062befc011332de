"""The failure path on the real test broker: every bad record reaches the failed topic with
its cause, fits it, keeps its attempts across replays, and a bad deploy trips the breaker."""

from __future__ import annotations

import base64
import hashlib
import logging
from typing import Any

import orjson
from aiokafka import AIOKafkaProducer

from connectors.kafka import KafkaBolt, KafkaSpout
from connectors.kafka.breaker import DeadLetterLimit
from connectors.kafka.failed import REPLAY_HEADERS
from engine import BasicBolt, Config, LocalCluster, TopologyBuilder
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


class Parse(BasicBolt):
    """``(key, value)`` → ``(key, value["n"])``; raises ``ValueError("boom <n>")`` for n in
    ``boom``."""

    def __init__(self, boom: frozenset[int] = frozenset()) -> None:
        self.boom = boom

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "value"])

    def execute(self, tup: Any, collector: Any) -> None:
        n = tup["value"]["n"]
        if n in self.boom:
            raise ValueError(f"boom {n}")
        collector.emit([tup["key"], str(n)])


class OpenedSpout(KafkaSpout):
    """A ``KafkaSpout`` that lists its opened tasks (the engine's copies) in ``tasks``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tasks: list[KafkaSpout] = []

    async def open(self, conf: Any, context: Any, collector: Any) -> None:
        await super().open(conf, context, collector)
        self.tasks.append(self)


class OpenedBolt(KafkaBolt):
    """A ``KafkaBolt`` that lists its prepared tasks in ``tasks``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tasks: list[KafkaBolt] = []

    async def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        await super().prepare(conf, context, collector)
        self.tasks.append(self)


def topology(bootstrap: str, source: str, sink: str, group: str, failed: str,
             boom: frozenset[int] = frozenset(), **spout_options: Any) -> tuple[Any, OpenedSpout]:
    options = {**FAST_GROUP, "commit_interval_secs": 0.3, "value_format": "json",
               "failed_topic": failed, "max_retries": 1, "retry_backoff_secs": (0.02, 0.05),
               **spout_options}
    spout = OpenedSpout(source, bootstrap, group, **options)
    builder = TopologyBuilder()
    builder.set_spout("kafka", spout)
    builder.set_bolt("parse", Parse(boom), 2).shuffle_grouping("kafka")
    builder.set_bolt("out", OpenedBolt(sink, bootstrap, key_field="key", value_field="value"),
                     ).shuffle_grouping("parse")
    return builder.create_topology(), spout


def conf() -> Config:
    c = Config()
    c.set_message_timeout_secs(30)
    c.set_max_spout_pending(500)
    return c


async def topics(kafka_broker: Any, n: int = 1) -> tuple[str, str, str, str]:
    names = unique("in"), unique("out"), unique("failed"), unique("g")
    for topic in names[:3]:
        await kafka_broker.create_topic(topic, n)
    return names


async def run_until_committed(bootstrap: str, name: str, topo: Any, group: str,
                              source: str) -> dict[str, Any]:
    ends = await high_watermarks(bootstrap, source)
    async with LocalCluster() as cluster:
        await cluster.submit_topology(name, conf(), topo)
        await wait_committed(bootstrap, group, source, ends, 40, f"{group} committed {ends}")
        stats = cluster.stats(name)["components"]
        await cluster.kill_topology(name, wait_secs=5)
    return stats


async def test_a_900_kb_undecodable_record_is_cut_and_the_partition_runs_on(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    source, sink, failed, group = await topics(kafka_broker)
    huge = b"{" + bytes(range(256)) * 3600  # 921,601 bytes, not JSON: 1.23 MB as base64
    before = [(b"k%d" % i, orjson.dumps({"n": i})) for i in range(100)]
    after = [(b"k%d" % i, orjson.dumps({"n": i})) for i in range(100, 5101)]
    await produce(bootstrap, source, before)
    await produce(bootstrap, source, [(b"huge", huge)])
    await produce(bootstrap, source, after)
    # A small cap would pin the partition behind the huge record if it never got out.
    topo, spout = topology(bootstrap, source, sink, group, failed,
                           max_uncommitted_offsets=1000)
    await run_until_committed(bootstrap, "huge", topo, group, source)
    [written] = await read_all(bootstrap, failed)
    assert len(written.value) <= 1_048_576 - 1024
    obj = orjson.loads(written.value)
    assert (obj["offset"], obj["value_truncated"], obj["value_size"]) == (100, True, len(huge))
    assert obj["value_sha256"] == hashlib.sha256(huge).hexdigest()
    assert huge.startswith(base64.b64decode(obj["value"]))
    assert "not valid JSON" in obj["reason"] and obj["attempts"] == 1
    out = await read_all(bootstrap, sink)
    assert len(out) == 5101 and {r.value for r in out} == {str(i).encode() for i in range(5101)}
    assert spout.counters.failed_records == 1


async def test_a_bolts_exception_is_the_failed_records_reason(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    source, sink, failed, group = await topics(kafka_broker)
    await produce(bootstrap, source, [(b"k%d" % i, orjson.dumps({"n": i})) for i in range(60)])
    topo, _ = topology(bootstrap, source, sink, group, failed, boom=frozenset({42}))
    stats = await run_until_committed(bootstrap, "boom", topo, group, source)
    [written] = [orjson.loads(r.value) for r in await read_all(bootstrap, failed)]
    assert written["reason"] == "ValueError: boom 42"
    assert written["failed_by"] == "parse" and written["attempts"] == 2
    assert 'raise ValueError(f"boom {n}")' in written["error_trace"]
    assert written["first_failed_at"] == written["failed_at"]
    assert written["replayed_topic"] is None
    assert stats["kafka"]["failed_error"] == 2 and stats["kafka"]["failed"] == 2


async def produce_replayed(bootstrap: str, topic: str, failed_record: dict[str, Any]) -> None:
    """Write a failed record back the way the replay job does: original key and value, with
    the replay headers."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        values = (failed_record["topic"], failed_record["partition"],
                  failed_record["offset"], failed_record["attempts"],
                  failed_record["first_failed_at"])
        headers = [(name, str(v).encode()) for name, v in zip(REPLAY_HEADERS, values,
                                                              strict=True)]
        key = failed_record["key"] and base64.b64decode(failed_record["key"])
        await (await producer.send(topic, base64.b64decode(failed_record["value"]), key=key,
                                   headers=headers))
    finally:
        await producer.stop()


async def test_a_replayed_record_that_fails_again_keeps_counting(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    source, sink, failed, group = await topics(kafka_broker)
    await produce(bootstrap, source, [(b"k%d" % i, orjson.dumps({"n": i})) for i in range(10)])
    topo, _ = topology(bootstrap, source, sink, group, failed, boom=frozenset({7}))
    await run_until_committed(bootstrap, "first", topo, group, source)
    [first] = [orjson.loads(r.value) for r in await read_all(bootstrap, failed)]
    assert (first["offset"], first["attempts"]) == (7, 2)
    await produce_replayed(bootstrap, source, first)  # the bug is not fixed yet
    topo, _ = topology(bootstrap, source, sink, group, failed, boom=frozenset({7}))
    await run_until_committed(bootstrap, "again", topo, group, source)
    second = orjson.loads((await read_all(bootstrap, failed))[1].value)
    assert (second["topic"], second["partition"], second["offset"]) == (source, 0, 7)
    assert (second["replayed_topic"], second["replayed_offset"]) == (source, 10)
    assert second["attempts"] == 4
    assert second["first_failed_at"] == first["failed_at"] <= second["failed_at"]
    assert second["reason"] == "ValueError: boom 7"


async def test_an_all_poison_topic_stops_at_the_breaker_limit(kafka_broker, caplog) -> None:
    bootstrap = kafka_broker.bootstrap
    source, sink, failed, group = await topics(kafka_broker)
    n = 2000
    await produce(bootstrap, source, [(b"k%d" % i, orjson.dumps({"n": i})) for i in range(n)])
    limit = DeadLetterLimit(max_share=0.5, window_secs=60, min_records=50)
    topo, spout = topology(bootstrap, source, sink, group, failed,
                           boom=frozenset(range(n)), dead_letter_limit=limit, max_retries=0)
    caplog.set_level(logging.INFO, logger="connectors.kafka")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("poison", conf(), topo)

        async def halted() -> bool:
            return spout.counters.halted is not None

        await eventually(halted, 30, "the spout halted")
        written_at_halt = spout.counters.failed_records
        stats = cluster.stats("poison")["components"]["kafka"]
        [task] = spout.tasks
        metrics = task.metrics()
        await cluster.kill_topology("poison", wait_secs=5)
    critical = [r.getMessage() for r in caplog.records if r.levelno == logging.CRITICAL]
    assert len(critical) == 1
    assert "halted, consuming stopped and nothing more committed" in critical[0]
    assert "50 of 50 records (100 %) given up in the last 60 s (limit 50 % of at least 50)" \
        in critical[0]
    assert metrics["halted"] == spout.counters.halted
    assert metrics["dead_letter"]["tripped"].startswith("50 of 50")
    assert stats["emitted"] < n / 2
    # Nothing was committed after the trip: at most what was done before it.
    done = await committed(bootstrap, group, source)
    assert done[0] is None or done[0] <= 50
    # Records given up after the trip stay where they are, for after the fix.
    assert written_at_halt <= len(await read_all(bootstrap, failed)) == 50


async def test_metrics_give_partitions_and_failed_topic_figures(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    source, sink, failed, group = await topics(kafka_broker, 2)
    await produce(bootstrap, source, [(b"k%d" % i, orjson.dumps({"n": i})) for i in range(40)])
    topo, spout = topology(bootstrap, source, sink, group, failed, boom=frozenset({5}))
    assert spout.metrics()["partitions"] == []  # before open: empty figures, no error
    ends = await high_watermarks(bootstrap, source)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("metrics", conf(), topo)
        await wait_committed(bootstrap, group, source, ends, 40, "everything committed")
        [task] = spout.tasks
        metrics = task.metrics()
        bolt = cluster_bolt(topo)
        [bolt_task] = bolt.tasks
        assert bolt_task.metrics() == {"produced": 39, "produce_errors": 0}
        await cluster.kill_topology("metrics", wait_secs=5)
    rows = sorted(metrics["partitions"], key=lambda row: row["partition"])
    assert [(r["topic"], r["partition"]) for r in rows] == [(source, 0), (source, 1)]
    for row in rows:
        end = ends[row["partition"]]
        assert (row["committed"], row["high_watermark"], row["lag"], row["position"]) == (
            end, end, 0, end)
    assert (metrics["failed_topic_records"], metrics["failed_topic_retries"]) == (1, 0)
    assert metrics["halted"] is None and metrics["dead_letter"] is None


def cluster_bolt(topo: Any) -> OpenedBolt:
    """The ``out`` bolt object of a topology built by ``topology``."""
    return topo.components["out"].obj
