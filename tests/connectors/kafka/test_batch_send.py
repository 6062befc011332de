"""``BatchSender``: per-partition batches, one delivery callback per batch, Kafka's keying."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.errors import MessageSizeTooLargeError
from aiokafka.structs import RecordMetadata

from connectors.kafka.batch_send import BatchSender, DeliveryMismatch, checked
from tests.connectors.kafka.helpers import read_all, unique


async def test_keyed_records_land_where_the_producer_would_put_them_in_order(
        kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    ours, theirs = unique("ours"), unique("theirs")
    for topic in (ours, theirs):
        await kafka_broker.create_topic(topic, 5)
    records = [(f"key-{i % 37}".encode(), f"{i}".encode()) for i in range(3000)]
    delivered: list[tuple[list[Any], bool]] = []
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all",
                                max_batch_size=2048)  # several batches per partition
    await producer.start()
    try:
        sender = BatchSender(producer, ours,
                             lambda items, f: delivered.append((items, f.exception() is None)),
                             max_queued=4)
        await sender.start()
        for n, (key, value) in enumerate(records):
            await sender.add(key, value, n)
        await sender.close()
        await producer.flush()
        for key, value in records:
            await producer.send(theirs, value, key=key)
        await producer.flush()
    finally:
        await producer.stop()
    # Every item confirmed exactly once, in fewer callbacks than records.
    items = sorted(i for batch, ok in delivered for i in batch if ok)
    assert items == list(range(len(records)))
    assert len(delivered) < len(records) // 10
    placed = {(r.partition, r.key, r.value) for r in await read_all(bootstrap, ours)}
    expected = {(r.partition, r.key, r.value) for r in await read_all(bootstrap, theirs)}
    assert placed == expected
    by_key: dict[bytes, list[int]] = {}
    for r in sorted(await read_all(bootstrap, ours), key=lambda r: (r.partition, r.offset)):
        by_key.setdefault(r.key, []).append(int(r.value))
    assert all(values == sorted(values) for values in by_key.values())


async def test_unkeyed_records_stick_to_a_partition_per_cycle_and_failures_reach_items(
        kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    topic = unique("sticky")
    await kafka_broker.create_topic(topic, 3)
    outcomes: list[tuple[list[Any], BaseException | None]] = []
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    sender = BatchSender(producer, topic, lambda items, f: outcomes.append((items, f.exception())),
                         linger=0.05, max_request_size=1000)
    await sender.start()
    try:
        for n in range(10):
            await sender.add(None, b"v%d" % n, n)
        with pytest.raises(MessageSizeTooLargeError):
            await sender.add(None, b"x" * 2000, "big")
        await sender.flush()
        await producer.flush()
        assert [items for items, exc in outcomes if exc is None] == [list(range(10))]
        # A producer that is gone fails the batch's items through on_done, never silently.
        await producer.stop()
        await sender.add(b"k", b"late", "late")
        await sender.flush()
        await asyncio.sleep(0)
        assert outcomes[-1][0] == ["late"] and outcomes[-1][1] is not None
    finally:
        await sender.close()
        await producer.stop()
    assert len({r.partition for r in await read_all(bootstrap, topic)}) == 1


def _confirmed(topic: str, partition: int, offset: Any) -> asyncio.Future[Any]:
    future = asyncio.get_running_loop().create_future()
    future.set_result(RecordMetadata(topic, partition, TopicPartition(topic, partition),
                                     offset, -1, 0, 0))
    return future


async def test_a_confirmation_counts_only_for_where_the_batch_was_sent() -> None:
    ok = _confirmed("out", 2, 17)
    assert checked(ok, "out", 2) is ok
    noack = asyncio.get_running_loop().create_future()
    noack.set_result(None)  # acks=0: nothing to check
    assert checked(noack, "out", 2) is noack
    cases = {
        ("out", 1, 17): "batch sent to out[2] was confirmed for out[1]",
        ("other", 2, 17): "batch sent to out[2] was confirmed for other[2]",
        ("out", 2, -1): "batch sent to out[2] was confirmed without an offset (-1)",
        ("out", 2, None): "batch sent to out[2] was confirmed without an offset (None)",
    }
    for (topic, partition, offset), why in cases.items():
        bad = checked(_confirmed(topic, partition, offset), "out", 2)
        exc = bad.exception()
        assert isinstance(exc, DeliveryMismatch) and exc.retriable
        assert str(exc).endswith(why), str(exc)
    refused = asyncio.get_running_loop().create_future()
    refused.set_exception(MessageSizeTooLargeError())
    assert checked(refused, "out", 2) is refused


async def test_a_packing_sender_makes_one_record_per_partition_and_cycle(kafka_broker) -> None:
    """Values for one partition share records (past ``pack_bytes`` a new one), in the order
    added; every item is acked with its record's batch; a value too large is refused."""
    bootstrap = kafka_broker.bootstrap
    topic = unique("packed")
    await kafka_broker.create_topic(topic, 3)
    delivered: list[tuple[list[Any], bool]] = []
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        sender = BatchSender(producer, topic,
                             lambda items, f: delivered.append((items, f.exception() is None)),
                             linger=0.05, pack=b"|".join, pack_bytes=200,
                             max_request_size=5000)
        await sender.start()
        for n in range(300):
            sender.add_row(n % 3, b"k%d" % (n % 3), b"v%03d" % n, n)
        await sender.add(b"key", b"w", "keyed")  # the partitioner's choice, packed too
        with pytest.raises(MessageSizeTooLargeError):
            sender.add_row(0, b"k0", b"x" * 6000, "big")
        assert sender.wake()
        await sender.close()
        await producer.flush()
    finally:
        await producer.stop()
    assert sorted(i for batch, ok in delivered if ok for i in batch if i != "keyed") == \
        list(range(300))
    records = await read_all(bootstrap, topic)
    # A record's key is its first value's: a resend by key finds the partition again.
    assert {r.key for r in records if r.partition != sender.partition_of(b"key")} <= {
        b"k0", b"k1", b"k2"}
    assert all(r.key == b"k%d" % r.partition for r in records if b"w" not in r.value)
    rows = {p: [v for r in records if r.partition == p for v in r.value.split(b"|")]
            for p in range(3)}
    keyed = sender.partition_of(b"key")
    for p in range(3):
        assert [v for v in rows[p] if v != b"w"] == [b"v%03d" % n for n in range(p, 300, 3)]
    assert b"w" in rows[keyed]
    # 100 values of 4 bytes a partition, cut past 200 bytes: 2 or 3 records each.
    assert 6 <= len(records) <= 9
    assert all(len(r.value.split(b"|")) <= 50 for r in records)


async def test_records_go_straight_into_the_batch_unless_the_producer_serializes(
        kafka_broker: Any) -> None:
    """Without serializers a record is appended to the batch's record builder directly;
    a producer with a value serializer keeps aiokafka's own append, which applies it."""
    topic = unique("direct")
    await kafka_broker.create_topic(topic, 1)
    got: dict[str, list[Any]] = {}
    for name, options in (("plain", {}), ("serialized", {"value_serializer": str.encode})):
        producer = AIOKafkaProducer(bootstrap_servers=kafka_broker.bootstrap,
                                    max_batch_size=1024, **options)
        await producer.start()
        try:
            sender = BatchSender(producer, topic, lambda items, f: None)
            assert sender._direct is (name == "plain")
            await sender.start()
            for i in range(40):  # several full batches
                value = f"{name}-{i:03d}-" + "x" * 60
                await sender.add(None, value if name == "serialized" else value.encode(), i)
            await sender.close()
            await producer.flush()
        finally:
            await producer.stop()
    for rec in await read_all(kafka_broker.bootstrap, topic):
        got.setdefault(rec.value.split(b"-")[0].decode(), []).append(rec.value)
    for name in ("plain", "serialized"):
        assert [v[len(name) + 1:len(name) + 4] for v in got[name]] == [
            b"%03d" % i for i in range(40)]
