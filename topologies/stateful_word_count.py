"""Stateful word count: counts live in checkpointed state and survive a kill and restart.

    python -m engine run topologies/stateful_word_count.py \\
        --conf kafka.bootstrap.servers=HOST:PORT [--conf topology.state.dir=DIR] ...

Sentences come from a Kafka topic; each word's running count is kept in the count bolt's
``KeyValueState`` (SQLite under ``topology.state.dir``, checkpointed every
``topology.state.checkpoint.interval.ms``) and sent to the counts topic as ``word → count``.
A sentence's Kafka offset is committed only after the checkpoint covering its words
committed, so after a kill the topology restarts from the committed counts and re-reads
only sentences not yet covered: counts are never lower than the truth, and over-count by at
most the words processed after the last commit (at least once, as Storm promises).
No ``topology.max.spout.pending``: the spout's trees in flight follow what each checkpoint
round completes (set one to cap them).

Under ``--workers N`` (or ``topology.workers=N`` on each of N hosts) the count's fields
grouping goes through a repartition topic and its state is kept per input partition,
backed by the changelog topic ``<group>-count-changelog``: a partition's counts move with
it to whichever process holds it (docs/scaling.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine import Config, Topology, TopologyBuilder
from engine.state import KeyValueState, StatefulBolt
from topologies.kafka_word_count import SplitSentence, counts_bolt, sentences_spout

__all__ = ["CONF", "SplitSentence", "StatefulWordCount", "build"]

CONF: dict[str, Any] = {
    "kafka.bootstrap.servers": "127.0.0.1:9092",
    "kafka.sentences.topic": "sentences",
    "kafka.counts.topic": "stateful-word-counts",
    "kafka.group.id": "stateful-word-count",
    "kafka.commit.interval.secs": 1.0,
    "topology.state.dir": ".stormloop-state",
    "topology.state.checkpoint.interval.ms": 1000,
    "topology.message.timeout.secs": 30,
}

class StatefulWordCount(StatefulBolt):
    """Counts words in its checkpointed state; emits ``(word, count so far)``, anchored."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "count"])

    def prepare(self, conf: Mapping[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: KeyValueState) -> None:
        self.counts = state

    def execute(self, tup: Any) -> None:
        word = tup["word"]
        count = self.counts.get(word, 0) + 1
        self.counts.put(word, count)
        self.collector.emit([word, count], anchors=tup)
        self.collector.ack(tup)


def build(conf: Config, count: StatefulBolt | None = None) -> Topology:
    """The topology for ``conf`` (keys and defaults in ``CONF``); ``count`` in place of
    ``StatefulWordCount`` if given."""
    builder = TopologyBuilder()
    builder.set_spout("sentences", sentences_spout(conf))
    builder.set_bolt("split", SplitSentence(), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", count or StatefulWordCount(), 2).fields_grouping("split", ["word"])
    builder.set_bolt("counts", counts_bolt(conf)).fields_grouping("count", ["word"])
    return builder.create_topology()
