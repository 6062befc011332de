"""Sliding-window throughput beside the plain bolt's, and the window's memory per tuple.

    python scripts/bench_windows.py [--tuples 1000000] [--rate 10000] [--runs 5]
                                    [--variants default,watermark-10ms,incremental,recount]

A spout emits ``--tuples`` tracked ``(word, ts)`` tuples (one tree each), ``--rate`` per
event-second, in timestamp order, straight into one bolt:

- ``plain``: a ``BasicBolt`` that counts the words (each tuple acked as it is counted);
- ``default``: a windowed bolt, 10 s sliding every 1 s by event time
  (``with_timestamp_field("ts")``) and nothing else set, whose ``execute(window)`` keeps
  its counts from ``get_new()`` and ``get_expired()`` and emits the number of distinct
  words and the window's size (no bolt subscribes). A tuple is acked when it leaves its
  last window, after about 11 s of event time.

For reference, ``--variants`` adds the same bolt with ``with_watermark_interval(Duration(
0.01))`` (``watermark-10ms``), with that and ``with_incremental()`` (``incremental``), and
a bolt that recounts ``window.get()`` at every evaluation (``recount``).

``topology.max.spout.pending`` is 13 x the rate + 20,000 (the window and a margin);
everything else is the default. The figure is the tuples acked (all but the last 12
event-seconds, which stay in the last windows) over the seconds from submit, each topology
in a fresh process. Each of ``--runs`` rounds runs the plain bolt and every variant one
after the other, so that a busy machine slows them alike; the medians and the median of
the rounds' ratios are printed at the end, then the window's own bytes per tuple held
(tracemalloc over the window manager holding real tuples).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from typing import Any

from benchlib import fresh_process, hot_path, run_loop

from engine import BasicBolt, Config, LocalCluster, Spout, TopologyBuilder
from engine.gc_tuning import tune_gc
from engine.testing import wait_until
from engine.tuples import Fields, Source, Tuple
from engine.windowing import BaseWindowedBolt, Duration, TupleWindow
from engine.windowing.build import build_manager
from engine.windowing.spec import WindowSpec

LENGTH, SLIDE = Duration(10), Duration(1)
VOCABULARY = [f"w{i}" for i in range(1000)]


class TimedWords(Spout):
    """``n`` tracked ``(word, ts)`` tuples, ``rate`` per event-second, in timestamp order;
    it counts its acks."""

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


class PlainWordCount(BasicBolt):
    """Counts the words of every tuple."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.counts: Counter[str] = Counter()

    def execute(self, tup: Any, collector: Any) -> None:
        self.counts[tup.values[0]] += 1


class WindowedWordCount(BaseWindowedBolt):
    """Keeps the window's word counts from what entered and left it; emits the number of
    distinct words and the window's size."""

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


class RecountWordCount(WindowedWordCount):
    """Recounts the words of the whole window at every evaluation."""

    def execute(self, window: TupleWindow) -> None:
        tuples = window.get()
        self.collector.emit([len(Counter(t.values[0] for t in tuples)), len(tuples)])


def _windowed(make: Callable[[], BaseWindowedBolt], *extra: str) -> Callable[[], Any]:
    def bolt() -> Any:
        b = make().with_window(LENGTH, SLIDE).with_timestamp_field("ts")
        if "watermark-10ms" in extra:
            b.with_watermark_interval(Duration(0.01))
        if "incremental" in extra:
            b.with_incremental()
        return b
    return bolt


BOLTS: dict[str, Callable[[], Any]] = {
    "plain": PlainWordCount,
    "default": _windowed(WindowedWordCount),
    "watermark-10ms": _windowed(WindowedWordCount, "watermark-10ms"),
    "incremental": _windowed(WindowedWordCount, "watermark-10ms", "incremental"),
    "recount": _windowed(RecountWordCount),
}


async def _measure(variant: str, n: int, rate: int) -> float:
    """Tuples/s: those acked (all but the last 12 event-seconds) over the seconds from
    submit."""
    spout = TimedWords(n, rate)
    b = TopologyBuilder()
    b.set_spout("words", spout)
    b.set_bolt("count", BOLTS[variant]()).shuffle_grouping("words")
    conf = Config({"topology.max.spout.pending": 13 * rate + 20_000})
    target = n - 12 * rate
    assert target > 0, "too few tuples for the rate: fewer than 12 event-seconds"
    async with LocalCluster() as cluster:
        start = time.perf_counter()
        await cluster.submit_topology("bench", conf, b.create_topology())
        tune_gc()
        await wait_until(lambda: spout.acked[0] >= target, timeout=600, interval=0.01)
        elapsed = time.perf_counter() - start
    return target / elapsed


def measured_run(variant: str, n: int, rate: int) -> tuple[float, float]:
    """One run in a fresh process: tuples/s and peak RSS in MB."""
    out = fresh_process(__file__, "--child", variant, str(n), str(rate))
    per_sec, rss = out.split()[-2:]
    return float(per_sec), float(rss)


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


def _report(variants: list[str], rounds: list[dict[str, tuple[float, float]]]) -> None:
    plain = [r["plain"][0] for r in rounds]
    print(f"medians over {len(rounds)} rounds:")
    print(f"  {'plain':<15} {statistics.median(plain):>10,.0f} tuples/s")
    for v in variants:
        rates = [r[v][0] for r in rounds]
        ratios = [r[v][0] / r["plain"][0] for r in rounds]
        print(f"  {v:<15} {statistics.median(rates):>10,.0f} tuples/s, "
              f"{statistics.median(ratios):.2f} of plain (rounds {min(ratios):.2f}-"
              f"{max(ratios):.2f}), peak RSS {statistics.median(r[v][1] for r in rounds):,.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tuples", type=int, default=1_000_000)
    parser.add_argument("--rate", type=int, default=10_000, help="tuples per event-second")
    parser.add_argument("--runs", type=int, default=5, help="rounds of plain and variants")
    parser.add_argument("--variants", default="default",
                        help=f"comma-separated windowed bolts among {','.join(BOLTS)}")
    parser.add_argument("--no-memory", action="store_true", help="skip the bytes per tuple")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        variant, n, rate = args.child
        per_sec = run_loop(_measure(variant, int(n), int(rate)))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{per_sec:.0f} {peak:.1f}")
        return
    variants = [v for v in args.variants.split(",") if v != "plain"]
    print(f"{args.tuples:,} tuples, {args.rate:,} per event-second, window 10 s / 1 s by "
          f"event time, hot path {hot_path()}")
    rounds = []
    for i in range(args.runs):
        got = {v: measured_run(v, args.tuples, args.rate) for v in ["plain", *variants]}
        rounds.append(got)
        base = got["plain"][0]
        print(f"  round {i + 1}: " + ", ".join(
            f"{v} {got[v][0]:,.0f}" + ("" if v == "plain" else f" ({got[v][0] / base:.2f})")
            for v in got))
    _report(variants, rounds)
    if not args.no_memory:
        for size in (10_000, 100_000, 1_000_000):
            own, total = window_bytes_per_tuple(size)
            print(f"  window holding {size:>9,} tuples: {own:.0f} bytes per tuple for the "
                  f"window's records, {total:.0f} with the tuples themselves")


if __name__ == "__main__":
    main()
