"""Scaling over cores: ``engine run --workers N`` against one worker, CPU-bound bolt.

    python scripts/bench_workers.py [--records 60000] [--partitions 4] [--work-us 200]
                                    [--workers 1,2] [--kill-after SECS]
                                    [--commit-interval 0.5]

Starts the Tansu test broker, writes ``--records`` records on ``--partitions`` partitions,
then for each worker count runs ``python -m engine run`` on this file's topology
(``KafkaSpout`` -> a bolt doing about ``--work-us`` microseconds of Python per record ->
``KafkaBolt``) in a fresh consumer group, until the group committed every input; then
stops it (SIGTERM) and reads the output topic back: every input must be there. The rate
is steady state, from the output records' producer timestamps, ``--mark`` (25 %: past
the consumer group's first rebalances) to the last.

With ``--kill-after SECS``, one worker gets SIGKILL that long after the start (the
supervisor starts it again) and the run prints the group's committed offsets at the kill
and the duplicates in the output: what the kill made the group read again.
``--commit-interval`` is the spout's ``commit_interval_secs`` (5 is its default).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

# The imports below need the path set above.
import orjson  # noqa: E402
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402

from connectors.kafka import KafkaBolt, KafkaSpout  # noqa: E402
from engine import BasicBolt, Config, Topology, TopologyBuilder  # noqa: E402

CONF: dict[str, Any] = {"topology.max.spout.pending": 2000}


def spin(loops: int) -> int:
    """Pure-Python busy work."""
    total = 0
    for i in range(loops):
        total += i * i
    return total


class Work(BasicBolt):
    """``(key, value)`` -> ``(key, value)`` after ``loops`` rounds of ``spin``."""

    def __init__(self, loops: int) -> None:
        self.loops = loops

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "value"])

    def execute(self, tup: Any, collector: Any) -> None:
        spin(self.loops)
        collector.emit(tup.values)


def build(conf: Config) -> Topology:
    """KafkaSpout -> Work -> KafkaBolt, from ``bench.*`` settings."""
    bootstrap = str(conf["bench.bootstrap"])
    builder = TopologyBuilder()
    builder.set_spout("kafka", KafkaSpout(
        str(conf["bench.source"]), bootstrap, str(conf["bench.group"]), value_format="bytes",
        session_timeout_ms=2000, heartbeat_interval_ms=250, auto_offset_reset="earliest",
        commit_interval_secs=float(conf.get("bench.commit_interval", 0.5))))
    builder.set_bolt("work", Work(int(conf["bench.loops"]))).shuffle_grouping("kafka")
    builder.set_bolt("out", KafkaBolt(str(conf["bench.sink"]), bootstrap, key_field="key",
                                      value_field="value", value_format="bytes")
                     ).shuffle_grouping("work")
    return builder.create_topology()


def calibrate(work_us: float) -> int:
    """Loops of ``spin`` that take about ``work_us`` microseconds here."""
    loops = 1000
    while True:
        started = time.perf_counter()
        for _ in range(20):
            spin(loops)
        took = (time.perf_counter() - started) / 20
        if took > 50e-6:
            return max(1, int(loops * work_us * 1e-6 / took))
        loops *= 2


async def committed(bootstrap: str, group: str, topic: str,
                    partitions: int) -> list[int | None]:
    """The group's committed offset per partition of ``topic`` (None where none yet)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                enable_auto_commit=False)
    await consumer.start()
    try:
        return [await consumer.committed(TopicPartition(topic, p)) for p in range(partitions)]
    finally:
        await consumer.stop()


async def committed_total(bootstrap: str, group: str, topic: str, partitions: int) -> int:
    """Sum of the group's committed offsets on ``topic`` (0 where none yet)."""
    return sum(o or 0 for o in await committed(bootstrap, group, topic, partitions))


def kill_a_worker(supervisor: subprocess.Popen[bytes]) -> int:
    """SIGKILL one worker of ``supervisor`` (Linux: its children, from ``pgrep``)."""
    children = subprocess.run(["pgrep", "-P", str(supervisor.pid)], capture_output=True,
                              text=True, check=False).stdout.split()
    if not children:
        raise SystemExit("bench_workers: no worker to kill (the run ended too soon?)")
    pid = int(children[0])
    os.kill(pid, signal.SIGKILL)
    return pid


async def fill(bootstrap: str, topic: str, records: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=10)
    await producer.start()
    try:
        futures = [await producer.send(topic, orjson.dumps({"id": i}), key=b"%d" % i)
                   for i in range(records)]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def run_workers(broker: Any, workers: int, loops: int, source: str,
                      args: argparse.Namespace) -> tuple[float, int, float]:
    """One engine run; (steady records/s, unique outputs, wall seconds)."""
    from bench_kafka import read_outputs

    tag = f"w{workers}-{time.time_ns()}"
    sink, group = f"bench-out-{tag}", f"bench-{tag}"
    await broker.create_topic(sink, args.partitions)
    conf = {"bench.bootstrap": broker.bootstrap, "bench.source": source, "bench.sink": sink,
            "bench.group": group, "bench.loops": loops,
            "bench.commit_interval": args.commit_interval}
    cmd = [sys.executable, "-m", "engine", "run", __file__, "--workers", str(workers),
           "--status-interval", "5"]
    for key, value in conf.items():
        cmd += ["--conf", f"{key}={value}"]
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=_ROOT, stdin=subprocess.DEVNULL)
    kill_at = None if args.kill_after is None else started + args.kill_after
    try:
        while await committed_total(broker.bootstrap, group, source,
                                    args.partitions) < args.records:
            if proc.poll() is not None:
                raise SystemExit(f"bench_workers: engine exited with {proc.returncode}")
            if kill_at is not None and time.monotonic() >= kill_at:
                kill_at = None
                pid = kill_a_worker(proc)
                at_kill = await committed(broker.bootstrap, group, source, args.partitions)
                print(f"--workers {workers}: SIGKILL to worker pid {pid} at "
                      f"{time.monotonic() - started:.1f}s; committed offsets then {at_kill}",
                      flush=True)
            await asyncio.sleep(0.5)
        wall = time.monotonic() - started
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    outcome = await read_outputs(broker.bootstrap, sink, args.partitions, args.records,
                                 mark=args.mark)
    if args.kill_after is not None:
        print(f"--workers {workers}: {outcome.duplicates:,} duplicates in the output "
              f"(inputs read again after the kill)", flush=True)
    return outcome.rate, outcome.unique, wall


async def main(args: argparse.Namespace) -> None:
    """Fill the input, run each worker count, print rates and the speed-up."""
    from connectors.kafka.testing_broker import TestingBroker

    loops = calibrate(args.work_us)
    counts = [int(n) for n in args.workers.split(",")]
    broker = TestingBroker().start()
    rates: dict[int, float] = {}
    try:
        source = f"bench-in-{time.time_ns()}"
        await broker.create_topic(source, args.partitions)
        await fill(broker.bootstrap, source, args.records)
        print(f"input: {args.records:,} records in {args.partitions} partitions; bolt work "
              f"{args.work_us:.0f} us/record ({loops} loops)", flush=True)
        for workers in counts:
            rate, unique, wall = await run_workers(broker, workers, loops, source, args)
            rates[workers] = rate
            missing = args.records - unique
            print(f"--workers {workers}: {rate:>8,.0f} records/s steady (wall {wall:.1f}s), "
                  f"{unique:,} inputs out{f', {missing:,} MISSING' if missing else ''}",
                  flush=True)
    finally:
        broker.stop()
    base = rates.get(1)
    if base:
        for workers, rate in rates.items():
            if workers != 1:
                print(f"speed-up --workers {workers} / 1: {rate / base:.2f}x")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=60_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--work-us", type=float, default=200.0)
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    parser.add_argument("--kill-after", type=float, default=None, metavar="SECS",
                        help="SIGKILL one worker this long after the start; print the "
                             "duplicates it caused")
    parser.add_argument("--commit-interval", type=float, default=0.5, metavar="SECS",
                        help="the spout's commit_interval_secs")
    parser.add_argument("--mark", type=float, default=0.25,
                        help="steady state starts at this fraction of the outputs (the "
                             "workers' group rebalances settle before it)")
    return parser


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    asyncio.run(main(_parser().parse_args()))
