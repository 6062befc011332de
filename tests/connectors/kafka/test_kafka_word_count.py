"""topologies/kafka_word_count.py on the test broker: counts reach the counts topic."""

from __future__ import annotations

import importlib
from collections import Counter

from engine import Config, LocalCluster
from tests.connectors.kafka.helpers import (
    high_watermarks,
    produce,
    read_all,
    unique,
    wait_committed,
)


async def test_word_counts_reach_the_counts_topic(kafka_broker) -> None:
    module = importlib.import_module("topologies.kafka_word_count")
    bootstrap = kafka_broker.bootstrap
    sentences, counts, group = unique("sentences"), unique("counts"), unique("g")
    await kafka_broker.create_topic(sentences, 2)
    await kafka_broker.create_topic(counts, 2)
    lines = ["the cow jumped over the moon", "an apple a day", "the end"] * 40
    await produce(bootstrap, sentences, [(None, line.encode()) for line in lines])
    conf = Config(module.CONF)
    conf.update({
        "kafka.bootstrap.servers": bootstrap, "kafka.sentences.topic": sentences,
        "kafka.counts.topic": counts, "kafka.group.id": group,
        "kafka.consumer.session_timeout_ms": 2000,
        "kafka.consumer.heartbeat_interval_ms": 250, "kafka.commit.interval.secs": 0.5,
    })
    ends = await high_watermarks(bootstrap, sentences)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("kafka-word-count", conf, module.build(conf))

        await wait_committed(bootstrap, group, sentences, ends, 30,
                             "sentences committed to the end")
        await cluster.kill_topology("kafka-word-count", wait_secs=5)
    expected = Counter(word for line in lines for word in line.split())
    best: Counter[str] = Counter()
    for record in await read_all(bootstrap, counts):
        word, count = record.key.decode(), int(record.value)
        best[word] = max(best[word], count)
    assert best == expected
