"""Kafka test kit: produce, read a topic to its fetch high watermark, read group offsets.

Everything talks to the real test broker. Bounds come from the fetch response's high
watermark, never ``end_offsets`` (Tansu 0.6.0 answers ListOffsets "latest" with the base
offset of the last batch). Reads start at offset 0, never at ``seek_to_beginning``: on
Tansu 0.6.0, ListOffsets "earliest" for a partition written by several producers at once
can answer the base offset of a later batch (seen: 24 and 25 instead of 0), which would
hide the first records. Tansu keeps every record, so 0 is the true start; against a broker
that deleted old records, the consumer's ``auto_offset_reset="earliest"`` moves an
out-of-range 0 to the log start.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from engine import BasicBolt

FAST_GROUP = {"session_timeout_ms": 2000, "heartbeat_interval_ms": 250,
              "auto_offset_reset": "earliest"}
"""Consumer options for quick group joins on the test broker (short session, earliest start)."""

_ids = itertools.count()


def unique(prefix: str) -> str:
    """A topic or group name no other test in this session uses."""
    return f"{prefix}-{time.monotonic_ns()}-{next(_ids)}"


async def produce(bootstrap: str, topic: str,
                  records: Iterable[tuple[bytes | None, bytes | None]],
                  partition: int | None = None) -> None:
    """Write ``(key, value)`` records and wait until the broker confirmed every one."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    await producer.start()
    try:
        futures = [await producer.send(topic, value, key=key, partition=partition)
                   for key, value in records]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def partitions(bootstrap: str, topic: str) -> list[TopicPartition]:
    """The topic's partitions, from fresh metadata."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        await consumer.topics()
        return [TopicPartition(topic, p)
                for p in sorted(consumer.partitions_for_topic(topic) or ())]
    finally:
        await consumer.stop()


def seek_to_start(consumer: AIOKafkaConsumer, tps: Iterable[TopicPartition]) -> None:
    """Position ``tps`` at offset 0 (see the module docstring for why not the beginning)."""
    for tp in tps:
        consumer.seek(tp, 0)


def reading_consumer(bootstrap: str) -> AIOKafkaConsumer:
    """A group-less consumer for reading topics whole."""
    return AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                            auto_offset_reset="earliest")


@asynccontextmanager
async def reading_from_start(bootstrap: str, topic: str
                             ) -> AsyncIterator[tuple[AIOKafkaConsumer, list[TopicPartition]]]:
    """A started group-less consumer assigned every partition of ``topic`` at offset 0, and
    those partitions; the consumer is stopped on leaving."""
    tps = await partitions(bootstrap, topic)
    consumer = reading_consumer(bootstrap)
    await consumer.start()
    try:
        consumer.assign(tps)
        seek_to_start(consumer, tps)
        yield consumer, tps
    finally:
        await consumer.stop()


async def read_all(bootstrap: str, topic: str, timeout: float = 20.0) -> list[Any]:
    """Every record of ``topic`` from offset 0 to each partition's fetch high watermark, in
    offset order per partition.

    Tansu 0.6.0 can raise a partition's high watermark before the batch behind it is
    stored: a fetch then answers with the next stored batch, and the reader's position
    passes the missing one. Tansu keeps every offset, so a gap in what was read is such a
    batch: it is read again from the gap until it fills or ``timeout`` passes (then what
    was read is returned, gaps and all, for the caller to report).
    """
    async with reading_from_start(bootstrap, topic) as (consumer, tps):
        got: dict[TopicPartition, dict[int, Any]] = {tp: {} for tp in tps}
        deadline = time.monotonic() + timeout
        while True:
            batches = await consumer.getmany(timeout_ms=200)
            for tp, batch in batches.items():
                got[tp].update((r.offset, r) for r in batch)
            ends = {tp: consumer.highwater(tp) for tp in tps}
            positions = {tp: await consumer.position(tp) for tp in tps}
            if all(hw is not None and positions[tp] >= hw for tp, hw in ends.items()):
                gaps = {tp: first_gap(got[tp], ends[tp] or 0) for tp in tps}
                if all(g is None for g in gaps.values()) or time.monotonic() > deadline:
                    return [got[tp][o] for tp in tps for o in sorted(got[tp])]
                for tp, gap in gaps.items():
                    if gap is not None:
                        consumer.seek(tp, gap)  # a batch skipped: read from it again
            elif time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic!r}: high watermarks {ends} not reached")


def first_gap(offsets: dict[int, Any], end: int) -> int | None:
    """The lowest offset below ``end`` missing from ``offsets``, or None."""
    below = [o for o in offsets if o < end]
    if len(below) == end:
        return None
    return next(o for o in range(end) if o not in offsets)


async def high_watermarks(bootstrap: str, topic: str) -> dict[int, int]:
    """Each partition's fetch high watermark (its true end), by reading it."""
    async with reading_from_start(bootstrap, topic) as (consumer, tps):
        deadline = time.monotonic() + 10
        while any(consumer.highwater(tp) is None for tp in tps):
            await consumer.getmany(timeout_ms=100, max_records=1)
            if time.monotonic() > deadline:
                raise TimeoutError(f"no fetch response for every partition of {topic!r}")
        return {tp.partition: consumer.highwater(tp) for tp in tps}


async def committed(bootstrap: str, group: str, topic: str) -> dict[int, int | None]:
    """The group's committed offset per partition of ``topic`` (None: never committed).

    Asked through a consumer of the group that never joins it (OffsetFetch only), so
    the group's members are not disturbed.
    """
    tps = await partitions(bootstrap, topic)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                enable_auto_commit=False)
    await consumer.start()
    try:
        return {tp.partition: await consumer.committed(tp) for tp in tps}
    finally:
        await consumer.stop()


async def total_committed(bootstrap: str, group: str, topic: str) -> int:
    """The group's committed offsets of ``topic`` summed over its partitions (none: 0)."""
    return sum(o or 0 for o in (await committed(bootstrap, group, topic)).values())


async def committed_rows(bootstrap: str, group: str, hop: str) -> int:
    """The rows (tuples) in the records of repartition topic ``hop`` below the group's
    committed offsets: what the hop's reader has fully processed."""
    at = await committed(bootstrap, group, hop)
    if not any(at.values()):
        return 0
    return await rows_between(bootstrap, hop, {}, {p: o or 0 for p, o in at.items()})


async def rows_between(bootstrap: str, hop: str, first: dict[int, int | None],
                       end: dict[int, int]) -> int:
    """The rows (tuples) in the records of repartition topic ``hop`` from offset ``first``
    (None: 0) to below ``end``, per partition: what a packed record carries, each row."""
    from connectors.kafka.repartition_codec import decode_rows

    return sum(len(decode_rows(r.value)) for r in await read_all(bootstrap, hop)
               if (first.get(r.partition) or 0) <= r.offset < end.get(r.partition, 0))


async def committed_to_end(bootstrap: str, group: str, topics: list[str]) -> bool:
    """True once the group committed every partition of each of ``topics`` to its end."""
    for topic in topics:
        if await committed(bootstrap, group, topic) != await high_watermarks(bootstrap, topic):
            return False
    return True


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float,
                     what: str, every: float = 0.25) -> None:
    """Poll ``check`` until true; raise ``AssertionError`` naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(every)


async def wait_committed(bootstrap: str, group: str, topic: str, offsets: dict[int, int],
                         timeout: float, what: str) -> None:
    """Poll until ``group``'s committed offsets of ``topic`` are exactly ``offsets``
    (partition → offset, every partition); raise ``AssertionError`` naming ``what`` after
    ``timeout``."""

    async def there() -> bool:
        return await committed(bootstrap, group, topic) == offsets

    await eventually(there, timeout, what)


class Slow(BasicBolt):
    """Passes ``(key, value)`` on after ``delay`` seconds, so tuples are in flight."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "value"])

    async def execute(self, tup: Any, collector: Any) -> None:
        await asyncio.sleep(self.delay)
        collector.emit([tup["key"], tup["value"]])
