"""Replay throughput: N failed records through replay_failed's job, Spark start-up apart.

    python scripts/bench_replay.py [--records 100000] [--partitions 2] [--master local[*]]
                                   [--warm-runs 3] [--bootstrap-servers HOST:PORT]

Without ``--bootstrap-servers`` it starts the Tansu test broker. It starts one
SparkSession (its start-up time printed apart), then 1 + ``--warm-runs`` times: fills a
fresh failed topic with N distinct failed records (1 KiB values), runs the job (a real run,
not a dry run) on that session, checks the target topic received exactly N records,
deletes both topics, and prints records/s over the job's whole time (plan, read, parse,
de-duplicate, write, commit). The first ("cold") run also pays for the session's first
Python workers; the warm runs do not, and the JVM compiles less in each. The last line
gives the median of the warm runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

# The imports below need the path set above.
from aiokafka import AIOKafkaProducer  # noqa: E402
from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

from connectors.kafka.failed import FailedRecord  # noqa: E402
from connectors.kafka.testing_broker import TestingBroker  # noqa: E402
from connectors.spark.job import run_replay  # noqa: E402
from connectors.spark.offsets import plan_ranges  # noqa: E402
from connectors.spark.replay import ReplayOptions  # noqa: E402
from connectors.spark.session import build_session  # noqa: E402

_VALUE = os.urandom(512).hex().encode()  # 1 KiB


@contextlib.asynccontextmanager
async def _admin(bootstrap: str) -> AsyncIterator[AIOKafkaAdminClient]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        yield admin
    finally:
        await admin.close()


async def _create_topics(bootstrap: str, names: list[str], partitions: int) -> None:
    async with _admin(bootstrap) as admin:
        await admin.create_topics([NewTopic(n, partitions, replication_factor=1) for n in names])


async def _fill(bootstrap: str, failed_topic: str, source: str, records: int) -> float:
    """Write ``records`` failed records; returns the seconds it took."""
    started = time.monotonic()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5,
                                max_batch_size=256 * 1024)
    await producer.start()
    try:
        pending = []
        for i in range(records):
            record = FailedRecord(source, i % 8, i, b"key-%d" % i, _VALUE, 4,
                                  "ValueError: poison" if i % 3 else "timeout",
                                  1_800_000_000_000, "bench", "bolt")
            pending.append(await producer.send(failed_topic, record.to_json()))
            if len(pending) >= 10_000:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    return time.monotonic() - started


async def _delete_topics(bootstrap: str, names: list[str]) -> None:
    async with _admin(bootstrap) as admin:
        await admin.delete_topics(names)


async def _count(bootstrap: str, topic: str) -> int:
    return sum(r.size for r in await plan_ranges(bootstrap, topic))


def _run_once(bootstrap: str, spark: SparkSession, args: argparse.Namespace,
              label: str) -> float:
    """One run on a fresh failed topic; prints it and returns its records/s."""
    run = uuid.uuid4().hex[:8]
    failed_topic, source = f"bench-failed-{run}", f"bench-orders-{run}"
    asyncio.run(_create_topics(bootstrap, [failed_topic, source], args.partitions))
    try:
        fill_s = asyncio.run(_fill(bootstrap, failed_topic, source, args.records))
        summary = run_replay(ReplayOptions(bootstrap, failed_topic, group_id=f"bench-{run}",
                                           max_offsets_per_task=args.max_offsets_per_task),
                             spark)
        written = asyncio.run(_count(bootstrap, source))
    finally:
        # The test broker keeps every record in memory, and its work per request grows
        # with what it holds: each run leaves it as it found it.
        asyncio.run(_delete_topics(bootstrap, [failed_topic, source]))
    if summary.replayed != args.records or written != args.records:
        raise SystemExit(f"expected {args.records:,} replayed records, the job reported "
                         f"{summary.replayed:,} and {source} holds {written:,}")
    phases = ", ".join(f"{name} {secs:.1f} s" for name, secs in summary.phases.items())
    rate = summary.replayed / summary.elapsed_s
    print(f"{label:<8} {summary.replayed:,} replayed in {summary.elapsed_s:.2f} s = "
          f"{rate:,.0f} records/s  ({phases}; failed topic filled in {fill_s:.1f} s "
          "beforehand)", flush=True)
    return rate


def _bench(bootstrap: str, args: argparse.Namespace) -> None:
    started = time.monotonic()
    spark = build_session(args.master, app_name="bench-replay")
    print(f"Spark start-up {time.monotonic() - started:.1f} s (master {args.master}, "
          f"{spark.sparkContext.defaultParallelism} cores)", flush=True)
    try:
        # The first job on a fresh session also pays for Python workers and JIT warm-up.
        _run_once(bootstrap, spark, args, "cold:")
        warm = [_run_once(bootstrap, spark, args, f"warm {i + 1}:")
                for i in range(args.warm_runs)]
        if warm:
            print(f"warm median {statistics.median(warm):,.0f} records/s "
                  f"({min(warm):,.0f} to {max(warm):,.0f})", flush=True)
    finally:
        spark.stop()


def main() -> None:
    """Parse the command line, run the benchmark once, print its figures."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--records", type=int, default=100_000)
    p.add_argument("--partitions", type=int, default=2, help="of the failed and target topics")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--max-offsets-per-task", type=int, default=50_000,
                   help="the job's default")
    p.add_argument("--warm-runs", type=int, default=3)
    p.add_argument("--bootstrap-servers", help="an existing broker (default: start Tansu)")
    args = p.parse_args()
    with contextlib.ExitStack() as stack:
        bootstrap = args.bootstrap_servers
        if bootstrap is None:
            bootstrap = stack.enter_context(TestingBroker()).bootstrap
        _bench(bootstrap, args)


if __name__ == "__main__":
    main()
