"""Offset planning and the blocking Kafka I/O that runs inside Spark tasks (no Spark here)."""

from __future__ import annotations

import asyncio
import socket
import time

import pyarrow as pa
import pytest

from connectors.spark.kafka_io import RECORD_SCHEMA, read_range, write_batches
from connectors.spark.offsets import (
    BrokerUnreachable,
    OffsetRange,
    TopicNotFound,
    commit_ranges,
    plan_ranges,
    probe_broker,
)
from tests.connectors.spark.helpers import produce, read_all, unique


def test_split_covers_the_range_exactly() -> None:
    rng = OffsetRange("t", 0, 5, 17)
    assert rng.split(5) == [OffsetRange("t", 0, 5, 10), OffsetRange("t", 0, 10, 15),
                            OffsetRange("t", 0, 15, 17)]
    assert OffsetRange("t", 0, 3, 3).split(5) == []
    with pytest.raises(ValueError, match=r"^max_size must be at least 1, got 0$"):
        rng.split(0)


async def test_range_ends_at_the_fetch_high_watermark(kafka_broker) -> None:
    topic = unique("plan")
    await kafka_broker.create_topic(topic, partitions=2)
    # One produce request per record: one batch each, so a "latest" answer that is the
    # last batch's base offset would be one short.
    await produce(kafka_broker.bootstrap, topic, [b"%d" % i for i in range(30)], partition=0)
    assert await plan_ranges(kafka_broker.bootstrap, topic) == [
        OffsetRange(topic, 0, 0, 30), OffsetRange(topic, 1, 0, 0)]


async def test_group_starts_where_it_committed(kafka_broker) -> None:
    topic, group = unique("plan"), unique("group")
    await kafka_broker.create_topic(topic)
    await produce(kafka_broker.bootstrap, topic, [b"a", b"b", b"c"])
    first = await plan_ranges(kafka_broker.bootstrap, topic, group)
    assert first == [OffsetRange(topic, 0, 0, 3)]
    await commit_ranges(kafka_broker.bootstrap, group, first)
    await produce(kafka_broker.bootstrap, topic, [b"d"])
    assert await plan_ranges(kafka_broker.bootstrap, topic, group) == [
        OffsetRange(topic, 0, 3, 4)]
    assert await plan_ranges(kafka_broker.bootstrap, topic, unique("group")) == [
        OffsetRange(topic, 0, 0, 4)]


async def test_missing_topic_is_named(kafka_broker) -> None:
    with pytest.raises(TopicNotFound, match=r"^topic 'no-such-topic' does not exist"):
        await plan_ranges(kafka_broker.bootstrap, "no-such-topic")


async def test_unreachable_broker_fails_fast() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(BrokerUnreachable, match=rf"^cannot reach Kafka at 127.0.0.1:{port} "):
        await probe_broker(f"127.0.0.1:{port}", timeout_s=2)
    assert time.monotonic() - started < 3


def test_read_range_yields_exactly_the_range(kafka_broker) -> None:
    topic = unique("read")
    kafka_broker.create_topic_sync(topic)
    asyncio.run(produce(kafka_broker.bootstrap, topic, [b"%d" % i for i in range(25)]))
    batches = list(read_range(kafka_broker.bootstrap, OffsetRange(topic, 0, 4, 21),
                              max_records=6))
    assert all(b.schema == RECORD_SCHEMA for b in batches)
    rows = pa.Table.from_batches(batches).to_pylist()
    assert [r["offset"] for r in rows] == list(range(4, 21))
    assert [r["value"] for r in rows] == [b"%d" % i for i in range(4, 21)]
    assert list(read_range(kafka_broker.bootstrap, OffsetRange(topic, 0, 9, 9))) == []


def test_write_batches_waits_for_every_record(kafka_broker) -> None:
    topic = unique("write")
    kafka_broker.create_topic_sync(topic)
    batch = pa.RecordBatch.from_pylist([
        {"key": b"k1", "value": b"v1", "headers": [{"key": "h", "value": b"x"}]},
        {"key": None, "value": b"v2", "headers": []},
    ])
    assert write_batches(kafka_broker.bootstrap, [batch], default_topic=topic) == 2
    records = asyncio.run(read_all(kafka_broker.bootstrap, topic, idle_s=0.5))
    assert [(r.key, r.value, list(r.headers)) for r in records] == [
        (b"k1", b"v1", [("h", b"x")]), (None, b"v2", [])]
