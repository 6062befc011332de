"""Stateful word count on Kafka: this engine's checkpointed count beside quixstreams'.

    python scripts/bench_stateful.py [--records 200000] [--words 10000] [--partitions 4]
                                     [--runs 3] [--systems engine,quix]
                                     [--peer-timeout 180] [--bootstrap-servers HOST:PORT]

Without ``--bootstrap-servers`` it starts the Tansu test broker. The input is ``--records``
records keyed by ``--words`` distinct words (seeded, the same for every run and system),
key and value the word, on ``--partitions`` partitions. Each system, in its default
configuration, counts every record's word in checkpointed state and writes the count to
its own output topic (key the word, value the count so far), at least once:

- ``engine``: ``topologies/stateful_word_count.py`` with its ``CONF`` (a ``KafkaSpout``,
  the split bolt, the ``StatefulBolt`` count in SQLite, checkpointed every second, and a
  ``KafkaBolt``); only the broker, topics, group and state directory are set; each run in
  a fresh process, as ``python -m engine run`` would be;
- ``quix``: quixstreams 3.28, ``apply(count, stateful=True)`` (RocksDB state with its
  changelog topic, default commit interval), run as a subprocess in the virtual
  environment ``bench_kafka.py`` makes (or reuses) under ``.bench-venvs/``.

After each run the output topic is read back. The rate is steady state, from the producer
timestamp of the first output record to that of the last; the CPU time is the system's
process's, start-up included, per input record. The final counts must be exact: each
word's largest count equals its number of records (a replay would show as a larger one).
Last, the engine's state is timed on its own: ``get`` + ``put`` per record, and the
SQLite prepare + commit per checkpoint.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

# The imports below need the path set above.
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from bench_kafka import FAST_GROUP, _cpu_seconds, peer_python, run_peer  # noqa: E402
from benchlib import fresh_process  # noqa: E402

from connectors.kafka.testing_broker import TestingBroker  # noqa: E402
from engine import Config, LocalCluster  # noqa: E402
from engine.cli import _loop_runner  # noqa: E402
from engine.gc_tuning import tune_gc  # noqa: E402
from engine.state import KeyValueState, SqliteStateStore  # noqa: E402
from topologies import stateful_word_count  # noqa: E402

LABELS = {"engine": "engine: topologies/stateful_word_count.py, default CONF",
          "quix": "quixstreams 3.28, RocksDB state + changelog"}
TARGET = 1.5  # engine / quixstreams, in every run
RETENTION = {"retention.ms": "-1", "retention.bytes": "-1"}


def make_words(records: int, words: int) -> list[str]:
    """The input: ``records`` words drawn (seeded) from ``words`` distinct ones."""
    rng = random.Random(11)
    vocabulary = [f"word{i:05d}" for i in range(words)]
    return [rng.choice(vocabulary) for _ in range(records)]


async def fill(bootstrap: str, topic: str, words: list[str]) -> float:
    """Write one record per word (key and value the word); returns seconds."""
    started = time.monotonic()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=10,
                                max_batch_size=256 * 1024)
    await producer.start()
    try:
        futures = [await producer.send(topic, w.encode(), key=w.encode()) for w in words]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()
    return time.monotonic() - started


async def run_engine(bootstrap: str, source: str, sink: str, group: str, records: int,
                     state_dir: str) -> None:
    """The example topology with its defaults, until its spout acked ``records`` tuples."""
    conf = Config(stateful_word_count.CONF)
    conf.update({"kafka.bootstrap.servers": bootstrap, "kafka.sentences.topic": source,
                 "kafka.counts.topic": sink, "kafka.group.id": group,
                 "topology.state.dir": state_dir})
    conf.update({f"kafka.consumer.{k}": v for k, v in FAST_GROUP.items()})
    async with LocalCluster() as cluster:
        await cluster.submit_topology("bench-stateful", conf, stateful_word_count.build(conf))
        tune_gc()
        while _acked(cluster) < records:
            await asyncio.sleep(0.1)
        stats = cluster.stats("bench-stateful")
        await cluster.kill_topology("bench-stateful", wait_secs=5)
    latency, spout = stats["complete_latency_ms"], stats["components"]["sentences"]
    failed = f"; {spout['failed']} trees failed and replayed" if spout["failed"] else ""
    print(f"  engine: complete latency p50 {latency['p50'] or 0:,.0f} ms, p99 "
          f"{latency['p99'] or 0:,.0f} ms; in-flight limit at the end "
          f"{spout['in_flight_limit']}{failed}")


def engine_process(bootstrap: str, source: str, sink: str, group: str, records: int,
                   state_dir: str) -> None:
    """``run_engine`` in a fresh process of its own, as quixstreams runs in its, and as
    ``python -m engine run`` would start: nothing of the harness or an earlier run shares
    its interpreter."""
    print(fresh_process(__file__, "--engine-child", bootstrap, source, sink, group,
                        str(records), state_dir), end="", flush=True)


def _acked(cluster: LocalCluster) -> int:
    return int(cluster.stats("bench-stateful")["components"]["sentences"]["acked"])


@dataclass
class Outcome:
    """What the output topic of one run shows."""

    rate: float
    outputs: int
    wrong: int  # words whose largest count is not their number of records
    cpu_secs: float = 0.0
    note: str | None = None


def _count(value: bytes) -> int:
    return int(value.decode().strip('"'))


async def read_outputs(bootstrap: str, sink: str, partitions: int,
                       truth: Counter[str]) -> Outcome:
    """Read ``sink`` to its end: the rate from the first to the last output timestamp, and
    each word's largest count against ``truth``."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                auto_offset_reset="earliest", fetch_max_bytes=8 << 20)
    await consumer.start()
    consumer.assign([TopicPartition(sink, p) for p in range(partitions)])
    best: dict[str, int] = {}
    first, last, total = None, None, 0
    idle_since = time.monotonic()
    expected = sum(truth.values())
    try:
        while total < expected and time.monotonic() - idle_since < 3.0:
            batches = await consumer.getmany(timeout_ms=500, max_records=20_000)
            for batch in batches.values():
                for rec in batch:
                    total += 1
                    word = rec.key.decode()
                    best[word] = max(best.get(word, 0), _count(rec.value))
                    first = rec.timestamp if first is None else min(first, rec.timestamp)
                    last = rec.timestamp if last is None else max(last, rec.timestamp)
            if batches:
                idle_since = time.monotonic()
    finally:
        await consumer.stop()
    wrong = sum(1 for w, n in truth.items() if best.get(w) != n)
    if first is None or last is None or total < 2:
        return Outcome(0.0, total, wrong, note="no output")
    return Outcome(total / max((last - first) / 1000, 1e-3), total, wrong)


async def one_run(system: str, run: int, bootstrap: str, broker: TestingBroker | None,
                  source: str, truth: Counter[str], args: argparse.Namespace) -> Outcome:
    """Run ``system`` once into a fresh output topic, group and state; read it back."""
    tag = f"{system}-{run}-{time.time_ns()}"
    sink, group = f"bench-counts-{tag}", f"bench-{tag}"
    if broker is not None:
        await broker.create_topic(sink, args.partitions)
    note = None
    with tempfile.TemporaryDirectory(prefix="bench-state-") as state_dir:
        started = time.monotonic()
        cpu_before = _cpu_seconds()  # both run as child processes
        if system == "engine":
            await asyncio.to_thread(engine_process, bootstrap, source, sink, group,
                                    args.records, state_dir)
        else:
            note = await asyncio.to_thread(run_peer, "quix-count", bootstrap, source, sink,
                                           group, args.records, args.peer_timeout,
                                           ("--state-dir", state_dir))
        cpu = _cpu_seconds() - cpu_before
        wall = time.monotonic() - started
    outcome = await read_outputs(bootstrap, sink, args.partitions, truth)
    outcome.cpu_secs = cpu
    outcome.note = "; ".join(n for n in (note, outcome.note) if n) or None
    print(f"  {system:<6} run {run + 1}: {outcome.rate:>9,.0f} records/s steady "
          f"(wall {wall:.1f}s, CPU {cpu / args.records * 1e6:.0f} us/record), "
          f"{outcome.outputs:,} outputs, final counts "
          f"{'exact' if not outcome.wrong else f'WRONG for {outcome.wrong:,} words'}"
          f"{f' [{outcome.note}]' if outcome.note else ''}", flush=True)
    return outcome


def state_cost(words: list[str], per_round: int = 30_000) -> str:
    """The engine's state on its own: ``get`` + ``put`` per record, and prepare + commit per
    checkpoint, with ``per_round`` records between checkpoints (about a second's worth)."""
    with tempfile.TemporaryDirectory(prefix="bench-state-") as directory:
        store = SqliteStateStore(Path(directory) / "state.sqlite3")
        state = KeyValueState(store, "bench/count-1")
        updates = checkpoints = 0.0
        changed, rounds = 0, 0
        for start in range(0, len(words), per_round):
            t0 = time.perf_counter()
            for word in words[start:start + per_round]:
                state.put(word, state.get(word, 0) + 1)
            t1 = time.perf_counter()
            changed += len(set(words[start:start + per_round]))
            state.prepare_commit(rounds)
            state.commit(rounds)
            checkpoints += time.perf_counter() - t1
            updates += t1 - t0
            rounds += 1
        store.close()
    n = len(words)
    return (f"engine state alone: get+put {updates / n * 1e9:.0f} ns per record; prepare+commit "
            f"{checkpoints / rounds * 1e3:.1f} ms per checkpoint of {changed // rounds:,} changed "
            f"keys ({checkpoints / n * 1e9:.0f} ns per record at {per_round:,} records a round)")


def table(results: dict[str, list[Outcome]], records: int) -> list[str]:
    """The summary: per system the median rate and CPU per record; per run the ratio."""
    lines = [f"{'system':<55} {'records/s':>10} {'spread':>19} {'CPU s/record':>13}"]
    for system, runs in results.items():
        rates = [o.rate for o in runs]
        cpu = statistics.median(o.cpu_secs for o in runs) / records
        exact = "" if all(not o.wrong and not o.note for o in runs) else "  (NOT exact)"
        lines.append(f"{LABELS[system]:<55} {statistics.median(rates):>10,.0f} "
                     f"{min(rates):>9,.0f}-{max(rates):<9,.0f} {cpu:>13.2e}{exact}")
    if "engine" in results and "quix" in results:
        ratios = [e.rate / q.rate if q.rate else 0.0
                  for e, q in zip(results["engine"], results["quix"], strict=True)]
        met = all(r >= TARGET for r in ratios)
        lines += ["", f"engine / quixstreams per run: {', '.join(f'{r:.2f}' for r in ratios)}"
                  f"  target >= {TARGET} in every run: {'met' if met else 'NOT met'}"]
    return lines


async def main(args: argparse.Namespace) -> None:
    """Fill the input, run each system ``--runs`` times, print the table."""
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if unknown := [s for s in systems if s not in LABELS]:
        sys.exit(f"bench_stateful: unknown systems {unknown}; choose from {list(LABELS)}")
    if "quix" in systems:
        await asyncio.to_thread(peer_python)
    words = make_words(args.records, args.words)
    truth = Counter(words)
    broker, bootstrap = None, args.bootstrap_servers
    if bootstrap is None:
        broker = TestingBroker().start()
        bootstrap = broker.bootstrap
    results: dict[str, list[Outcome]] = {s: [] for s in systems}
    try:
        source = f"bench-words-{time.time_ns()}"
        if broker is not None:
            # quixstreams derives its changelog topic's retention from the input's, which
            # this broker reports only when set.
            await broker.create_topic(source, args.partitions, RETENTION)
        secs = await fill(bootstrap, source, words)
        print(f"input: {args.records:,} records keyed by {len(truth):,} words in "
              f"{args.partitions} partitions, written in {secs:.1f}s", flush=True)
        for run in range(args.runs):
            for system in systems:
                results[system].append(await one_run(system, run, bootstrap, broker,
                                                     source, truth, args))
    finally:
        if broker is not None:
            broker.stop()
    print()
    print("\n".join(table(results, args.records)))
    if "engine" in systems:
        print(state_cost(words))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--words", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--runs", type=int, default=1, help="runs per system")
    parser.add_argument("--systems", default=",".join(LABELS),
                        help=f"comma-separated subset of {','.join(LABELS)}")
    parser.add_argument("--peer-timeout", type=float, default=180.0, metavar="SECS")
    parser.add_argument("--bootstrap-servers", default=None,
                        help="an existing broker (topics must auto-create); default: Tansu")
    parser.add_argument("--engine-child", nargs=6, help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    _args = _parser().parse_args()
    if _args.engine_child:
        _boot, _source, _sink, _group, _records, _dir = _args.engine_child
        _loop_runner(run_engine(_boot, _source, _sink, _group, int(_records), _dir))
    else:
        _loop_runner(main(_args))
