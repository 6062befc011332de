"""The windowed and the stateful word count examples on the test Kafka broker."""

from __future__ import annotations

import asyncio
import importlib
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaProducer

from engine import Config, LocalCluster
from tests.connectors.kafka.helpers import committed, eventually, read_all, unique

BASE_MS = 1_700_000_000_000  # a multiple of the slide
LINES = ["the cow jumped over the moon", "an apple a day", "the end"]


async def produce_timed(bootstrap: str, topic: str, records: list[tuple[str, int]]) -> None:
    """Write ``(value, timestamp ms)`` records, confirmed."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    await producer.start()
    try:
        futures = [await producer.send(topic, value.encode(), timestamp_ms=ts, partition=0)
                   for value, ts in records]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


def fast(conf: dict[str, Any], bootstrap: str, sentences: str, counts: str) -> Config:
    out = Config(conf)
    out.update({"kafka.bootstrap.servers": bootstrap, "kafka.sentences.topic": sentences,
                "kafka.counts.topic": counts, "kafka.group.id": unique("g"),
                "kafka.consumer.session_timeout_ms": 2000,
                "kafka.consumer.heartbeat_interval_ms": 250,
                "kafka.consumer.auto_offset_reset": "earliest",
                "kafka.commit.interval.secs": 0.2})
    return out


async def test_windowed_word_count_counts_every_window_of_a_topic_written_once(
        kafka_broker: Any) -> None:
    """The input stops: once it has been quiet for window.idle.secs, event time goes on
    with the clock, so every window holding a sentence is counted, the last ones too, and
    every sentence is committed."""
    module = importlib.import_module("topologies.windowed_word_count")
    bootstrap = kafka_broker.bootstrap
    sentences, counts = unique("timed"), unique("wcounts")
    await kafka_broker.create_topic(sentences, 1)
    await kafka_broker.create_topic(counts, 1)
    records = [(LINES[i % 3], BASE_MS + i * 500) for i in range(30)]  # 0 s .. 14.5 s
    await produce_timed(bootstrap, sentences, records)
    conf = fast(module.CONF, bootstrap, sentences, counts)
    conf["window.length.secs"] = 4.0
    last_end = BASE_MS + 18_000  # the last window holding 14.5 s: (14 s, 18 s]
    async with LocalCluster() as cluster:
        await cluster.submit_topology("windowed", conf, module.build(conf))

        async def done() -> bool:
            return (await committed(bootstrap, conf["kafka.group.id"], sentences)).get(0) == 30

        await eventually(done, 40, "every sentence committed")
        await cluster.kill_topology("windowed")
    out = [(r.key.decode(), orjson.loads(r.value)) for r in await read_all(bootstrap, counts)]
    ends = sorted({v["end"] for _, v in out})
    assert ends == list(range(BASE_MS, last_end + 1, 1000))
    assert max(Counter((word, v["end"]) for word, v in out).values()) == 1  # each once
    for word, v in out:
        assert v["end"] - v["start"] == 4_000
        truth = sum(line.split().count(word) for line, ts in records
                    if v["start"] < ts <= v["end"])
        assert v["count"] == truth, (word, v)


def test_windowed_word_count_moves_its_watermark_per_batch_unless_an_interval_is_set() -> None:
    module = importlib.import_module("topologies.windowed_word_count")
    assert module.window_bolt(module.CONF)._spec().watermark_interval_ms is None
    periodic = module.window_bolt({**module.CONF, "window.watermark.interval.secs": 0.5})
    assert periodic._spec().watermark_interval_ms == 500


async def test_stateful_word_count_keeps_its_counts_across_kill_and_restart(
        kafka_broker: Any, tmp_path: Path) -> None:
    module = importlib.import_module("topologies.stateful_word_count")
    bootstrap = kafka_broker.bootstrap
    sentences, counts = unique("sentences"), unique("scounts")
    await kafka_broker.create_topic(sentences, 1)
    await kafka_broker.create_topic(counts, 1)
    first = [LINES[i % 3] for i in range(60)]
    await produce_timed(bootstrap, sentences, [(line, BASE_MS) for line in first])
    conf = fast(module.CONF, bootstrap, sentences, counts)
    conf.update({"topology.state.dir": str(tmp_path),
                 "topology.state.checkpoint.interval.ms": 100})
    group = conf["kafka.group.id"]

    async def run_until_committed(to: int) -> None:
        async with LocalCluster() as cluster:
            await cluster.submit_topology("stateful", conf, module.build(conf))

            async def done() -> bool:
                return (await committed(bootstrap, group, sentences)).get(0) == to

            await eventually(done, 40, f"sentences committed to {to}")
            await cluster.kill_topology("stateful", wait_secs=1)

    await run_until_committed(60)
    second = [LINES[0]] * 10
    await produce_timed(bootstrap, sentences, [(line, BASE_MS) for line in second])
    await run_until_committed(70)  # a new run: counts go on from the committed state
    truth = Counter(w for line in first + second for w in line.split())
    latest: dict[str, int] = {}
    for record in await read_all(bootstrap, counts):
        word = record.key.decode()
        latest[word] = max(latest.get(word, 0), int(record.value))
    assert all(latest[w] >= n for w, n in truth.items())
    assert latest["moon"] == truth["moon"] == 30  # no replay: the first run committed all
