"""Transactional Kafka spouts: batch metadata is an offset range per partition.

Storm's ``TransactionalKafkaSpout`` and ``OpaqueTransactionalKafkaSpout`` for
``engine.transactional``. Partition ``i`` of the topic is partition ``i`` of the spout. A
batch's metadata is ``{"offset": first, "next": end}``: the records ``first <= offset <
end`` of the partition; each new batch starts at the previous batch's ``next`` (the
earliest offset for the first one) and holds what the broker has now, up to
``max_batch_size`` records per partition. Only the fetch's own positions are used, never
"latest" offsets (some brokers answer ListOffsets "latest" with the base offset of the last
batch, not the end).

- ``TransactionalKafkaSpout`` replays a transaction by reading exactly its range again, so
  a committer can use the "value + txid" rule. If those records are gone (retention), the
  batch cannot be replayed and keeps failing.
- ``OpaqueTransactionalKafkaSpout`` replays a transaction by reading again from where the
  previous transaction ended, taking what is there now: the batch may differ, no record is
  skipped or counted twice with the "value + previous value + txid" rule (``OpaqueValue``).

A record whose bytes do not decode for ``value_format`` is left out of the batch (always,
so a replay leaves it out too) and reported as an error of the emitter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from connectors.kafka import client_options
from connectors.kafka.client_start import started
from connectors.kafka.codec import DecodeError, Decoder, check_value_format
from engine.clock import now
from engine.errors import FailedException
from engine.transactional.spout import (
    BatchCollector,
    OpaquePartitionedTransactionalSpout,
    PartitionedTransactionalSpout,
)

if TYPE_CHECKING:
    from engine.context import TopologyContext
    from engine.topology import OutputFieldsDeclarer
    from engine.transactional.attempt import TransactionAttempt

__all__ = ["OpaqueTransactionalKafkaSpout", "TransactionalKafkaSpout"]

_REPLAY_DEADLINE_SECS = 10.0
_METADATA_REFRESH_SECS = 5.0


class _Options:
    """What both spouts are configured with."""

    def __init__(self, topic: str, bootstrap_servers: str, fields: Sequence[str],
                 value_format: str, max_batch_size: int, poll_timeout_ms: int,
                 consumer_options: dict[str, Any]) -> None:
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        self.topic = topic
        self.bootstrap_servers = bootstrap_servers
        self.fields = list(fields)
        self.value_format = check_value_format(value_format)
        Decoder(self.fields, value_format)  # validates the field names now, not in a task
        self.max_batch_size = max_batch_size
        self.poll_timeout_ms = poll_timeout_ms
        self.consumer_options = consumer_options

    def consumer(self) -> AIOKafkaConsumer:
        """A new consumer without auto-commit; ``consumer_options`` (SASL/SSL included, see
        ``client_options``) override defaults."""
        options = client_options.build(
            self.consumer_options, {"enable_auto_commit": False, "auto_offset_reset": "earliest"},
            "transactional Kafka spout")
        return AIOKafkaConsumer(bootstrap_servers=self.bootstrap_servers, **options)


class _PartitionCount:
    """The topic's partition count from cluster metadata, refreshed at most every few secs."""

    def __init__(self, options: _Options) -> None:
        self._options = options
        self._consumer: AIOKafkaConsumer | None = None
        self._count = 0
        self._checked = 0.0

    async def get(self) -> int:
        """The number of partitions; ``FailedException`` while the topic has none."""
        if self._count and now() - self._checked < _METADATA_REFRESH_SECS:
            return self._count
        if self._consumer is None:
            self._consumer = await started(self._options.consumer())
        await self._consumer.topics()  # refreshes cluster metadata
        partitions = self._consumer.partitions_for_topic(self._options.topic)
        if not partitions:
            raise FailedException(f"topic {self._options.topic!r} has no partitions (yet)")
        self._count, self._checked = len(partitions), now()
        return self._count

    async def close(self) -> None:
        """Stop the metadata consumer."""
        if self._consumer is not None:
            await self._consumer.stop()


class _Coordinator:
    """Always ready; counts the topic's partitions from cluster metadata."""

    def __init__(self, options: _Options) -> None:
        self._partitions = _PartitionCount(options)

    async def num_partitions(self) -> int:
        return await self._partitions.get()

    def is_ready(self) -> bool:
        return True

    async def close(self) -> None:
        await self._partitions.close()


class _Reader:
    """One emitter task's consumer, manually assigned the partitions it reads."""

    def __init__(self, options: _Options) -> None:
        self._options = options
        self._decode = Decoder(options.fields, options.value_format)
        self._consumer: AIOKafkaConsumer | None = None
        self._assigned: set[int] = set()
        self._position: dict[int, int] = {}
        self._partitions = _PartitionCount(options)

    async def _ready(self, partition: int) -> tuple[AIOKafkaConsumer, TopicPartition]:
        if self._consumer is None:
            self._consumer = await started(self._options.consumer())
        tp = TopicPartition(self._options.topic, partition)
        if partition not in self._assigned:
            self._assigned.add(partition)
            self._consumer.assign([TopicPartition(self._options.topic, p)
                                   for p in sorted(self._assigned)])
            self._position.clear()
        return self._consumer, tp

    async def num_partitions(self) -> int:
        return await self._partitions.get()

    async def first_offset(self, partition: int) -> int:
        consumer, tp = await self._ready(partition)
        return int((await consumer.beginning_offsets([tp]))[tp])

    async def _fetch(self, partition: int, start: int, limit: int,
                     timeout_ms: int) -> list[Any]:
        """Up to ``limit`` records from ``start`` on, as soon as any are there."""
        consumer, tp = await self._ready(partition)
        if self._position.get(partition) != start:
            consumer.seek(tp, start)
        got = await consumer.getmany(tp, timeout_ms=timeout_ms, max_records=limit)
        records = [r for r in got.get(tp, ()) if r.offset >= start]
        if records:
            self._position[partition] = records[-1].offset + 1
        else:
            self._position.pop(partition, None)  # nothing read: seek again next time
        return records

    async def read_new(self, partition: int, start: int) -> tuple[list[Any], int]:
        """What the partition holds from ``start`` on now, up to the batch size; and the
        offset after the last record read."""
        records = await self._fetch(partition, start, self._options.max_batch_size,
                                    self._options.poll_timeout_ms)
        return records, (records[-1].offset + 1 if records else start)

    async def read_range(self, partition: int, start: int, end: int) -> list[Any]:
        """Exactly the records ``start <= offset < end``; FailedException if unreadable."""
        records: list[Any] = []
        position, deadline = start, now() + _REPLAY_DEADLINE_SECS
        while position < end:
            if now() > deadline:
                raise FailedException(f"partition {partition}: offsets {position}..{end} "
                                      f"could not be read again")
            got = await self._fetch(partition, position, end - position,
                                    self._options.poll_timeout_ms)
            got = [r for r in got if r.offset < end]
            if got:
                records.extend(got)
                position = got[-1].offset + 1
            else:
                await asyncio.sleep(0)
        return records

    async def emit_following(self, attempt: TransactionAttempt, collector: BatchCollector,
                             partition: int, last_meta: Any) -> dict[str, int]:
        """Emit the batch after the one ``last_meta`` describes (the first: from the start)."""
        start = (await self.first_offset(partition) if last_meta is None
                 else int(last_meta["next"]))
        records, end = await self.read_new(partition, start)
        self.emit(attempt, collector, records)
        return {"offset": start, "next": end}

    def emit(self, attempt: TransactionAttempt, collector: BatchCollector,
             records: list[Any]) -> None:
        for record in records:
            try:
                values = self._decode(record)
            except DecodeError as exc:
                collector.report_error(exc)
                continue
            collector.emit([attempt, *values])

    async def close(self) -> None:
        try:
            await self._partitions.close()
        finally:
            if self._consumer is not None:
                await self._consumer.stop()


class _PartitionedEmitter(_Reader):
    emit_partition_batch_new = _Reader.emit_following

    async def emit_partition_batch(self, attempt: TransactionAttempt,
                                   collector: BatchCollector, partition: int,
                                   meta: Any) -> None:
        records = await self.read_range(partition, int(meta["offset"]), int(meta["next"]))
        self.emit(attempt, collector, records)


class _OpaqueEmitter(_Reader):
    # Opaque: a replay also continues from the previous transaction's end.
    emit_partition_batch = _Reader.emit_following


class _KafkaSpoutBase:
    def __init__(self, topic: str, bootstrap_servers: str, *,
                 fields: Sequence[str] = ("key", "value"), value_format: str = "str",
                 max_batch_size: int = 1000, poll_timeout_ms: int = 100,
                 tx_field: str = "tx", **consumer_options: Any) -> None:
        self.options = _Options(topic, bootstrap_servers, fields, value_format,
                                max_batch_size, poll_timeout_ms, consumer_options)
        self.tx_field = tx_field

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare([self.tx_field, *self.options.fields])


class TransactionalKafkaSpout(_KafkaSpoutBase, PartitionedTransactionalSpout):
    """Batches of one topic's records; a replayed transaction re-reads exactly its offsets.

    ``fields`` are taken from each record (``topic``, ``partition``, ``offset``, ``key``,
    ``value``, ``timestamp``, ``headers``) after the ``TransactionAttempt``; extra keyword
    arguments go to ``AIOKafkaConsumer``.
    """

    def get_coordinator(self, conf: dict[str, Any], context: TopologyContext) -> Any:
        return _Coordinator(self.options)

    def get_emitter(self, conf: dict[str, Any], context: TopologyContext) -> Any:
        return _PartitionedEmitter(self.options)


class OpaqueTransactionalKafkaSpout(_KafkaSpoutBase, OpaquePartitionedTransactionalSpout):
    """Batches of one topic's records; a replay continues from the previous transaction and
    may carry different records. Same arguments as ``TransactionalKafkaSpout``."""

    def get_coordinator(self, conf: dict[str, Any], context: TopologyContext) -> Any:
        return _Coordinator(self.options)

    def get_emitter(self, conf: dict[str, Any], context: TopologyContext) -> Any:
        return _OpaqueEmitter(self.options)
