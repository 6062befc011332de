"""Word count on the embedded default: sentences → split → count (fields grouping).

    python -m engine run topologies/word_count.py [--conf wordcount.repeat=50]

Every sentence is a tracked tree (one tuple per word anchored to it); the run ends when
every sentence was acked, and the count bolt prints the most frequent words.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from connectors.memory import ListSpout
from engine import Bolt, Config, Topology, TopologyBuilder

CONF = {
    "topology.acker.executors": 1,
    "topology.max.spout.pending": 2000,
    "wordcount.sentences": 10_000,
    "wordcount.repeat": 5,
    "wordcount.top": 10,
}

VOCABULARY = tuple(
    "the cow jumped over moon an apple a day keeps doctor away four score and seven years "
    "ago snow white dwarfs i am at two with nature stream of tuples every message is fully "
    "processed or failed and replayed nothing lost".split())


def sentences(n: int, words_per_sentence: int = 10, seed: int = 7) -> list[list[str]]:
    """``n`` one-field rows of ``words_per_sentence`` words each, the same for a given seed."""
    rng = random.Random(seed)
    return [[" ".join(rng.choices(VOCABULARY, k=words_per_sentence))] for _ in range(n)]


class SplitSentence(Bolt):
    """One tuple per word, anchored to the sentence."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        emit = self.collector.emit
        for word in tup[0].split():
            emit([word], anchors=tup)
        self.collector.ack(tup)


class WordCount(Bolt):
    """Counts words per task; on cleanup the last task prints the top words of all tasks."""

    def __init__(self, top: int = 10) -> None:
        self.top = top
        self.totals: Counter[str] = Counter()
        self.open_tasks: list[int] = []

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "count"])

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.counts: dict[str, int] = {}  # a plain dict counts faster than a Counter
        self.open_tasks.append(context.task_id)
        self.task_id = context.task_id

    def execute(self, tup: Any) -> None:
        word = tup[0]
        self.counts[word] = self.counts.get(word, 0) + 1
        self.collector.ack(tup)

    def cleanup(self) -> None:
        self.totals.update(self.counts)
        self.open_tasks.remove(self.task_id)
        if not self.open_tasks and self.top:
            total = sum(self.totals.values())
            print(f"{total} words counted; top {self.top}:")
            for word, count in self.totals.most_common(self.top):
                print(f"  {word:<12} {count}")


def build(conf: Config) -> Topology:
    """The word-count topology for ``conf`` (see ``CONF`` for its keys)."""
    builder = TopologyBuilder()
    spout = ListSpout(sentences(int(conf["wordcount.sentences"])), ["sentence"],
                      repeat=int(conf["wordcount.repeat"]), per_call=10)
    builder.set_spout("sentences", spout)
    builder.set_bolt("split", SplitSentence(), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", WordCount(int(conf["wordcount.top"])), 2).fields_grouping(
        "split", ["word"])
    return builder.create_topology()
