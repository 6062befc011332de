"""Test helpers: unique names, failed records, producing to and reading from the broker."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterable

import orjson
import pyarrow as pa
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.structs import ConsumerRecord

from connectors.kafka.failed import FailedRecord
from connectors.spark.kafka_io import RECORD_SCHEMA
from tests.connectors.kafka.helpers import reading_consumer, seek_to_start

_names = itertools.count()


def unique(prefix: str) -> str:
    """A topic or group name no other test uses on the shared broker."""
    return f"{prefix}-{next(_names)}-{uuid.uuid4().hex[:6]}"


def failed(topic: str, offset: int, *, reason: str = "boom", attempts: int = 4,
           partition: int = 0, failed_at: int = 1_700_000_000_000) -> FailedRecord:
    """A failed record for ``topic[partition]@offset``: key ``k<offset>``, value ``v<offset>``."""
    return FailedRecord(topic, partition, offset, f"k{offset}".encode(), f"v{offset}".encode(),
                        attempts, reason, failed_at, "topology", "bolt")


def failed_with(**changes: object) -> bytes:
    """The payload of ``failed("t", 1)`` with ``changes`` made to its JSON fields."""
    obj = orjson.loads(failed("t", 1).to_json())
    obj.update(changes)
    return orjson.dumps(obj)


def payload_batch(*payloads: bytes | None) -> pa.RecordBatch:
    """The Kafka source's rows for ``payloads``, read from ``failed[1]`` at offsets 10, 11..."""
    return pa.RecordBatch.from_pylist([
        {"key": None, "value": payload, "topic": "failed", "partition": 1, "offset": 10 + i,
         "timestamp_ms": 0, "headers": []} for i, payload in enumerate(payloads)],
        schema=RECORD_SCHEMA)


async def produce(bootstrap: str, topic: str, payloads: Iterable[bytes],
                  partition: int | None = None) -> None:
    """Write each payload as one record, in order, one produce request each."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for payload in payloads:
            await producer.send_and_wait(topic, payload, partition=partition)
    finally:
        await producer.stop()


async def read_all(bootstrap: str, topic: str, partitions: int = 1,
                   idle_s: float = 1.5) -> list[ConsumerRecord]:
    """Every record of ``topic`` (all partitions), read until ``idle_s`` passes with none."""
    consumer = reading_consumer(bootstrap)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        seek_to_start(consumer, tps)  # not the broker's "earliest": see that helper
        records: list[ConsumerRecord] = []
        while True:
            batch = await consumer.getmany(timeout_ms=int(idle_s * 1000))
            if not batch:
                return records
            for recs in batch.values():
                records.extend(recs)
    finally:
        await consumer.stop()
