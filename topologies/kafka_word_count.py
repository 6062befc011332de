"""Word count between Kafka topics: sentences topic → split → count → counts topic.

    python -m engine run topologies/kafka_word_count.py \\
        --conf kafka.bootstrap.servers=HOST:PORT [--conf kafka.sentences.topic=sentences] ...

Each sentence record is one tracked tree; every word's running count goes to the counts
topic as ``word → count`` (key = word, so a word's counts stay in one partition, in order),
and the sentence's offset is committed only once all its counts were confirmed by the
broker. At least once: after a crash, the sentences in flight are read again and their
words counted again. ``kafka.consumer.<option>`` keys are passed to the consumer (for
example ``kafka.consumer.session_timeout_ms=10000``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from connectors.kafka import KafkaBolt, KafkaSpout
from engine import BasicBolt, Config, Topology, TopologyBuilder

CONF: dict[str, Any] = {
    "kafka.bootstrap.servers": "127.0.0.1:9092",
    "kafka.sentences.topic": "sentences",
    "kafka.counts.topic": "word-counts",
    "kafka.group.id": "kafka-word-count",
    "kafka.failed.topic": None,
    "kafka.spout.parallelism": 1,
    "kafka.commit.interval.secs": 5.0,
    "topology.max.spout.pending": 2000,
    "topology.message.timeout.secs": 30,
}

CONSUMER_PREFIX = "kafka.consumer."


class SplitSentence(BasicBolt):
    """One ``word`` tuple per whitespace-separated word, anchored to the sentence."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def execute(self, tup: Any, collector: Any) -> None:
        for word in (tup["value"] or "").split():
            collector.emit([word.lower()])


class RunningCount(BasicBolt):
    """Emits ``(word, count so far)`` for every word; counts live in this task's memory."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "count"])

    def prepare(self, conf: Mapping[str, Any], context: Any) -> None:
        self.counts: Counter[str] = Counter()

    def execute(self, tup: Any, collector: Any) -> None:
        word = tup["word"]
        self.counts[word] += 1
        collector.emit([word, self.counts[word]])


def consumer_options(conf: Mapping[str, Any]) -> dict[str, Any]:
    """``kafka.consumer.<option>`` keys of ``conf`` as ``AIOKafkaConsumer`` options."""
    return {key[len(CONSUMER_PREFIX):]: value for key, value in conf.items()
            if key.startswith(CONSUMER_PREFIX)}


def sentences_spout(conf: Mapping[str, Any], fields: tuple[str, ...] = ("key", "value"),
                    **options: Any) -> KafkaSpout:
    """The spout of the sentences topic for ``conf`` (``kafka.bootstrap.servers``,
    ``kafka.sentences.topic``, ``kafka.group.id``, ``kafka.commit.interval.secs`` and any
    ``kafka.consumer.*``): ``fields`` of each record; ``options`` go to ``KafkaSpout``."""
    return KafkaSpout(str(conf["kafka.sentences.topic"]), str(conf["kafka.bootstrap.servers"]),
                      str(conf["kafka.group.id"]), fields=fields,
                      commit_interval_secs=float(conf["kafka.commit.interval.secs"]),
                      **options, **consumer_options(conf))


def counts_bolt(conf: Mapping[str, Any], value_field: str = "count",
                **options: Any) -> KafkaBolt:
    """Writes each tuple's ``value_field`` to ``kafka.counts.topic``, keyed by its word."""
    return KafkaBolt(str(conf["kafka.counts.topic"]), str(conf["kafka.bootstrap.servers"]),
                     key_field="word", value_field=value_field, **options)


def build(conf: Config) -> Topology:
    """The Kafka word-count topology for ``conf`` (keys and defaults in ``CONF``)."""
    spout = sentences_spout(conf, failed_topic=conf.get("kafka.failed.topic"))
    builder = TopologyBuilder()
    builder.set_spout("sentences", spout, int(conf["kafka.spout.parallelism"]))
    builder.set_bolt("split", SplitSentence(), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", RunningCount(), 2).fields_grouping("split", ["word"])
    builder.set_bolt("counts", counts_bolt(conf), 2).fields_grouping("count", ["word"])
    return builder.create_topology()
