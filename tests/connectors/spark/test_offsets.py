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
    plan_tasks,
    probe_broker,
)
from tests.connectors.spark.helpers import produce, read_all, unique


def test_divide_covers_the_range_exactly_in_near_equal_pieces() -> None:
    rng = OffsetRange("t", 0, 5, 17)
    assert rng.divide(3) == [OffsetRange("t", 0, 5, 9), OffsetRange("t", 0, 9, 13),
                             OffsetRange("t", 0, 13, 17)]
    assert rng.divide(5) == [OffsetRange("t", 0, 5, 7), OffsetRange("t", 0, 7, 9),
                             OffsetRange("t", 0, 9, 12), OffsetRange("t", 0, 12, 14),
                             OffsetRange("t", 0, 14, 17)]
    assert OffsetRange("t", 0, 3, 5).divide(4) == [OffsetRange("t", 0, 3, 4),
                                                   OffsetRange("t", 0, 4, 5)]
    assert OffsetRange("t", 0, 3, 3).divide(2) == []


def test_tasks_respect_the_size_limit_and_fill_every_slot() -> None:
    a, b = OffsetRange("t", 0, 0, 50_099), OffsetRange("t", 1, 0, 49_901)
    # The fewest pieces, 2 + 1, would leave one slot idle for half the read: 4 instead.
    tasks = plan_tasks([a, b], 50_000, parallelism=2)
    assert [t.size for t in tasks] == [25_050, 25_049, 24_951, 24_950]
    # 3 + 2 pieces, then one more for the range whose pieces are the largest.
    assert sorted(t.size for t in plan_tasks([a, b], 25_000, parallelism=2)) == [
        16_633, 16_634, 16_634, 16_699, 16_700, 16_700]
    assert [t.size for t in plan_tasks([a, b], 50_000)] == [49_901, 25_050, 25_049]
    # Fewer pieces than slots: not cut further (one consumer per task is not free).
    assert [t.size for t in plan_tasks([a, b], 50_000, parallelism=400)] == [
        49_901, 25_050, 25_049]
    assert len(plan_tasks([a, a], 50_000)) == 4  # the same range twice is read twice


def test_tasks_cover_every_offset_once() -> None:
    ranges = [OffsetRange("t", p, 10 * p, 10 * p + size)
              for p, size in enumerate([0, 1, 7, 130, 64, 3])]
    for max_size in (1, 5, 50, 1000):
        for parallelism in (1, 2, 3, 8, 500):
            tasks = plan_tasks(ranges, max_size, parallelism)
            assert all(0 < t.size <= max_size for t in tasks)
            assert [t.size for t in tasks] == sorted((t.size for t in tasks), reverse=True)
            covered = sorted((t.partition, o) for t in tasks for o in range(t.start, t.end))
            assert covered == sorted((r.partition, o) for r in ranges
                                     for o in range(r.start, r.end))
            fewest = sum(-(-r.size // max_size) for r in ranges)
            if fewest < parallelism:  # a small read is left as it is
                assert len(tasks) == fewest
            else:  # a multiple of the slots, unless every task is down to one offset
                assert len(tasks) % parallelism == 0 or len(tasks) == len(covered)


def test_task_planning_rejects_sizes_below_one() -> None:
    with pytest.raises(ValueError, match=r"^max_size must be at least 1, got 0$"):
        plan_tasks([OffsetRange("t", 0, 0, 5)], 0)
    with pytest.raises(ValueError, match=r"^parallelism must be at least 1, got 0$"):
        plan_tasks([OffsetRange("t", 0, 0, 5)], 5, parallelism=0)


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


async def test_planning_does_not_wait_out_the_client_retry_backoff(kafka_broker) -> None:
    # Assigning a partition with no position makes the consumer look up the group's
    # committed offset before its first fetch, a retry backoff later; planning sets every
    # position as it assigns, so a backoff of a minute costs nothing.
    topic, group = unique("plan-fast"), unique("group")
    await kafka_broker.create_topic(topic, partitions=2)
    await produce(kafka_broker.bootstrap, topic, [b"a", b"b", b"c"], partition=1)
    ranges = await asyncio.wait_for(
        plan_ranges(kafka_broker.bootstrap, topic, group, client={"retry_backoff_ms": 60_000}),
        timeout=20)
    assert [(r.partition, r.start, r.end) for r in ranges] == [(0, 0, 0), (1, 0, 3)]


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
