"""Shared pieces of the benchmark scripts: data, the engine's word count, bytewax's.

Every figure is measured in this process on this machine; nothing is remembered.
"""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from connectors.memory import ListSpout
from engine import Config, LocalCluster, Spout, TopologyBuilder
from engine.gc_tuning import tune_gc
from engine.hotpath import compiled
from engine.testing import wait_until
from topologies.word_count import SplitSentence, WordCount

WORDS_PER_SENTENCE = 10


def hot_path() -> str:
    """How the engine's hot path runs in this process tree (the word-count subprocesses
    inherit the environment, so they run the same)."""
    return "compiled (mypyc)" if compiled() else "plain Python"


async def create_kept_topics(bootstrap: str, topics: dict[str, int]) -> None:
    """Create ``{topic: partitions}`` on the broker at ``bootstrap``, records kept forever
    (``retention.ms`` -1)."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(t, n, 1, topic_configs={"retention.ms": "-1"})
                                   for t, n in topics.items()])
    finally:
        await admin.close()


def make_sentences(n: int, vocabulary: int = 1000, seed: int = 42,
                   words_per_sentence: int = WORDS_PER_SENTENCE) -> list[str]:
    """``n`` sentences of ``words_per_sentence`` words drawn from ``vocabulary`` distinct
    words."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocabulary)]
    return [" ".join(rng.choices(words, k=words_per_sentence)) for _ in range(n)]


def run_loop(coro: Any) -> Any:
    """Run ``coro`` on uvloop (the engine's default loop)."""
    import uvloop

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coro)


def word_count_topology(spout: Spout, parallelism: int = 1) -> Any:
    """sentences → split → count (fields grouping), ``parallelism`` executors per bolt."""
    b = TopologyBuilder()
    b.set_spout("sentences", spout)
    b.set_bolt("split", SplitSentence(), parallelism).shuffle_grouping("sentences")
    b.set_bolt("count", WordCount(top=0), parallelism).fields_grouping("split", ["word"])
    return b.create_topology()


async def _engine_word_count(sentences: list[str], ackers: int, parallelism: int) -> float:
    # One sentence per next_tuple call (ListSpout's default), as bytewax's TestingSource
    # hands one item per batch at its default.
    spout = ListSpout([[s] for s in sentences], ["sentence"], repeat=1)
    conf = Config({"topology.acker.executors": ackers, "topology.max.spout.pending": 5000})
    async with LocalCluster() as cluster:
        start = time.perf_counter()
        await cluster.submit_topology("wc", conf, word_count_topology(spout, parallelism))
        tune_gc()
        words = len(sentences) * WORDS_PER_SENTENCE

        def done() -> bool:  # cheap check first: stats() sorts latency samples
            return (len(spout.acked) == len(sentences)
                    and cluster.stats("wc")["components"]["count"]["executed"] == words)

        await wait_until(done, timeout=600, interval=0.01)
        elapsed = time.perf_counter() - start
    return words / elapsed


def fresh_process(script: str, *args: str) -> str:
    """The standard output of ``script`` run with ``args`` in a fresh interpreter (raises
    if it fails). Benchmarks measure each run so: later runs inside one process come out
    slower (the allocator's arenas are no longer fresh)."""
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True,
                          check=True).stdout


def engine_word_count_run(n: int, ackers: int, parallelism: int = 1) -> float:
    """One word count in a fresh process: words/s through split and count.

    A fresh process per run: later runs inside one process come out slower (the
    allocator's arenas are no longer fresh), which would understate either mode.
    """
    out = fresh_process(__file__, "word-count", str(n), str(ackers), str(parallelism))
    return float(out.split()[-1])


def engine_words_per_sec(sentences: list[str], ackers: int, parallelism: int = 1,
                         runs: int = 3) -> float:
    """Best of ``runs`` word counts (words/s), each in a fresh process."""
    return max(engine_word_count_run(len(sentences), ackers, parallelism) for _ in range(runs))


def acked_and_unacked(n: int, runs: int) -> dict[str, Any]:
    """Acked and unacked runs interleaved in pairs, so both see the same machine state.

    Returns the best words/s of each mode and the median of the pairs' unacked/acked
    ratios (robust to the machine speeding up or slowing down between pairs).
    """
    pairs = [(engine_word_count_run(n, 1), engine_word_count_run(n, 0)) for _ in range(runs)]
    ratios = sorted(off / on for on, off in pairs)
    return {"acked": max(on for on, _ in pairs), "unacked": max(off for _, off in pairs),
            "cost": ratios[len(ratios) // 2], "pairs": pairs}


class RateSpout(Spout):
    """Emits ``rate`` sentences per second, tracked, for ``duration`` seconds."""

    def __init__(self, sentences: list[str], rate: float, duration: float) -> None:
        self.sentences = sentences
        self.rate = rate
        self.duration = duration
        self.acked: list[Any] = []

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["sentence"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.start = time.perf_counter()
        self.sent = 0

    def exhausted(self) -> bool:
        return time.perf_counter() - self.start >= self.duration

    def next_tuple(self) -> None:
        if self.exhausted():
            return
        due = int((time.perf_counter() - self.start) * self.rate) - self.sent
        for _ in range(min(due, 50)):
            self.collector.emit([self.sentences[self.sent % len(self.sentences)]],
                                msg_id=self.sent)
            self.sent += 1

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)


async def _latency(sentences: list[str], rate: float, duration: float) -> dict[str, Any]:
    spout = RateSpout(sentences, rate, duration)
    conf = Config({"topology.acker.executors": 1, "topology.stats.sample.rate": 1.0})
    async with LocalCluster() as cluster:
        await cluster.submit_topology("lat", conf, word_count_topology(spout))
        tune_gc()
        await wait_until(lambda: cluster.finished("lat"), timeout=duration + 30)
        stats = cluster.stats("lat")
    lat = stats["complete_latency_ms"]
    return {"offered_sentences_per_sec": rate, "acked": len(spout.acked),
            "p50_ms": lat["p50"], "p99_ms": lat["p99"], "samples": lat["samples"]}


def complete_latency(sentences: list[str], rate: float, duration: float = 5.0) -> dict[str, Any]:
    """Complete latency (spout emit → spout ack) at a fixed offered load of ``rate``/s."""
    return run_loop(_latency(sentences, rate, duration))


def bytewax_words_per_sec(sentences: list[str], batch_size: int = 1, runs: int = 3) -> float:
    """Best of ``runs`` bytewax 0.21 word counts on ``sentences`` (``bytewax_word_count_run``),
    each in a fresh process, as the engine's runs are."""
    return max(float(fresh_process(__file__, "bytewax", str(len(sentences)), str(batch_size))
                     .split()[-1]) for _ in range(runs))


def bytewax_word_count_run(sentences: list[str], batch_size: int) -> float:
    """One bytewax 0.21 word count in this process: words/s through flat_map → key_on →
    stateful_flat_map. The count keeps its state and emits nothing, as the engine's count
    bolt does (a ``stateful_map`` would send every running count on to an output step,
    work the engine's side does not do)."""
    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.outputs import DynamicSink, StatelessSinkPartition
    from bytewax.testing import TestingSource, run_main

    class _Drop(StatelessSinkPartition):
        def write_batch(self, items: list[Any]) -> None:
            pass

    class DropSink(DynamicSink):
        def build(self, step_id: str, worker_index: int, worker_count: int) -> _Drop:
            return _Drop()

    def count(state: int | None, _word: str) -> tuple[int, tuple[()]]:
        return (state or 0) + 1, ()

    flow = Dataflow("word_count")
    lines = op.input("in", flow, TestingSource(sentences, batch_size=batch_size))
    words = op.flat_map("split", lines, str.split)
    keyed = op.key_on("key", words, lambda w: w)
    counts = op.stateful_flat_map("count", keyed, count)
    op.output("out", counts, DropSink())
    start = time.perf_counter()
    run_main(flow)
    return len(sentences) * WORDS_PER_SENTENCE / (time.perf_counter() - start)


def acker_bytes_per_tree(pending: int = 1_000_000) -> float:
    """tracemalloc bytes held by one acker ledger per pending tree, at ``pending`` trees."""
    import tracemalloc

    from engine.acker import AckLedger

    rng = random.Random(3)
    roots = [rng.getrandbits(64) for _ in range(pending)]
    vals = [rng.getrandbits(64) | 1 for _ in range(pending)]
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    ledger = AckLedger(30, now=0.0)
    for root, val in zip(roots, vals, strict=True):
        ledger.init(root, val, 1, 0.0)
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert len(ledger) == pending
    return used / pending


def wheel_expiry_cpu(trees: int = 1_000_000, timeout: float = 30.0) -> dict[str, float]:
    """CPU seconds for an acker ledger to schedule and then expire ``trees`` trees."""
    from engine.acker import INIT, AckLedger

    rng = random.Random(5)
    ops = [(INIT, rng.getrandbits(64), rng.getrandbits(64) | 1, 1) for _ in range(trees)]
    ledger = AckLedger(timeout, now=0.0)
    start = time.process_time()
    for i in range(0, trees, 1000):  # arrivals spread over 10 s, in batches as executors send
        ledger.apply(ops[i:i + 1000], {}, now=i / trees * 10)
    scheduled = time.process_time() - start
    start = time.process_time()
    expired, t = 0, 0.0
    while expired < trees:
        t += ledger.tick
        expired += len(ledger.expire(t))
    return {"schedule_cpu_secs": scheduled, "expire_cpu_secs": time.process_time() - start}


class TimedSpout(Spout):
    """Emits ``n`` tracked tuples as fast as it can; records emit and fail times."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.emitted_at: dict[int, float] = {}
        self.failed_at: dict[int, float] = {}

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["i"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.i = 0

    def next_tuple(self) -> None:
        now = time.monotonic()
        for _ in range(min(100, self.n - self.i)):
            self.emitted_at[self.i] = now
            self.collector.emit([self.i], msg_id=self.i)
            self.i += 1

    def fail(self, msg_id: int) -> None:
        self.failed_at[msg_id] = time.monotonic()


async def _timeouts(trees: int, timeout: float) -> dict[str, Any]:
    from engine import Bolt

    class Drop(Bolt):
        def execute(self, tup: Any) -> None:
            pass  # never acked: every tree times out

    spout = TimedSpout(trees)
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("drop", Drop()).shuffle_grouping("s")
    # Flow control off: this measures expiry of trees that are all emitted at once.
    conf = Config({"topology.message.timeout.secs": timeout,
                   "topology.spout.flow.control": False})
    async with LocalCluster() as cluster:
        await cluster.submit_topology("timeouts", conf, b.create_topology())
        await wait_until(lambda: len(spout.failed_at) == trees, timeout=timeout + 300,
                         interval=0.05)
    late = [spout.failed_at[i] - spout.emitted_at[i] - timeout for i in range(trees)]
    return {"trees": trees, "timeout_secs": timeout, "min_late_secs": min(late),
            "max_late_secs": max(late)}


def timeout_lateness(trees: int, timeout: float = 2.0) -> dict[str, Any]:
    """Through the engine: each tree's fail time minus emit time minus the timeout."""
    return run_loop(_timeouts(trees, timeout))


if __name__ == "__main__":
    # python benchlib.py word-count SENTENCES ACKERS PARALLELISM: one engine run;
    # python benchlib.py bytewax SENTENCES BATCH_SIZE: one bytewax run; words/s on stdout
    what = sys.argv[1]
    if what == "word-count":
        _, _, n, ackers_arg, parallelism_arg = sys.argv
        print(run_loop(_engine_word_count(make_sentences(int(n)), int(ackers_arg),
                                          int(parallelism_arg))))
    else:
        assert what == "bytewax", what
        _, _, n, batch_arg = sys.argv
        print(bytewax_word_count_run(make_sentences(int(n)), int(batch_arg)))


async def fill_sentences(bootstrap: str, topic: str, sentences: list[str]) -> None:
    """Write each sentence as one record (no key) to ``topic``, batched."""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=10)
    await producer.start()
    try:
        futures = [await producer.send(topic, s.encode()) for s in sentences]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def fresh_count_topics(bootstrap: str, tag: str, group_prefix: str,
                             sentences: list[str], partitions: int) -> tuple[str, str, str]:
    """A word count's own input, output and group, named by ``tag``: the topics
    ``sentences-<tag>`` (holding ``sentences``, one record each) and ``counts-<tag>`` (empty),
    ``partitions`` partitions each and kept, and the group ``<group_prefix>-<tag>``."""
    source, counts, group = f"sentences-{tag}", f"counts-{tag}", f"{group_prefix}-{tag}"
    await create_kept_topics(bootstrap, {source: partitions, counts: partitions})
    await fill_sentences(bootstrap, source, sentences)
    return source, counts, group


def word_truth(sentences: list[str]) -> Counter[str]:
    """How often each word (split on whitespace) occurs in ``sentences``."""
    return Counter(w for s in sentences for w in s.split())


async def read_counts(bootstrap: str, topic: str, partitions: int, total: int,
                      secs: float = 60.0, idle_secs: float | None = None) -> list[Any]:
    """The records of ``topic`` from offset 0, until ``total`` arrived, ``secs`` passed, or
    (with ``idle_secs``) none came for that long."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, 0)
        records: list[Any] = []
        until = last = time.monotonic()
        until += secs
        idle = secs if idle_secs is None else idle_secs
        while len(records) < total and (now := time.monotonic()) < until and now - last < idle:
            for batch in (await consumer.getmany(timeout_ms=200, max_records=20000)).values():
                records.extend(batch)
                last = time.monotonic()
        return records
    finally:
        await consumer.stop()


def check_counts(records: list[Any], truth: Counter[str]) -> None:
    """Exit naming the words whose last count in ``records`` (key the word, value the count
    so far) is not their count in ``truth``."""
    last: dict[str, tuple[int, int]] = {}
    for r in records:
        word = r.key.decode()
        if word not in last or r.offset > last[word][0]:
            last[word] = (r.offset, int(r.value))
    wrong = [w for w, c in truth.items() if last.get(w, (0, 0))[1] != c]
    if wrong:
        raise SystemExit(f"wrong counts for {len(wrong)} words, e.g. {wrong[:5]}")
