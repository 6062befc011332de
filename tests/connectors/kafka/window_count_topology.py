"""A stateful windowed word count for the process-level tests: sentences topic → split →
windowed count → counts topic.

    python -m engine run tests/connectors/kafka/window_count_topology.py --workers 2 \\
        --conf kafka.bootstrap.servers=HOST:PORT --conf kafka.sentences.topic=S \\
        --conf kafka.counts.topic=C --conf kafka.group.id=G

The count takes its words through a fields grouping (under ``topology.workers`` > 1 a
repartition topic, and a window per input partition) into tumbling windows of 200 ms; each
window adds its words to their running counts in the bolt's state and emits ``(word,
count)`` once per word it held. The split leaves 0 in the ``id`` field: behind the hop the
engine puts each repartition record's offset there, so this topology is meant for
``topology.workers`` > 1 (in one process its ids would not grow per source task).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from engine import BasicBolt, Config, Topology, TopologyBuilder
from engine.state import KeyValueState
from engine.windowing import BaseStatefulWindowedBolt, Duration, TupleWindow
from topologies.kafka_word_count import counts_bolt, sentences_spout

CONF: dict[str, Any] = {
    "kafka.commit.interval.secs": 1.0,
    "topology.state.checkpoint.interval.ms": 200,
    "topology.message.timeout.secs": 30,
}


class SplitWithId(BasicBolt):
    """One ``(word, 0)`` tuple per word of the sentence, anchored to it."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "id"])

    def execute(self, tup: Any, collector: Any) -> None:
        for word in (tup["value"] or "").split():
            collector.emit([word.lower(), 0])


class WindowedCount(BaseStatefulWindowedBolt):
    """Adds each window's words to their counts in its state; emits ``(word, count)``."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "count"])

    def prepare(self, conf: Mapping[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: KeyValueState) -> None:
        self.counts = state

    def execute(self, window: TupleWindow) -> None:
        for word, n in Counter(t["word"] for t in window.get()).items():
            count = self.counts.get(word, 0) + n
            self.counts.put(word, count)
            self.collector.emit([word, count])


def build(conf: Config) -> Topology:
    """The topology for ``conf`` (the keys of ``topologies/kafka_word_count.py``)."""
    builder = TopologyBuilder()
    builder.set_spout("sentences", sentences_spout(conf))
    builder.set_bolt("split", SplitWithId(), 2).shuffle_grouping("sentences")
    count = (WindowedCount().with_tumbling_window(Duration(0.2))
             .with_message_id_field("id"))
    builder.set_bolt("count", count, 2).fields_grouping("split", ["word"])
    builder.set_bolt("counts", counts_bolt(conf)).fields_grouping("count", ["word"])
    return builder.create_topology()
