"""Kafka throughput: KafkaSpout → bolt → KafkaBolt beside a bare aiokafka relay loop.

    python scripts/bench_kafka.py [--records 200000] [--partitions 4] [--value-bytes 100]
                                  [--bootstrap-servers HOST:PORT]

Without ``--bootstrap-servers`` it starts the Tansu test broker. Both runs read the same
input topic (each with its own consumer group) and write every record to their own output
topic, in the same process, one after the other. The bare loop (consume a batch, produce
it without waiting per record, commit) is the upper bound: no tuples, no acking, no
per-record offset tracking. The engine run is at least once: a record's offset is committed
only after the broker confirmed its output. Rates are steady state: from 5 % of the records
done to the last one confirmed, so group joins and start-up are left out (printed apart).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

# The imports below need the path set above.
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer  # noqa: E402

from connectors.kafka import KafkaBolt, KafkaSpout  # noqa: E402
from connectors.kafka.testing_broker import TestingBroker  # noqa: E402
from engine import BasicBolt, Config, LocalCluster, TopologyBuilder  # noqa: E402

FAST_GROUP = {"session_timeout_ms": 2000, "heartbeat_interval_ms": 250,
              "auto_offset_reset": "earliest"}


class Forward(BasicBolt):
    """Passes ``(key, value)`` on, anchored."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "value"])

    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit(tup.values)


async def fill(bootstrap: str, topic: str, records: int, value_bytes: int) -> float:
    """Write the input; returns seconds taken."""
    started = time.monotonic()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=10,
                                max_batch_size=256 * 1024)
    await producer.start()
    try:
        pad = b"x" * max(0, value_bytes - 12)
        futures = [await producer.send(topic, b"%012d" % i + pad, key=b"%d" % i)
                   for i in range(records)]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()
    return time.monotonic() - started


class Clock:
    """Start, steady-state mark (5 % done) and end times of one run."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.start = time.monotonic()
        self.steady: float | None = None
        self.end = 0.0

    def progress(self, done: int) -> None:
        """Note ``done`` records finished; marks the steady-state start at 5 %."""
        if self.steady is None and done >= self.total // 20:
            self.steady = time.monotonic()
            self.steady_done = done

    def rates(self) -> tuple[float, float]:
        """(steady-state records/s, seconds before steady state)."""
        assert self.steady is not None
        rate = (self.total - self.steady_done) / max(self.end - self.steady, 1e-9)
        return rate, self.steady - self.start


async def bare_relay(bootstrap: str, source: str, sink: str, records: int) -> Clock:
    """Consume a batch, produce it (futures gathered per batch), commit: the upper bound."""
    consumer = AIOKafkaConsumer(source, bootstrap_servers=bootstrap, group_id="bench-bare",
                                enable_auto_commit=False, **FAST_GROUP)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    await consumer.start()
    await producer.start()
    clock = Clock(records)
    done = 0
    try:
        while done < records:
            batches = await consumer.getmany(timeout_ms=200, max_records=2000)
            futures = [await producer.send(sink, r.value, key=r.key)
                       for batch in batches.values() for r in batch]
            await asyncio.gather(*futures)
            if futures:
                await consumer.commit()
                done += len(futures)
                clock.progress(done)
        clock.end = time.monotonic()
    finally:
        await consumer.stop()
        await producer.stop()
    return clock


async def engine_relay(bootstrap: str, source: str, sink: str, records: int,
                       max_pending: int) -> Clock:
    """KafkaSpout → Forward → KafkaBolt; done when the spout acked every record."""
    builder = TopologyBuilder()
    builder.set_spout("kafka", KafkaSpout(source, bootstrap, "bench-engine",
                                          value_format="bytes", **FAST_GROUP))
    builder.set_bolt("forward", Forward()).shuffle_grouping("kafka")
    builder.set_bolt("out", KafkaBolt(sink, bootstrap, key_field="key", value_field="value",
                                      value_format="bytes")).shuffle_grouping("forward")
    conf = Config()
    conf.set_max_spout_pending(max_pending)
    async with LocalCluster() as cluster:
        clock = Clock(records)
        await cluster.submit_topology("bench-kafka", conf, builder.create_topology())
        while True:
            acked = cluster.stats("bench-kafka")["components"]["kafka"]["acked"]
            clock.progress(acked)
            if acked >= records:
                clock.end = time.monotonic()
                break
            await asyncio.sleep(0.01)
        stats = cluster.stats("bench-kafka")["components"]
        await cluster.kill_topology("bench-kafka", wait_secs=5)
    if stats["kafka"]["failed"]:
        print(f"warning: {stats['kafka']['failed']} tuples failed (replayed)")
    return clock


async def main(args: argparse.Namespace) -> None:
    """Fill the input, run the bare loop, then the engine, and print both rates."""
    broker = None
    bootstrap = args.bootstrap_servers
    if bootstrap is None:
        broker = TestingBroker().start()
        bootstrap = broker.bootstrap
    try:
        suffix = str(time.time_ns())
        source, bare_out, engine_out = (f"bench-{n}-{suffix}" for n in ("in", "bare", "engine"))
        if broker is not None:
            for topic in (source, bare_out, engine_out):
                await broker.create_topic(topic, args.partitions)
        secs = await fill(bootstrap, source, args.records, args.value_bytes)
        print(f"input: {args.records:,} records of {args.value_bytes} B in {args.partitions} "
              f"partitions, written in {secs:.1f}s")
        bare = await bare_relay(bootstrap, source, bare_out, args.records)
        engine = await engine_relay(bootstrap, source, engine_out, args.records,
                                    args.max_spout_pending)
    finally:
        if broker is not None:
            broker.stop()
    bare_rate, bare_warm = bare.rates()
    engine_rate, engine_warm = engine.rates()
    print(f"bare aiokafka consume→produce loop : {bare_rate:>10,.0f} records/s "
          f"(start-up {bare_warm:.1f}s)")
    print(f"KafkaSpout → bolt → KafkaBolt      : {engine_rate:>10,.0f} records/s "
          f"(start-up {engine_warm:.1f}s, max.spout.pending {args.max_spout_pending})")
    print(f"ratio engine / bare                : {engine_rate / bare_rate:.2f}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--max-spout-pending", type=int, default=5_000)
    parser.add_argument("--bootstrap-servers", default=None,
                        help="an existing broker (topics must auto-create); default: Tansu")
    return parser


if __name__ == "__main__":
    arguments = _parser().parse_args()
    try:
        import uvloop
    except ImportError:
        asyncio.run(main(arguments))
    else:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main(arguments))
