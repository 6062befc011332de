"""Cost of the repartition hop: the keyed Kafka word count with ``topology.workers`` 2 and 1.

    python scripts/bench_keyed.py [--sentences 10000] [--partitions 2] [--runs 1]
                                  [--bootstrap-servers HOST:PORT]

Without ``--bootstrap-servers`` it starts the Tansu test broker. Each run writes
``--sentences`` sentences of ten words (seeded) to a fresh topic and runs
``topologies/kafka_word_count.py`` in this one process, in a fresh consumer group:

- ``topology.workers=1``: the fields grouping ``split -> count`` stays in process;
- ``topology.workers=2``: it goes through the repartition topic (every word is written to
  Kafka, read back in the same group, then counted), as it does across processes.

A run ends when the sentences (and, with the hop, the repartition records) are committed
to the end. The rate is words counted per second in steady state, from the producer
timestamps of the counts topic: from the 5 % mark to the last count, so group joins and
start-up are left out. Words per CPU second (this process's CPU time over the whole run)
is steadier than the rate on a busy machine. With ``--runs N`` the table gives medians.
Every run checks that the last count of every word is the truth.

The restore rate (``--restore-records N``, 0 to skip; ``--skip-hop`` runs it alone): N
changelog records over N/10 keys are written to one partition of a fresh changelog topic,
then restored into a fresh SQLite state store, as a partition's new owner does
(``read_partition``: read from the beginning to the high watermark, batched
transactions); the figure is changelog records per second into the partition's state, from
the broker and for the store alone (records already in memory).

``--stateful-sentences N`` runs ``scripts/stateful_cpu_topology.py`` (the stateful word
count with about 0.1 ms of arithmetic per word in the count bolt: CPU-bound) by the CLI
with ``--workers 1`` and ``--workers 2`` on N sentences over 4 partitions (the count's
state per partition, through the repartition topic, in two processes) and prints words per
second of each, from the counts' timestamps as above, and their ratio. It needs two free
cores.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

# The imports below need the path set above.
from aiokafka import AIOKafkaConsumer, TopicPartition  # noqa: E402
from benchlib import (  # noqa: E402
    check_counts,
    create_kept_topics,
    fresh_count_topics,
    make_sentences,
    read_counts,
    run_loop,
    word_truth,
)

from connectors.kafka.changelog import (  # noqa: E402
    ChangelogWriter,
    ensure_changelog,
    read_partition,
)
from connectors.kafka.repartition import topic_name  # noqa: E402
from connectors.kafka.testing_broker import TestingBroker  # noqa: E402
from engine import Config, LocalCluster, tune_gc  # noqa: E402
from engine.state.changelog import ChangelogRestore, encode_changes  # noqa: E402
from engine.state.partition_store import PartitionStore  # noqa: E402
from engine.state.store import SqliteStateStore  # noqa: E402

FAST = {"kafka.consumer.session_timeout_ms": 2000, "kafka.consumer.heartbeat_interval_ms": 250}


def _word_count_module() -> Any:
    path = _ROOT / "topologies" / "kafka_word_count.py"
    spec = importlib.util.spec_from_file_location("kafka_word_count", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module




async def _committed(bootstrap: str, group: str, topic: str, partitions: int) -> int:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                enable_auto_commit=False)
    await consumer.start()
    try:
        offsets = [await consumer.committed(TopicPartition(topic, p)) for p in range(partitions)]
        return sum(o or 0 for o in offsets)
    finally:
        await consumer.stop()


async def _end(bootstrap: str, topic: str, partitions: int) -> int:
    """The end offsets of ``topic`` summed over its partitions."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        ends = await consumer.end_offsets([TopicPartition(topic, p) for p in range(partitions)])
        return sum(ends.values())
    finally:
        await consumer.stop()




def _rate(records: list[Any]) -> float:
    stamps = sorted(r.timestamp for r in records)
    start = stamps[len(stamps) // 20]
    span = (stamps[-1] - start) / 1000
    return (len(stamps) - len(stamps) // 20) / span if span > 0 else float("nan")




async def _topics(bootstrap: str, suffix: str, sentences: list[str],
                  partitions: int) -> tuple[str, str, str, str, Counter[str]]:
    """Fresh input and counts topics, the input filled: tag, topics, group and the truth."""
    tag = f"{time.monotonic_ns()}-{suffix}"
    source, counts, group = await fresh_count_topics(bootstrap, tag, "bench-keyed", sentences,
                                                     partitions)
    return tag, source, counts, group, word_truth(sentences)


async def one_run(bootstrap: str, workers: int, sentences: list[str], partitions: int,
                  run: int) -> tuple[float, float]:
    """Words per second of one run of the word count at ``workers``, and words per second
    of this process's CPU time (start-up and group joins included)."""
    module = _word_count_module()
    _, source, counts, group, truth = await _topics(bootstrap, f"{workers}-{run}", sentences,
                                                    partitions)
    total = sum(truth.values())
    conf = Config(module.CONF)
    conf.update({"kafka.bootstrap.servers": bootstrap, "kafka.sentences.topic": source,
                 "kafka.counts.topic": counts, "kafka.group.id": group,
                 "kafka.commit.interval.secs": 0.5, "topology.workers": workers, **FAST})
    hop = topic_name(group, "count")
    cpu = time.process_time()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("keyed", conf, module.build(conf))
        tune_gc()  # as ``python -m engine run`` does after submitting
        while await _committed(bootstrap, group, source, partitions) < len(sentences) or (
                workers > 1 and await _committed(bootstrap, group, hop, partitions)
                < await _end(bootstrap, hop, partitions)):
            await asyncio.sleep(0.5)
        await cluster.kill_topology("keyed", wait_secs=5)
    cpu = time.process_time() - cpu
    records = await read_counts(bootstrap, counts, partitions, total)
    check_counts(records, truth)
    return _rate(records), total / cpu


async def bench(bootstrap: str, args: argparse.Namespace) -> dict[int, tuple[float, float]]:
    sentences = make_sentences(args.sentences, vocabulary=1000, seed=7)
    rates: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
    for run in range(args.runs):
        for workers in (1, 2):
            rates[workers].append(await one_run(bootstrap, workers, sentences,
                                                args.partitions, run))
    return {w: (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
            for w, runs in rates.items()}


async def stateful_run(bootstrap: str, workers: int, sentences: list[str], partitions: int,
                       tmp: Path) -> float:
    """Words per second of ``topologies/stateful_word_count.py`` run by the CLI with
    ``--workers`` ``workers`` (state per partition and the hop when 2), in steady state."""
    import subprocess

    tag, source, counts, group, truth = await _topics(bootstrap, f"s{workers}", sentences,
                                                    partitions)
    total = sum(truth.values())
    conf = {"kafka.bootstrap.servers": bootstrap, "kafka.sentences.topic": source,
            "kafka.counts.topic": counts, "kafka.group.id": group,
            "kafka.commit.interval.secs": 0.5, "topology.state.dir": str(tmp / tag),
            "kafka.consumer.auto_offset_reset": "earliest", **FAST}
    args = [sys.executable, "-m", "engine", "run",
            str(_ROOT / "scripts" / "stateful_cpu_topology.py"), "--workers", str(workers)]
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    proc = subprocess.Popen(args, cwd=_ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        while await _committed(bootstrap, group, source, partitions) < len(sentences):
            await asyncio.sleep(0.5)
        records = await read_counts(bootstrap, counts, partitions, total)
    finally:
        proc.terminate()
        proc.wait(60)
    check_counts(records, truth)
    return _rate(records)


def _changelog(records: int) -> list[tuple[bytes, bytes]]:
    keys = max(1, records // 10)
    return [r for i in range(records)
            for r in encode_changes({f"word{i % keys:07d}": i}, i)]


def _restore(path: Path, records: int) -> ChangelogRestore:
    """A restore from the beginning into a new store at ``path``."""
    store = PartitionStore(SqliteStateStore(path))
    store.begin("b/count/p0", "bench")
    return ChangelogRestore(store, "b/count/p0", records, "bench changelog")


async def restore_rates(bootstrap: str, records: int, tmp: Path) -> tuple[float, float]:
    """Changelog records per second restored from the broker, and by the store alone."""
    log = _changelog(records)
    alone = _restore(tmp / "alone.sqlite3", records)
    started = time.perf_counter()
    alone.add((i, k, v) for i, (k, v) in enumerate(log))
    alone.finish()
    store_rate = records / (time.perf_counter() - started)
    source, topic = f"bench-input-{time.monotonic_ns()}", f"bench-{time.monotonic_ns()}-changelog"
    await create_kept_topics(bootstrap, {source: 1})
    await ensure_changelog(bootstrap, {}, [source], topic)
    writer = ChangelogWriter(topic, bootstrap, {})
    await writer.start()
    try:
        for at in range(0, records, 20000):
            await writer.write({0: log[at:at + 20000]})
    finally:
        await writer.stop()
    restore = _restore(tmp / "kafka.sqlite3", records)
    secs = (await read_partition(bootstrap, {}, topic, 0, 0, restore)).secs
    applied = restore.finish()
    if applied != records:
        raise SystemExit(f"restored {applied} of {records} changelog records")
    return records / secs, store_rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=10000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--bootstrap-servers", default=None)
    parser.add_argument("--restore-records", type=int, default=200000)
    parser.add_argument("--skip-hop", action="store_true")
    parser.add_argument("--stateful-sentences", type=int, default=0)
    args = parser.parse_args()
    if args.bootstrap_servers:
        _run(args.bootstrap_servers, args)
    else:
        with TestingBroker() as broker:
            _run(broker.bootstrap, args)


def _run(bootstrap: str, args: argparse.Namespace) -> None:
    if args.restore_records:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            kafka, store = run_loop(restore_rates(bootstrap, args.restore_records, Path(tmp)))
        print(f"restore of one changelog partition, {args.restore_records} records over "
              f"{max(1, args.restore_records // 10)} keys:")
        print(f"  from the broker into SQLite: {kafka:>12,.0f} records/s")
        print(f"  into SQLite alone:           {store:>12,.0f} records/s")
    if args.stateful_sentences:
        _stateful(bootstrap, args)
    if args.skip_hop:
        return
    result = run_loop(bench(bootstrap, args))
    words = args.sentences * 10
    print(f"keyed Kafka word count, {args.sentences} sentences ({words} words), "
          f"{args.partitions} partitions, {args.runs} run(s), medians:")
    print("                                                      words/s   words/CPU-s")
    for workers, what in ((1, "fields grouping in process"), (2, "through the repartition topic")):
        label = f"topology.workers={workers} ({what}):"
        print(f"  {label:<51}{result[workers][0]:>10,.0f}{result[workers][1]:>14,.0f}")
    print(f"  ratio: {result[2][0] / result[1][0]:.2f} of the in-process rate, "
          f"{result[2][1] / result[1][1]:.2f} per CPU second")


def _stateful(bootstrap: str, args: argparse.Namespace) -> None:
    import tempfile

    sentences = make_sentences(args.stateful_sentences, vocabulary=1000, seed=7)
    with tempfile.TemporaryDirectory() as tmp:
        rates = {w: run_loop(stateful_run(bootstrap, w, sentences, 4, Path(tmp)))
                 for w in (1, 2)}
    print(f"CPU-bound stateful word count by the CLI, {len(sentences)} sentences, "
          f"4 partitions:")
    for workers, rate in rates.items():
        print(f"  --workers {workers}: {rate:>12,.0f} words/s")
    print(f"  ratio: {rates[2] / rates[1]:.2f}")


if __name__ == "__main__":
    main()
