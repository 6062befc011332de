"""The broker fixture itself: topics with partitions, produce and consume round trip."""

from __future__ import annotations

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition


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
