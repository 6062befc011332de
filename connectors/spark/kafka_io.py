"""Blocking Kafka reads and writes for code that runs inside a Spark task.

Spark calls a data source's ``read`` and ``write`` synchronously in a Python worker. Each
call here owns a private ``asyncio.Runner`` for its aiokafka client and closes it before
returning (or when the generator is closed), so nothing outlives the task.

Records travel as Arrow ``RecordBatch``es with ``RECORD_SCHEMA``: one Arrow conversion per
fetch instead of one Python tuple per record.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from connectors.kafka import client_options
from connectors.spark.offsets import OffsetRange

__all__ = ["RECORD_DDL", "RECORD_SCHEMA", "Pace", "read_range", "write_batches"]

_HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))

RECORD_SCHEMA = pa.schema([
    ("key", pa.binary()),
    ("value", pa.binary()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("timestamp_ms", pa.int64()),
    ("headers", _HEADERS),
])
"""Arrow schema of a Kafka record as the source yields it."""

RECORD_DDL = ("key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, "
              "timestamp_ms BIGINT, headers ARRAY<STRUCT<key: STRING, value: BINARY>>")
"""The same schema as a Spark DDL string."""

_FETCH_TIMEOUT_MS = 1000
# aiokafka's 16 KiB default batch holds a dozen typical records; larger batches mean fewer
# produce requests, and 256 KiB stays well under the broker's 1 MB message limit.
_MAX_BATCH_BYTES = 256 * 1024


class StalledRead(TimeoutError):
    """A partition returned no data for too long while offsets below the bound remained."""


def _to_batch(records: list[Any]) -> pa.RecordBatch:
    columns = {
        "key": [r.key for r in records],
        "value": [r.value for r in records],
        "topic": [r.topic for r in records],
        "partition": [r.partition for r in records],
        "offset": [r.offset for r in records],
        "timestamp_ms": [r.timestamp for r in records],
        "headers": [[{"key": k, "value": v} for k, v in r.headers] for r in records],
    }
    return pa.RecordBatch.from_pydict(columns, schema=RECORD_SCHEMA)


def read_range(bootstrap: str, rng: OffsetRange, *, stall_timeout_s: float = 60.0,
               max_records: int = 10_000,
               client: Mapping[str, Any] | None = None) -> Iterator[pa.RecordBatch]:
    """Yield every record of ``rng`` exactly once, in offset order, as Arrow batches.

    Stops at the first position at or past ``rng.end``: offsets the log lacks (compaction,
    transaction markers) are skipped, not waited for. Raises ``StalledRead`` if no progress
    is made for ``stall_timeout_s`` seconds.
    """
    if rng.size == 0:
        return
    tp = TopicPartition(rng.topic, rng.partition)
    with asyncio.Runner() as runner:
        consumer = runner.run(_started_consumer(bootstrap, tp, rng.start, client or {}))
        try:
            yield from _fetch_until(runner, consumer, tp, rng, stall_timeout_s, max_records)
        finally:
            runner.run(consumer.stop())


async def _started_consumer(bootstrap: str, tp: TopicPartition, start: int,
                            client: Mapping[str, Any]) -> AIOKafkaConsumer:
    # aiokafka clients bind to the running loop, so they are created inside it.
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                group_id=None, auto_offset_reset="none",
                                **client_options.build(client, who="replay job reader"))
    await consumer.start()
    consumer.assign([tp])
    consumer.seek(tp, start)
    return consumer


def _fetch_until(runner: asyncio.Runner, consumer: AIOKafkaConsumer, tp: TopicPartition,
                 rng: OffsetRange, stall_timeout_s: float,
                 max_records: int) -> Iterator[pa.RecordBatch]:
    loop = runner.get_loop()
    last_progress = loop.time()
    position = rng.start
    while position < rng.end:
        fetched = runner.run(consumer.getmany(tp, timeout_ms=_FETCH_TIMEOUT_MS,
                                              max_records=max_records)).get(tp, [])
        records = [r for r in fetched if r.offset < rng.end]
        if records:
            yield _to_batch(records)
        new_position = runner.run(consumer.position(tp))
        if new_position > position:
            position, last_progress = new_position, loop.time()
        elif loop.time() - last_progress > stall_timeout_s:
            raise StalledRead(f"{rng.topic}[{rng.partition}] stuck at offset {position} "
                              f"for {stall_timeout_s:g} s; range ends at {rng.end}")


def write_batches(bootstrap: str, batches: Iterable[pa.RecordBatch], *,
                  default_topic: str | None = None,
                  producer_options: Mapping[str, Any] | None = None,
                  max_records_per_sec: float | None = None) -> int:
    """Produce one record per row and return the count once the broker confirmed them all.

    Rows carry ``value`` and optionally ``key``, ``topic`` (falling back to
    ``default_topic``), ``partition`` and ``headers``. Raises on the first failed send;
    records already sent by then stay written (at-least-once). With
    ``max_records_per_sec``, sends are paced so that this call never goes faster.
    """
    with asyncio.Runner() as runner:
        producer = runner.run(_started_producer(bootstrap, producer_options or {}))
        pace = Pace(max_records_per_sec)
        try:
            return sum(runner.run(_send_batch(producer, batch, default_topic, pace))
                       for batch in batches)
        finally:
            runner.run(producer.stop())


class Pace:
    """Spaces sends evenly at ``rate`` per second (no limit when None), on loop time."""

    def __init__(self, rate: float | None) -> None:
        if rate is not None and rate <= 0:
            raise ValueError(f"a rate limit must be > 0 records per second, got {rate}")
        self.rate = rate
        self.sent = 0
        self.start: float | None = None

    async def wait(self) -> None:
        """Return when one more record may be sent."""
        if self.rate is None:
            return
        now = asyncio.get_running_loop().time()
        if self.start is None:
            self.start = now
        delay = self.start + self.sent / self.rate - now
        self.sent += 1
        if delay > 0:
            await asyncio.sleep(delay)


async def _started_producer(bootstrap: str, options: Mapping[str, Any]) -> AIOKafkaProducer:
    defaults = {"acks": "all", "linger_ms": 5, "max_batch_size": _MAX_BATCH_BYTES}
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap,
                                **client_options.build(options, defaults, "replay job writer"))
    await producer.start()
    return producer


async def _send_batch(producer: AIOKafkaProducer, batch: pa.RecordBatch,
                      default_topic: str | None, pace: Pace) -> int:
    rows = batch.to_pylist()
    futures = []
    for row in rows:
        await pace.wait()
        topic = row.get("topic") or default_topic
        if topic is None:
            raise ValueError("a row has no 'topic' and the sink has no default 'topic' option")
        headers = [(h["key"], h["value"] or b"") for h in row.get("headers") or ()]
        futures.append(await producer.send(topic, row["value"], key=row.get("key"),
                                           partition=row.get("partition"), headers=headers))
    await asyncio.gather(*futures)
    return len(rows)
