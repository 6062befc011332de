"""Sliding-window throughput and memory: the windowed word count, 10 s / 1 s by event time.

    python scripts/bench_windows.py [--words 1000000] [--rates 10000,1000]
                                    [--forms incremental,recount] [--shapes words,tuples]

The windowed word count has the shape of the plain acked word count it is compared with
(``benchlib``): the same sentence spout (ten words a sentence, each sentence a tracked
tree), the same split bolt (one word tuple anchored to its sentence per word), fields
grouping on the word; the only difference is the counting bolt, which counts over a
sliding window (length 10 s, slide 1 s, watermark every 10 ms) by event time. Each
sentence carries an event timestamp, ``rate`` words per event-second, so a window holds
about ``10 x rate`` words and each word is evaluated in ten windows. A word is acked when it
leaves its last window, so a sentence's tree completes when its last word expired (Storm's
acking of windowed tuples). Two forms of the counting bolt:

- ``incremental``: ``with_incremental()``, counts kept from ``get_new()`` and
  ``get_expired()`` (each evaluation costs what entered and left the window);
- ``recount``: counts the whole of ``window.get()`` at every evaluation (Storm's plain
  ``execute(window)``), for reference.

The ``tuples`` shape (printed after, for reference; ``--shapes words`` leaves it out) is
this benchmark's earlier form: a spout emitting one tracked ``(word, ts)`` tree per word
straight into the windowed bolt. It pays a spout emit and a whole tree (acker init, ack)
per word where the word count pays them once per ten words, so it measured the tree's cost
more than the window's; the word-count shape makes the comparison fair.

Printed: words/s through the window beside the plain acked word count's words/s (same
number of words, same run), the process's peak RSS per run and its resident memory at a
quarter, half and the end of the run (flat when the window's memory keeps to its size), and
the window's own bytes per tuple held (tracemalloc over the window manager holding real
tuples).
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc
from collections import Counter
from typing import Any

from benchlib import (
    WORDS_PER_SENTENCE,
    engine_word_count_run,
    fresh_process,
    hot_path,
    make_sentences,
    run_loop,
)

from connectors.memory import ListSpout
from engine import Config, LocalCluster, Spout, TopologyBuilder
from engine.gc_tuning import tune_gc
from engine.testing import wait_until
from engine.tuples import Fields, Source, Tuple
from engine.windowing import BaseWindowedBolt, Duration, TupleWindow
from engine.windowing.executor import build_manager
from engine.windowing.spec import WindowSpec
from topologies.word_count import SplitSentence

LENGTH, SLIDE = Duration(10), Duration(1)
VOCABULARY = [f"w{i}" for i in range(1000)]


class TimedWords(Spout):
    """``n`` tracked ``(word, ts)`` tuples, ``rate`` per event-second."""

    def __init__(self, n: int, rate: int) -> None:
        self.n = n
        self.rate = rate
        self.acked = [0]

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "ts"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.emit = collector.emit
        self.sent = 0

    def next_tuple(self) -> None:
        emit, rate = self.emit, self.rate
        for _ in range(min(10, self.n - self.sent)):
            i = self.sent
            emit([VOCABULARY[i % 997], i * 1000 // rate], msg_id=i)
            self.sent = i + 1

    def ack(self, msg_id: Any) -> None:
        self.acked[0] += 1


class Sentences(ListSpout):
    """The word count's sentence spout; it counts acks rather than listing their ids (a
    list growing with the run would show in the memory figures)."""

    def __init__(self, rows: list[list[Any]]) -> None:
        super().__init__(rows, ["sentence", "ts"], repeat=1, per_call=10)
        self.acked_count = [0]

    def ack(self, msg_id: Any) -> None:
        self.acked_count[0] += 1


class TimedSplit(SplitSentence):
    """The word count's split, carrying the sentence's event time: ``(word, ts)`` per word,
    anchored to the sentence."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "ts"])

    def execute(self, tup: Any) -> None:
        emit, ts = self.collector.emit, tup[1]
        for word in tup[0].split():
            emit([word, ts], anchors=tup)
        self.collector.ack(tup)


class WindowWordCount(BaseWindowedBolt):
    """Recounts the words of each window; emits (distinct words, tuples in the window)."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["distinct", "size"])

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, window: TupleWindow) -> None:
        tuples = window.get()
        counts = Counter(t.values[0] for t in tuples)
        self.collector.emit([len(counts), len(tuples)])


class IncrementalWordCount(BaseWindowedBolt):
    """Keeps the window's word counts from what entered and left it; emits as the recount."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["distinct", "size"])

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.counts: Counter[str] = Counter()

    def execute(self, window: TupleWindow) -> None:
        counts = self.counts
        for t in window.get_new():
            counts[t.values[0]] += 1
        for t in window.get_expired():
            word = t.values[0]
            left = counts[word] - 1
            if left:
                counts[word] = left
            else:
                del counts[word]
        self.collector.emit([len(counts), len(window)])


FORMS = {"incremental": IncrementalWordCount, "recount": WindowWordCount}


def rss_mb() -> float:
    """The process's resident memory now, in MB (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / (1 << 20)


def _window_bolt(form: str) -> BaseWindowedBolt:
    bolt = FORMS[form]()
    if form == "incremental":
        bolt.with_incremental()
    return (bolt.with_window(LENGTH, SLIDE).with_timestamp_field("ts")
            .with_watermark_interval(Duration(0.01)))


def _words_topology(n: int, rate: int, form: str) -> tuple[Any, list[Any], int]:
    """sentences → split → windowed count (fields grouping): the word count's shape. Returns
    the topology, the spout's count of acks and the words per tree."""
    per_sec = max(1, rate // WORDS_PER_SENTENCE)  # sentences per event-second
    rows = [[s, i * 1000 // per_sec] for i, s in enumerate(make_sentences(n // WORDS_PER_SENTENCE))]
    spout = Sentences(rows)
    b = TopologyBuilder()
    b.set_spout("sentences", spout)
    b.set_bolt("split", TimedSplit()).shuffle_grouping("sentences")
    b.set_bolt("window", _window_bolt(form)).fields_grouping("split", ["word"])
    return b.create_topology(), spout.acked_count, WORDS_PER_SENTENCE


def _tuples_topology(n: int, rate: int, form: str) -> tuple[Any, list[Any], int]:
    """The earlier shape: one tracked ``(word, ts)`` tree per word, into the window."""
    spout = TimedWords(n, rate)
    b = TopologyBuilder()
    b.set_spout("words", spout)
    b.set_bolt("window", _window_bolt(form)).shuffle_grouping("words")
    return b.create_topology(), spout.acked, 1


SHAPES = {"words": _words_topology, "tuples": _tuples_topology}


async def _windowed(n: int, rate: int, form: str, shape: str) -> tuple[float, list[float]]:
    """Words/s through the window, and the resident MB once a quarter, half and all of
    the run's expiries were acked (flat at a steady rate: the window keeps its size)."""
    topology, acked, per_tree = SHAPES[shape](n, rate, form)
    trees_per_sec = rate // per_tree
    # The window holds ~11 s of event time; the spout may run a little ahead of it.
    conf = Config({"topology.max.spout.pending": trees_per_sec * 12 + 20_000 // per_tree,
                   "topology.message.timeout.secs": 600})
    async with LocalCluster() as cluster:
        start = time.perf_counter()
        await cluster.submit_topology("win", conf, topology)
        tune_gc()
        # Every tree older than the last ~11 s of event time has been acked on expiry.
        target = n // per_tree - trees_per_sec * (LENGTH.millis + SLIDE.millis) // 1000 \
            - trees_per_sec
        assert target > 0, "too few words for the rate: fewer than 12 event-seconds"
        memory = []
        for mark in (target // 4, target // 2, target):
            await wait_until(lambda m=mark: acked[0] >= m, timeout=600, interval=0.01)
            memory.append(rss_mb())
        elapsed = time.perf_counter() - start
    return target * per_tree / elapsed, memory


def windowed_run(n: int, rate: int, form: str, shape: str) -> tuple[float, float, str]:
    """One windowed run in a fresh process: words/s, peak RSS in MB, and the resident MB
    at a quarter, half and all of the run."""
    out = fresh_process(__file__, "--child", str(n), str(rate), form, shape)
    rate_s, rss, memory = out.split()[-3:]
    return float(rate_s), float(rss), memory


def window_bytes_per_tuple(size: int) -> tuple[float, float]:
    """tracemalloc bytes per tuple at ``size`` tuples in the window: the window's own records,
    and those plus the tuples (values, ids) they hold."""
    src = Source("words", 1, "default", Fields(["word", "ts"]))
    spec = WindowSpec(LENGTH, SLIDE, timestamp_field="ts")
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    tuples = [Tuple([VOCABULARY[i % 997], i], src, 2, i + 1, i + 1) for i in range(size)]
    made = tracemalloc.get_traced_memory()[0]
    manager = build_manager(spec)
    manager.start()
    for i, tup in enumerate(tuples):
        manager.add(tup, i, i)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(manager) == size
    return (held - made) / size, (held - base) / size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--words", "--tuples", type=int, default=1_000_000)
    parser.add_argument("--rates", default="10000,1000",
                        help="event-time words per second, comma-separated")
    parser.add_argument("--forms", default="incremental,recount",
                        help=f"comma-separated subset of {','.join(FORMS)}")
    parser.add_argument("--shapes", default="words,tuples",
                        help=f"comma-separated subset of {','.join(SHAPES)}")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        n, rate, form, shape = args.child
        per_sec, memory = run_loop(_windowed(int(n), int(rate), form, shape))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{per_sec:.0f} {peak:.1f} {'/'.join(f'{m:.0f}' for m in memory)}")
        return
    n = args.words
    print(f"sliding window 10 s / 1 s by event time, {n:,} words, hot path {hot_path()}")
    words = engine_word_count_run(n // WORDS_PER_SENTENCE, ackers=1)
    print(f"  plain acked word count                     {words:>12,.0f} words/s")
    for shape in args.shapes.split(","):
        for rate in (int(r) for r in args.rates.split(",")):
            for form in args.forms.split(","):
                per_sec, rss, memory = windowed_run(n, rate, form, shape)
                print(f"  {shape:<6} {form:<11} window of ~{rate * 10:>7,}  {per_sec:>12,.0f} "
                      f"words/s ({per_sec / words:.2f} of the word count), peak RSS {rss:,.0f} "
                      f"MB, resident at 1/4, 1/2, all of the run {memory} MB")
    for size in (10_000, 100_000, 1_000_000):
        own, total = window_bytes_per_tuple(size)
        print(f"  window holding {size:>9,} tuples: {own:.0f} bytes per tuple for the window's "
              f"records, {total:.0f} with the tuples themselves")


if __name__ == "__main__":
    main()
