"""The broker fixture itself: topics with partitions, produce and consume round trip."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from tests.connectors.kafka.helpers import first_gap, produce, read_all, unique


async def test_topic_round_trip(kafka_broker) -> None:
    await kafka_broker.create_topic("fixture-round-trip", 3)
    producer = AIOKafkaProducer(bootstrap_servers=kafka_broker.bootstrap)
    await producer.start()
    try:
        for partition in range(3):
            await producer.send_and_wait("fixture-round-trip", b"v", partition=partition)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=kafka_broker.bootstrap)
    await consumer.start()
    try:
        tps = [TopicPartition("fixture-round-trip", p) for p in range(3)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        seen: set[int] = set()
        for _ in range(20):
            got = await consumer.getmany(*tps, timeout_ms=500)
            seen.update(tp.partition for tp, records in got.items() if records)
            if len(seen) == 3:
                break
        assert seen == {0, 1, 2}
    finally:
        await consumer.stop()


def test_a_gap_in_what_was_read_is_found() -> None:
    """``read_all`` reads a partition again from its first gap (a batch the broker had not
    stored yet when its high watermark passed it)."""
    assert first_gap({0: "a", 1: "b", 2: "c"}, 3) is None
    assert first_gap({0: "a", 1: "b", 2: "c", 3: "d"}, 3) is None  # past the end: not a gap
    assert first_gap({0: "a", 3: "d", 4: "e"}, 5) == 1
    assert first_gap({}, 0) is None and first_gap({}, 2) == 0


async def test_read_all_returns_every_record_of_a_topic_being_written(kafka_broker) -> None:
    topic = unique("busy")
    await kafka_broker.create_topic(topic, 2)
    n = 3000
    writing = asyncio.create_task(produce(kafka_broker.bootstrap, topic,
                                          [(b"%d" % (i % 7), b"%d" % i) for i in range(n)]))
    while not writing.done():
        records = await read_all(kafka_broker.bootstrap, topic)
        for partition in (0, 1):
            offsets = [r.offset for r in records if r.partition == partition]
            assert offsets == list(range(len(offsets)))  # no batch skipped
    await writing
    assert len(await read_all(kafka_broker.bootstrap, topic)) == n
