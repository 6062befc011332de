"""Sliding-window word count by event time, from Kafka to Kafka.

    python -m engine run topologies/windowed_word_count.py \\
        --conf kafka.bootstrap.servers=HOST:PORT [--conf window.length.secs=10] ...

Every sentence record's Kafka timestamp is its event time. Words are counted over a window
of ``window.length.secs`` (default 10 s) sliding every ``window.slide.secs`` (1 s), with
records allowed ``window.lag.secs`` (2 s) out of order; each evaluation sends, per word, a
JSON record ``{"count", "start", "end"}`` (window bounds in epoch ms) keyed by the word to
the counts topic. The watermark moves after each batch of sentences that arrives (with
``window.watermark.interval.secs`` set, every that many seconds instead, as Storm's does);
records later than it go to the late stream and are logged. Once no sentence has come for
``window.idle.secs`` (2 s), event time goes on with the clock from the latest one
(``with_idle_timeout``): the last windows of a topic written once, or paused, are counted
too, instead of waiting for newer records.
The count is kept incrementally (``with_incremental()``): each evaluation adds the words
that entered the window and takes off those that left it, so it costs what moved, not the
window's size. A sentence's offset is committed once it left every window it was in and
the counts of the evaluation it entered were confirmed by the broker.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from typing import Any

from engine import BasicBolt, Bolt, Config, Topology, TopologyBuilder
from engine.windowing import BaseWindowedBolt, Duration, TupleWindow
from topologies.kafka_word_count import counts_bolt, sentences_spout

CONF: dict[str, Any] = {
    "kafka.bootstrap.servers": "127.0.0.1:9092",
    "kafka.sentences.topic": "timed-sentences",
    "kafka.counts.topic": "windowed-word-counts",
    "kafka.group.id": "windowed-word-count",
    "kafka.commit.interval.secs": 1.0,
    "window.length.secs": 10.0,
    "window.slide.secs": 1.0,
    "window.lag.secs": 2.0,
    "window.watermark.interval.secs": None,  # None: the watermark moves after each batch
    "window.idle.secs": 2.0,
    "topology.max.spout.pending": 100_000,
    "topology.message.timeout.secs": 30,
}

LATE_STREAM = "late"

log = logging.getLogger("topologies.windowed_word_count")


class SplitWords(BasicBolt):
    """``(word, ts)`` for every word of a sentence; ``ts`` is the record's timestamp."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "ts"])

    def execute(self, tup: Any, collector: Any) -> None:
        for word in (tup["value"] or "").split():
            collector.emit([word.lower(), tup["timestamp"]])


class WindowedWordCount(BaseWindowedBolt):
    """Per evaluation, each word's count in the window, with the window's bounds; the
    counts follow the words that entered and left the window (the incremental form)."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "counts"])

    def prepare(self, conf: Mapping[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.counts: Counter[str] = Counter()

    def execute(self, window: TupleWindow) -> None:
        counts = self.counts
        counts.update(t["word"] for t in window.get_new())
        counts.subtract(t["word"] for t in window.get_expired())
        for word in [w for w, n in counts.items() if n <= 0]:
            del counts[word]
        for word, count in sorted(counts.items()):
            self.collector.emit([word, {"count": count, "start": window.start_timestamp,
                                        "end": window.end_timestamp}])


class LogLate(Bolt):
    """Logs each late record (arrived after the watermark passed its timestamp)."""

    def prepare(self, conf: Mapping[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        late = tup["late_tuple"]
        log.warning("late word %r stamped %d", late["word"], late["ts"])
        self.collector.ack(tup)


def window_bolt(conf: Mapping[str, Any]) -> WindowedWordCount:
    """The windowed counter configured from ``conf``."""
    bolt = WindowedWordCount()
    bolt.with_window(Duration(float(conf["window.length.secs"])),
                     Duration(float(conf["window.slide.secs"])))
    bolt.with_timestamp_field("ts").with_lag(Duration(float(conf["window.lag.secs"])))
    interval = conf.get("window.watermark.interval.secs")
    if interval is not None:  # Storm's periodic watermark instead of one per batch
        bolt.with_watermark_interval(Duration(float(interval)))
    bolt.with_idle_timeout(Duration(float(conf["window.idle.secs"])))
    bolt.with_late_tuple_stream(LATE_STREAM).with_incremental()
    return bolt


def build(conf: Config) -> Topology:
    """The topology for ``conf`` (keys and defaults in ``CONF``)."""
    builder = TopologyBuilder()
    builder.set_spout("sentences", sentences_spout(conf, ("value", "timestamp")))
    # One task each: the watermark follows the latest timestamp per input stream, so the
    # words must reach the window in the order of their records; two split tasks would
    # interleave a burst by more than the lag and make words late.
    builder.set_bolt("split", SplitWords()).shuffle_grouping("sentences")
    builder.set_bolt("window", window_bolt(conf)).shuffle_grouping("split")
    builder.set_bolt("counts", counts_bolt(conf, "counts", value_format="json")
                     ).shuffle_grouping("window")
    builder.set_bolt("late", LogLate()).shuffle_grouping("window", LATE_STREAM)
    return builder.create_topology()
