"""The failed-topic writer against the test broker: a record refused as too large is cut
harder and written; one that cannot be written at all is abandoned once, never retried."""

from __future__ import annotations

import asyncio
import logging

import orjson
from aiokafka import AIOKafkaProducer

from connectors.kafka.failed import FailedRecord
from connectors.kafka.failed_writer import FailedWriter
from connectors.kafka.outage import Outage
from connectors.kafka.throttle import LogThrottle
from tests.connectors.kafka.helpers import read_all, unique

log = logging.getLogger("tests.failed_writer")


async def write(bootstrap: str, topic: str, record: FailedRecord, max_bytes: int,
                max_request_size: int) -> tuple[list[str], FailedWriter, bool]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all",
                                max_request_size=max_request_size)
    await producer.start()
    unwritable: list[str] = []
    written = asyncio.Event()
    writer = FailedWriter(producer, topic, max_bytes=max_bytes,
                          on_unwritable=unwritable.append, outage=Outage("writer", log),
                          throttle=LogThrottle(60.0), retry_delay=0.05)
    task = asyncio.create_task(writer.run())
    try:
        writer.submit(record, written.set, lambda: True)
        idle = await writer.wait_idle(10.0)
    finally:
        task.cancel()
        await producer.stop()
    return unwritable, writer, idle and written.is_set()


def big(n: int) -> FailedRecord:
    return FailedRecord.now("orders", 0, 9, b"key", b"v" * n, 4, "ValueError: boom",
                            "top", "kafka")


async def test_a_record_the_producer_refuses_is_cut_to_fit_and_written(kafka_broker) -> None:
    topic = unique("failed")
    await kafka_broker.create_topic(topic, 1)
    # The writer's own budget is 60 KB, the producer takes only 20 KB: cut again, harder.
    unwritable, writer, written = await write(kafka_broker.bootstrap, topic, big(100_000),
                                              60_000, 20_000)
    assert (unwritable, written, writer.truncated, writer.retries) == ([], True, 1, 0)
    [rec] = await read_all(kafka_broker.bootstrap, topic)
    obj = orjson.loads(rec.value)
    assert len(rec.value) <= 20_000 and obj["value_truncated"] is True
    assert obj["value_size"] == 100_000


async def test_a_record_that_cannot_be_written_is_abandoned_once(kafka_broker) -> None:
    topic = unique("failed")
    await kafka_broker.create_topic(topic, 1)
    unwritable, writer, written = await write(kafka_broker.bootstrap, topic, big(100_000),
                                              4096, 1000)
    assert written is False and writer.retries == 0 and writer.outstanding == 0
    [why] = unwritable
    assert why.startswith(f"failed topic {topic!r} cannot take record ('orders', 0, 9): "
                          "MessageSizeTooLargeError")
    assert await read_all(kafka_broker.bootstrap, topic) == []
