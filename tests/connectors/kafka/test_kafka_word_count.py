"""topologies/kafka_word_count.py on the test broker: counts reach the counts topic."""

from __future__ import annotations

import importlib
from collections import Counter

from engine import Config, LocalCluster
from tests.connectors.kafka.helpers import (
    high_watermarks,
    produce,
    read_all,
    wait_committed,
)
from tests.connectors.kafka.test_keyed_processes import new_count, word_count_conf


async def test_word_counts_reach_the_counts_topic(kafka_broker) -> None:
    module = importlib.import_module("topologies.kafka_word_count")
    bootstrap, sentences, counts, group = await new_count(kafka_broker)
    lines = ["the cow jumped over the moon", "an apple a day", "the end"] * 40
    await produce(bootstrap, sentences, [(None, line.encode()) for line in lines])
    conf = Config(module.CONF)
    conf.update(word_count_conf(bootstrap, sentences, counts, group))
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
