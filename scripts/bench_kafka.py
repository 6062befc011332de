"""Kafka throughput: this engine beside a bare aiokafka loop, quixstreams and faust.

    python scripts/bench_kafka.py [--records 200000] [--partitions 4] [--runs 1]
                                  [--systems bare,engine,storm,quix,faust]
                                  [--inputs batched,default]
                                  [--peer-timeout 120] [--bootstrap-servers HOST:PORT]

Without ``--bootstrap-servers`` it starts the Tansu test broker. The input is ``--records``
JSON sentences (``{"id": i, "text": "ten words ..."}``) on ``--partitions`` partitions,
written once per ``--inputs`` kind, and every system runs on each:

- ``batched``: written with ``linger_ms=10`` and 256 KB batches, so the topic holds large
  record batches (hundreds of records each);
- ``default``: written with the producer's defaults (no linger, 16 KB batches), so the topic
  holds small record batches, as most producers leave it. A consumer then decodes many
  more batches per record, and any per-batch work of a consumer shows here;
- ``small`` (not run unless asked): 1 KB batches, about eight records each, the worst case
  for per-batch work.

Every system reads all of it in its own consumer group and, per input record, splits the
sentence, counts its words and writes one JSON output record to its own output topic, at
least once (an input offset is committed only after its output was confirmed):

- ``bare``: an aiokafka loop (consume a batch, produce it, wait for delivery, commit): the
  ceiling for this client;
- ``engine``: ``KafkaSpout`` -> split-and-count bolt -> ``KafkaBolt``, acking on;
- ``storm``: the Storm shape: ``KafkaSpout`` -> split (words to a fields-grouped count,
  the output record to ``KafkaBolt``, all anchored);
- ``quix``, ``faust``: quixstreams and faust-streaming, run as subprocesses in a virtual
  environment this script makes (or reuses) under ``.bench-venvs/`` in the repository.

Every run of every system is a fresh process (the first three re-run this script, importing
only what the system runs), and the CPU time per record is that process's, start-up
included. Every consumer has the same group settings (6 s session, 250 ms heartbeat), every
producer ``acks=all`` and 5 ms linger. The first line says whether the engine's hot path
runs compiled (what ``pip install`` builds) or as plain Python.

After each run the output topic is read back: every input id must be there (duplicates are
allowed and counted). The rate is steady state, from the producer timestamps of the output
records: from the 5 % mark to the last output, so group joins and start-up are left out.
With ``--runs N`` each system runs N times (fresh groups and outputs) and the table gives
medians.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

# The imports below need the path set above.
import orjson  # noqa: E402
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from bench_kafka_peers import process  # noqa: E402 (the peers' own per-record work)

from connectors.kafka import KafkaBolt, KafkaSpout  # noqa: E402
from connectors.kafka.testing_broker import TestingBroker  # noqa: E402
from engine import BasicBolt, Config, LocalCluster, TopologyBuilder  # noqa: E402
from engine.gc_tuning import tune_gc  # noqa: E402

# The peers' settings too (bench_kafka_peers.py): every system's consumer has the same
# session and heartbeat.
FAST_GROUP = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 250,
              "auto_offset_reset": "earliest"}
PEERS = {"quix": "quixstreams==3.28.*", "faust": "faust-streaming==0.15.*"}
OWN = ("bare", "engine", "storm")  # run by this script, each run in a child process
PEER_SCRIPT = Path(__file__).resolve().parent / "bench_kafka_peers.py"
VENV = _ROOT / ".bench-venvs" / "peers"
LABELS = {
    "bare": "bare aiokafka loop (consume, produce, confirm, commit)",
    "engine": "engine: KafkaSpout -> split+count -> KafkaBolt",
    "storm": "engine, Storm shape: split -> fields-grouped count",
    "quix": "quixstreams 3.28",
    "faust": "faust-streaming 0.15",
}
VOCABULARY = [f"w{i:03d}" for i in range(500)]


class SplitCount(BasicBolt):
    """``(key, value)`` in, ``(key, output value)`` out: ``process`` per tuple."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.counts: dict[str, int] = {}

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "value"])

    def execute(self, tup: Any, collector: Any) -> None:
        key, value = tup.values
        collector.emit([key, process(value, self.counts)])


class Split(BasicBolt):
    """Storm shape: each word to ``words`` (fields-grouped count), the output on default."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "value"])
        declarer.declare_stream("words", ["word"])

    def execute(self, tup: Any, collector: Any) -> None:
        key, value = tup.values
        doc = orjson.loads(value)
        words = doc["text"].split()
        for word in words:
            collector.emit([word], "words")
        collector.emit([key, orjson.dumps({"id": doc["id"], "words": len(words)})])


class Count(BasicBolt):
    """Storm shape: counts the words of its fields-grouping share."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.counts: dict[str, int] = {}

    def declare_output_fields(self, declarer: Any) -> None:
        pass

    def execute(self, tup: Any, collector: Any) -> None:
        word = tup.values[0]
        self.counts[word] = self.counts.get(word, 0) + 1


INPUTS: dict[str, dict[str, Any]] = {
    "batched": {"linger_ms": 10, "max_batch_size": 256 * 1024},
    "default": {},  # the producer's defaults: smaller record batches in the topic
    "small": {"max_batch_size": 1024},  # a few records a batch: per-batch costs at their worst
}


async def fill(bootstrap: str, topic: str, records: int, batching: str = "batched") -> float:
    """Write the input sentences (seeded, so every run reads the same) with the producer
    options of ``INPUTS[batching]``; returns seconds."""
    rng = random.Random(7)
    started = time.monotonic()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **INPUTS[batching])
    await producer.start()
    try:
        futures = []
        for i in range(records):
            text = " ".join(rng.choices(VOCABULARY, k=10))
            futures.append(await producer.send(
                topic, orjson.dumps({"id": i, "text": text}), key=b"%d" % i))
        await asyncio.gather(*futures)
    finally:
        await producer.stop()
    return time.monotonic() - started


async def run_bare(bootstrap: str, source: str, sink: str, group: str, records: int) -> None:
    """Consume a batch, produce it, wait for every delivery, commit; until ``records``."""
    consumer = AIOKafkaConsumer(source, bootstrap_servers=bootstrap, group_id=group,
                                enable_auto_commit=False, **FAST_GROUP)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    await consumer.start()
    await producer.start()
    counts: dict[str, int] = {}
    done = 0
    try:
        while done < records:
            batches = await consumer.getmany(timeout_ms=200, max_records=2000)
            futures = [await producer.send(sink, process(r.value, counts), key=r.key)
                       for batch in batches.values() for r in batch]
            await asyncio.gather(*futures)
            if futures:
                await consumer.commit()
                done += len(futures)
    finally:
        await consumer.stop()
        await producer.stop()


async def run_engine(bootstrap: str, source: str, sink: str, group: str, records: int,
                     storm_shape: bool, max_pending: int) -> None:
    """One of the engine topologies, until the spout acked ``records`` tuples."""
    builder = TopologyBuilder()
    builder.set_spout("kafka", KafkaSpout(source, bootstrap, group, value_format="bytes",
                                          **FAST_GROUP))
    out = KafkaBolt(sink, bootstrap, key_field="key", value_field="value",
                    value_format="bytes")
    if storm_shape:
        builder.set_bolt("split", Split()).shuffle_grouping("kafka")
        builder.set_bolt("count", Count(), 2).fields_grouping("split", ["word"], "words")
        builder.set_bolt("out", out).shuffle_grouping("split")
    else:
        builder.set_bolt("split", SplitCount()).shuffle_grouping("kafka")
        builder.set_bolt("out", out).shuffle_grouping("split")
    conf = Config()
    conf.set_max_spout_pending(max_pending)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("bench-kafka", conf, builder.create_topology())
        tune_gc()
        # Polled 10 times a second: stats() is not free, and the rate is read from the
        # outputs' timestamps, so a later look at the end costs the measurement nothing.
        while cluster.stats("bench-kafka")["components"]["kafka"]["acked"] < records:
            await asyncio.sleep(0.1)
        failed = cluster.stats("bench-kafka")["components"]["kafka"]["failed"]
        await cluster.kill_topology("bench-kafka", wait_secs=5)
    if failed:
        print(f"  note: {failed} tuples failed and were replayed")


def peer_python() -> Path:
    """The peers' interpreter, making the virtual environment on first use."""
    python = VENV / "bin" / "python"
    if not python.exists():
        print(f"making {VENV} with {', '.join(PEERS.values())} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PEERS.values(), "orjson"],
                       check=True)
    return python


def run_peer(peer: str, bootstrap: str, source: str, sink: str, group: str, records: int,
             timeout: float, extra: tuple[str, ...] = ()) -> str | None:
    """Run one peer to completion (``extra``: more arguments for the peer script); returns
    a note if it timed out or failed."""
    cmd = [str(peer_python()), str(PEER_SCRIPT), peer, "--bootstrap", bootstrap,
           "--source", source, "--sink", sink, "--group", group, "--records", str(records),
           *extra]
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"stopped after {timeout:.0f}s"
    if proc.returncode != 0:
        tail = proc.stdout.decode(errors="replace").strip().splitlines()[-5:]
        return f"exit {proc.returncode}: " + " | ".join(tail)
    return None


@dataclass
class Outcome:
    """What the output topic of one run shows."""

    rate: float
    unique: int
    duplicates: int
    note: str | None = None
    cpu_us: float = 0.0  # CPU time of the system's process per input record, start-up included


async def read_outputs(bootstrap: str, sink: str, partitions: int,
                       records: int, mark: float = 0.05) -> Outcome:
    """Read ``sink`` to its end; rate from the first output timestamp of each id, from
    the ``mark`` fraction of the outputs to the last."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                auto_offset_reset="earliest", fetch_max_bytes=8 << 20)
    await consumer.start()
    tps = [TopicPartition(sink, p) for p in range(partitions)]
    consumer.assign(tps)
    first: dict[int, int] = {}
    total = 0
    idle_since = time.monotonic()
    try:
        while len(first) < records and time.monotonic() - idle_since < 3.0:
            batches = await consumer.getmany(timeout_ms=500, max_records=20_000)
            for batch in batches.values():
                for rec in batch:
                    total += 1
                    first.setdefault(orjson.loads(rec.value)["id"], rec.timestamp)
            if batches:
                idle_since = time.monotonic()
    finally:
        await consumer.stop()
    stamps = sorted(first.values())
    if len(stamps) < 20:
        return Outcome(0.0, len(first), total - len(first), "no output")
    first_counted = int(len(stamps) * mark)
    span = max(stamps[-1] - stamps[first_counted], 1) / 1000
    return Outcome((len(stamps) - first_counted) / span, len(first), total - len(first))


async def one_run(system: str, run: int, bootstrap: str, broker: TestingBroker | None,
                  source: str, args: argparse.Namespace) -> Outcome:
    """Run ``system`` once into a fresh output topic and read the outcome back."""
    tag = f"{system}-{run}-{time.time_ns()}"
    sink, group = f"bench-out-{tag}", f"bench-{tag}"
    if broker is not None:
        await broker.create_topic(sink, args.partitions)
    note = None
    started = time.monotonic()
    cpu_before = _cpu_seconds()
    if system in OWN:
        await asyncio.to_thread(own_process, system, bootstrap, source, sink, group,
                                args.records, args.max_spout_pending)
    else:
        note = await asyncio.to_thread(run_peer, system, bootstrap, source, sink, group,
                                       args.records, args.peer_timeout)
    wall = time.monotonic() - started
    cpu = _cpu_seconds() - cpu_before
    outcome = await read_outputs(bootstrap, sink, args.partitions, args.records)
    outcome.note = outcome.note or note
    outcome.cpu_us = cpu / args.records * 1e6
    missing = args.records - outcome.unique
    print(f"  {system:<7} run {run + 1}: {outcome.rate:>9,.0f} records/s steady "
          f"(wall {wall:.1f}s, CPU {outcome.cpu_us:.1f} us/record), outputs {outcome.unique:,} ids"
          f"{f', {missing:,} MISSING' if missing else ''}, {outcome.duplicates:,} duplicates"
          f"{f' [{outcome.note}]' if outcome.note else ''}", flush=True)
    return outcome


def own_process(system: str, bootstrap: str, source: str, sink: str, group: str,
                records: int, max_pending: int) -> None:
    """Run ``system`` (bare, engine or storm) in a fresh process of its own, as the peers
    run in theirs: nothing of the harness or an earlier run shares its interpreter, and
    the child imports only what the system needs (not ``benchlib``, which brings pytest
    and the word count's topology), so its CPU time counts the system's own start-up."""
    from benchlib import fresh_process

    print(fresh_process(__file__, "--child", system, bootstrap, source, sink, group,
                        str(records), str(max_pending)), end="", flush=True)


async def run_own(system: str, bootstrap: str, source: str, sink: str, group: str,
                  records: int, max_pending: int) -> None:
    """What ``own_process`` runs in the child."""
    if system == "bare":
        await run_bare(bootstrap, source, sink, group, records)
    else:
        await run_engine(bootstrap, source, sink, group, records, system == "storm",
                         max_pending)


def _cpu_seconds() -> float:
    """CPU time so far of this process's finished children (every system runs in one)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def table(results: dict[str, list[Outcome]], records: int) -> list[str]:
    """The summary lines: medians, spread, ratios and the targets."""
    med = {s: statistics.median(o.rate for o in runs) for s, runs in results.items()}
    bare = med.get("bare")
    lines = [f"{'system':<55} {'records/s':>10} {'spread':>19} {'/ bare':>7} "
             f"{'CPU us/rec':>10}"]
    for system, runs in results.items():
        rates = [o.rate for o in runs]
        ratio = f"{med[system] / bare:.2f}" if bare else "-"
        partial = " (partial)" if any(o.unique < records for o in runs) else ""
        cpu = statistics.median(o.cpu_us for o in runs)
        lines.append(f"{LABELS[system]:<55} {med[system]:>10,.0f} "
                     f"{min(rates):>9,.0f}-{max(rates):<9,.0f} {ratio:>7} {cpu:>10.1f}"
                     f"{partial}")
    checks = []
    if bare and "engine" in med:
        checks.append(("engine >= 1.1 x bare", med["engine"] / bare, 1.1))
    if "engine" in med and med.get("quix"):
        checks.append(("engine >= 1.5 x quixstreams", med["engine"] / med["quix"], 1.5))
    if bare and "storm" in med:
        checks.append(("Storm shape >= 0.7 x bare", med["storm"] / bare, 0.7))
    lines.append("")
    for label, value, target in checks:
        lines.append(f"target {label:<30} {value:>5.2f}  {'met' if value >= target else 'NOT met'}")
    return lines


async def main(args: argparse.Namespace) -> None:
    """Fill the input, run each system ``--runs`` times, print the table."""
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in systems if s not in LABELS]
    if unknown:
        sys.exit(f"bench_kafka: unknown systems {unknown}; choose from {list(LABELS)}")
    inputs = [i.strip() for i in args.inputs.split(",") if i.strip()]
    if bad := [i for i in inputs if i not in INPUTS]:
        sys.exit(f"bench_kafka: unknown inputs {bad}; choose from {list(INPUTS)}")
    if any(s in PEERS for s in systems):
        await asyncio.to_thread(peer_python)
    if any(s in OWN for s in systems):
        from benchlib import hot_path

        print(f"engine hot path: {hot_path()}", flush=True)
    broker = None
    bootstrap = args.bootstrap_servers
    if bootstrap is None:
        broker = TestingBroker().start()
        bootstrap = broker.bootstrap
    results: dict[str, dict[str, list[Outcome]]] = {i: {s: [] for s in systems} for i in inputs}
    try:
        sources = {}
        for batching in inputs:
            sources[batching] = f"bench-in-{batching}-{time.time_ns()}"
            if broker is not None:
                await broker.create_topic(sources[batching], args.partitions)
            secs = await fill(bootstrap, sources[batching], args.records, batching)
            print(f"input {batching!r}: {args.records:,} JSON sentences in {args.partitions} "
                  f"partitions, written in {secs:.1f}s ({INPUTS[batching] or 'defaults'})",
                  flush=True)
        for run in range(args.runs):  # inputs and systems interleaved: same machine state
            for batching in inputs:
                for system in systems:
                    print(f"[{batching}]", end="")
                    results[batching][system].append(await one_run(
                        system, run, bootstrap, broker, sources[batching], args))
    finally:
        if broker is not None:
            broker.stop()
    for batching in inputs:
        print(f"\ninput {batching!r} ({INPUTS[batching] or 'producer defaults'}):")
        print("\n".join(table(results[batching], args.records)))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--runs", type=int, default=1, help="runs per system; medians shown")
    parser.add_argument("--systems", default=",".join(LABELS),
                        help=f"comma-separated subset of {','.join(LABELS)}")
    parser.add_argument("--inputs", default="batched,default",
                        help=f"comma-separated subset of {','.join(INPUTS)}: how the input "
                             "is written (large record batches, the producer's defaults, "
                             "small batches)")
    parser.add_argument("--max-spout-pending", type=int, default=5_000)
    parser.add_argument("--peer-timeout", type=float, default=120.0, metavar="SECS",
                        help="stop a peer after SECS (its rate is then over what it wrote)")
    parser.add_argument("--child", nargs=7, help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap-servers", default=None,
                        help="an existing broker (topics must auto-create); default: Tansu")
    return parser


if __name__ == "__main__":
    arguments = _parser().parse_args()
    if arguments.child:
        _system, *_where, _records, _pending = arguments.child
        work = run_own(_system, *_where, int(_records), int(_pending))
    else:
        work = main(arguments)
    try:
        import uvloop
    except ImportError:
        asyncio.run(work)
    else:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(work)
