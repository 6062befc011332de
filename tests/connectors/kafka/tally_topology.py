"""The Kafka word count with its counting bolt named ``tally``: another topology, for the
tests that start it in the consumer group of ``topologies/kafka_word_count.py``."""

from __future__ import annotations

from engine import Config, Topology, TopologyBuilder
from topologies.kafka_word_count import (
    CONF,
    RunningCount,
    SplitSentence,
    counts_bolt,
    sentences_spout,
)

__all__ = ["CONF", "build"]


def build(conf: Config) -> Topology:
    """sentences → split → tally → counts, otherwise as the Kafka word count."""
    builder = TopologyBuilder()
    builder.set_spout("sentences", sentences_spout(conf))
    builder.set_bolt("split", SplitSentence(), 2).shuffle_grouping("sentences")
    builder.set_bolt("tally", RunningCount(), 2).fields_grouping("split", ["word"])
    builder.set_bolt("counts", counts_bolt(conf), 2).fields_grouping("tally", ["word"])
    return builder.create_topology()
