"""Blocking Kafka reads and writes for code that runs inside a Spark task.

Spark calls a data source's ``read`` and ``write`` synchronously in a Python worker. Each
call here owns a private ``asyncio.Runner`` for its aiokafka client and closes it before
returning (or when the generator is closed), so nothing outlives the task.

Records travel as Arrow ``RecordBatch``es with ``RECORD_SCHEMA``: one Arrow conversion per
fetch instead of one Python tuple per record. A reader that turns the records into columns
of its own (the failed-topic parser) takes the fetched records as they come
(``fetch_range``) and skips that conversion.

Python's cycle collector is paused while records are fetched, while a batch is converted,
and while a write runs: the per-record objects (fetched records, header lists) hold no
cycles, yet each collection would walk every one of them, which cost a write about half its
time. A read turns it back on before each ``yield``: it is a process-wide switch, and a
generator's consumer runs code of its own between batches.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition

from connectors.kafka import client_options
from connectors.kafka.batch_send import BatchSender
from connectors.kafka.client_start import started
from connectors.spark.offsets import OffsetRange

__all__ = ["RECORD_DDL", "RECORD_SCHEMA", "Pace", "Rows", "batch_rows", "fetch_range",
           "gc_paused", "read_range", "write_batches", "write_rows"]

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


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cycle collector for the block, a process-wide switch: keep the block
    free of ``yield`` (nested blocks are fine)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class StalledRead(TimeoutError):
    """A partition returned no data for too long while offsets below the bound remained."""


def _to_batch(records: list[Any]) -> pa.RecordBatch:
    headers = [r.headers for r in records]
    if any(headers):
        header_column = pa.array([[{"key": k, "value": v} for k, v in h] for h in headers],
                                 _HEADERS)
    else:  # the norm: no headers, so no Python object per record for them
        header_column = pa.ListArray.from_arrays(
            pa.array([0] * (len(records) + 1), pa.int32()),
            pa.array([], _HEADERS.value_type))
    columns = [
        pa.array([r.key for r in records], pa.binary()),
        pa.array([r.value for r in records], pa.binary()),
        pa.array([r.topic for r in records], pa.string()),
        pa.array([r.partition for r in records], pa.int32()),
        pa.array([r.offset for r in records], pa.int64()),
        pa.array([r.timestamp for r in records], pa.int64()),
        header_column,
    ]
    return pa.RecordBatch.from_arrays(columns, schema=RECORD_SCHEMA)


def read_range(bootstrap: str, rng: OffsetRange, *, stall_timeout_s: float = 60.0,
               max_records: int = 10_000,
               client: Mapping[str, Any] | None = None) -> Iterator[pa.RecordBatch]:
    """Yield every record of ``rng`` exactly once, in offset order, as Arrow batches.

    As ``fetch_range``, one batch per fetch.
    """
    for records in fetch_range(bootstrap, rng, stall_timeout_s=stall_timeout_s,
                               max_records=max_records, client=client):
        with gc_paused():
            batch = _to_batch(records)
        yield batch


def fetch_range(bootstrap: str, rng: OffsetRange, *, stall_timeout_s: float = 60.0,
                max_records: int = 10_000,
                client: Mapping[str, Any] | None = None) -> Iterator[list[ConsumerRecord]]:
    """Yield every record of ``rng`` exactly once, in offset order, as non-empty lists of
    aiokafka ``ConsumerRecord``s of at most ``max_records``.

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
    await started(consumer)
    consumer.assign([tp])
    consumer.seek(tp, start)
    return consumer


def _fetch_until(runner: asyncio.Runner, consumer: AIOKafkaConsumer, tp: TopicPartition,
                 rng: OffsetRange, stall_timeout_s: float,
                 max_records: int) -> Iterator[list[ConsumerRecord]]:
    loop = runner.get_loop()
    last_progress = loop.time()
    position = rng.start
    while position < rng.end:
        with gc_paused():
            records = runner.run(consumer.getmany(tp, timeout_ms=_FETCH_TIMEOUT_MS,
                                                  max_records=max_records)).get(tp, [])
            if records and records[-1].offset >= rng.end:
                records = [r for r in records if r.offset < rng.end]
        if records:
            yield records
        del records
        new_position = runner.run(consumer.position(tp))
        if new_position > position:
            position, last_progress = new_position, loop.time()
        elif loop.time() - last_progress > stall_timeout_s:
            raise StalledRead(f"{rng.topic}[{rng.partition}] stuck at offset {position} "
                              f"for {stall_timeout_s:g} s; range ends at {rng.end}")


@dataclass(frozen=True, slots=True)
class Rows:
    """Records to produce, column by column (equal lengths): a None ``topic`` falls back to
    the writer's default, a None ``partition`` leaves it to the partitioner."""

    values: list[bytes | None]
    keys: list[bytes | None]
    topics: list[str | None]
    partitions: list[int | None]
    headers: list[list[tuple[str, bytes]] | None]


def batch_rows(batch: pa.RecordBatch) -> Rows:
    """The records of ``batch``: ``value`` and optionally ``key``, ``topic``, ``partition``
    and ``headers`` (a list of key/value structs; a null header value is empty)."""
    headers = [[(h["key"], h["value"] or b"") for h in hdrs] if hdrs else None
               for hdrs in _column(batch, "headers")]
    return Rows(batch.column(batch.schema.get_field_index("value")).to_pylist(),
                _column(batch, "key"), _column(batch, "topic"), _column(batch, "partition"),
                headers)


def write_batches(bootstrap: str, batches: Iterable[pa.RecordBatch], *,
                  default_topic: str | None = None,
                  producer_options: Mapping[str, Any] | None = None,
                  max_records_per_sec: float | None = None) -> int:
    """Produce one record per row (see ``batch_rows``) as ``write_rows`` does."""
    return write_rows(bootstrap, map(batch_rows, batches), default_topic=default_topic,
                      producer_options=producer_options,
                      max_records_per_sec=max_records_per_sec)


def write_rows(bootstrap: str, rows: Iterable[Rows], *, default_topic: str | None = None,
               producer_options: Mapping[str, Any] | None = None,
               max_records_per_sec: float | None = None) -> int:
    """Produce every record of ``rows`` and return the count once the broker confirmed them
    all; no client is started while there is nothing to produce.

    Records go to the producer in per-partition batches, each confirmed as a whole. Raises
    the first failure once every batch was answered; records confirmed by then stay
    written (at-least-once). With ``max_records_per_sec``, records are handed over paced so
    that this call never goes faster.
    """
    pending = (r for r in rows if r.values)
    first = next(pending, None)
    if first is None:
        return 0
    with gc_paused(), asyncio.Runner() as runner:
        producer = runner.run(_started_producer(bootstrap, producer_options or {}))
        try:
            writer = _Writer(producer, default_topic, Pace(max_records_per_sec))
            try:
                runner.run(writer.write(first))
                for more in pending:
                    runner.run(writer.write(more))
                return runner.run(writer.finish())
            finally:
                runner.run(writer.close())
        finally:  # even when closing the senders raised: the producer is never left open
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
    await started(producer)
    return producer


def _column(batch: pa.RecordBatch, name: str) -> list[Any]:
    index = batch.schema.get_field_index(name)
    return [None] * batch.num_rows if index < 0 else batch.column(index).to_pylist()


class _Writer:
    """Rows to records through one ``BatchSender`` per topic; counts confirmations."""

    def __init__(self, producer: AIOKafkaProducer, default_topic: str | None,
                 pace: Pace) -> None:
        self._producer = producer
        self._pace = pace
        self._default_topic = default_topic
        self._senders: dict[str, BatchSender] = {}
        self._outstanding = 0
        self._confirmed = 0
        self._error: BaseException | None = None
        self._answered = asyncio.Event()

    def _done(self, items: list[Any], future: asyncio.Future[Any]) -> None:
        exc = future.exception() if not future.cancelled() else asyncio.CancelledError()
        if exc is None:
            self._confirmed += len(items)
        elif self._error is None:
            self._error = exc
        self._outstanding -= len(items)
        if self._outstanding == 0:
            self._answered.set()

    async def _sender(self, topic: str) -> BatchSender:
        sender = self._senders.get(topic)
        if sender is None:
            sender = self._senders[topic] = BatchSender(self._producer, topic, self._done,
                                                        linger=0)
            await sender.start()
        return sender

    async def write(self, rows: Rows) -> None:
        """Hand every record of ``rows`` to the producer."""
        paced = self._pace.rate is not None
        for value, key, topic, partition, hdrs in zip(rows.values, rows.keys, rows.topics,
                                                      rows.partitions, rows.headers,
                                                      strict=True):
            topic = topic or self._default_topic
            if topic is None:
                raise ValueError("a row has no 'topic' and the sink has no default "
                                 "'topic' option")
            sender = self._senders.get(topic) or await self._sender(topic)
            if paced:
                await self._pace.wait()
            self._outstanding += 1
            self._answered.clear()
            if not sender.add_nowait(key, value, None, headers=hdrs, partition=partition):
                await sender.room()

    async def finish(self) -> int:
        """Wait until the broker answered every record; the count, or the first error."""
        for sender in self._senders.values():
            await sender.flush()
        if self._outstanding:
            await self._answered.wait()
        if self._error is not None:
            raise self._error
        return self._confirmed

    async def close(self) -> None:
        """Stop the senders (records not yet handed over are dropped: the task failed)."""
        for sender in self._senders.values():
            await sender.close()
