"""Offset ranges of one topic: where unread data starts, where it ends, and group progress.

A range's end is the partition's high watermark as carried by a fetch response. The
ListOffsets "latest" answer is only used as a place to start that fetch: Tansu answers it
with the base offset of the last record batch, and a bound taken from it would silently
drop the tail of the log. A range's start is the consumer group's committed offset (the
log start when the group has none), so committing a range's end after its records were
handled is the whole of the progress record: a re-run starts after it.

Plain asyncio and aiokafka, no Spark: the replay job calls these on the driver, and the
Spark source calls them when planning a read without explicit ranges. ``client`` carries
the connection and security options (``connectors.kafka.client_options``).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError
from aiokafka.structs import OffsetAndMetadata

from connectors.kafka import client_options
from connectors.kafka.client_start import started

__all__ = [
    "BrokerUnreachable",
    "OffsetRange",
    "TopicNotFound",
    "commit_ranges",
    "plan_ranges",
    "plan_tasks",
    "probe_broker",
]

_HIGHWATER_POLL_MS = 50


class BrokerUnreachable(ConnectionError):
    """No Kafka broker answered at the bootstrap address within the time allowed."""


class TopicNotFound(LookupError):
    """The broker answered but does not know the topic."""


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one partition; ``end`` is exclusive, as Kafka's are."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        """Number of offsets covered (records, unless compaction or markers left gaps)."""
        return max(0, self.end - self.start)

    def divide(self, parts: int) -> list[OffsetRange]:
        """``parts`` consecutive sub-ranges covering exactly this one, their sizes differing
        by at most one offset (fewer when the range is smaller than ``parts``)."""
        parts = min(parts, self.size)
        if parts < 1:
            return []
        bounds = [self.start + self.size * i // parts for i in range(parts + 1)]
        return [OffsetRange(self.topic, self.partition, lo, hi)
                for lo, hi in itertools.pairwise(bounds)]


def plan_tasks(ranges: Iterable[OffsetRange], max_size: int,
               parallelism: int = 1) -> list[OffsetRange]:
    """The ranges cut into tasks of at most ``max_size`` offsets, largest first.

    Each range is cut into pieces of near-equal size, the fewest that respect
    ``max_size``. When they number at least ``parallelism`` (the tasks that run at once),
    the ranges with the largest pieces are cut once more until the count is a multiple of
    it, so that no small remainder runs alone at the end; fewer pieces are left as they
    are (a small read is not cut up to fill a large cluster). Empty ranges give no task.
    """
    if max_size < 1:
        raise ValueError(f"max_size must be at least 1, got {max_size}")
    if parallelism < 1:
        raise ValueError(f"parallelism must be at least 1, got {parallelism}")
    plan = [[r, -(-r.size // max_size)] for r in ranges if r.size]
    count = sum(n for _, n in plan)
    growable = [entry for entry in plan if entry[0].size > entry[1]]
    while count >= parallelism and count % parallelism and growable:
        widest = max(growable, key=lambda entry: entry[0].size / entry[1])
        widest[1] += 1
        count += 1
        if widest[0].size == widest[1]:
            growable.remove(widest)
    pieces = [piece for r, n in plan for piece in r.divide(n)]
    return sorted(pieces, key=lambda r: -r.size)


def _consumer(bootstrap: str, group_id: str | None, timeout_s: float,
              client: Mapping[str, Any] | None) -> AIOKafkaConsumer:
    timeout_ms = int(timeout_s * 1000)
    defaults = {"request_timeout_ms": max(timeout_ms, 1000),
                "connections_max_idle_ms": max(timeout_ms * 4, 60_000),
                "metadata_max_age_ms": 300_000}
    options = client_options.build(client or {}, defaults, "replay job")
    return AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group_id,
                            enable_auto_commit=False, auto_offset_reset="earliest",
                            fetch_max_wait_ms=100, **options)


async def probe_broker(bootstrap: str, timeout_s: float = 5.0,
                       client: Mapping[str, Any] | None = None) -> None:
    """Return once a broker at ``bootstrap`` answered a metadata request.

    Raises ``BrokerUnreachable`` after at most ``timeout_s`` seconds otherwise.
    """
    consumer = _consumer(bootstrap, None, timeout_s, client)
    try:
        await asyncio.wait_for(consumer.start(), timeout_s)
    except (KafkaError, OSError, TimeoutError) as exc:
        detail = str(exc) or type(exc).__name__
        raise BrokerUnreachable(
            f"cannot reach Kafka at {bootstrap} within {timeout_s:g} s ({detail})") from None
    finally:
        await consumer.stop()


async def _partitions(consumer: AIOKafkaConsumer, topic: str) -> list[TopicPartition]:
    await consumer.topics()  # a fresh metadata request, not a cached answer
    partitions = consumer.partitions_for_topic(topic)
    if not partitions:
        raise TopicNotFound(f"topic {topic!r} does not exist on the broker")
    return [TopicPartition(topic, p) for p in sorted(partitions)]


async def _high_watermarks(consumer: AIOKafkaConsumer, tps: list[TopicPartition],
                           firsts: dict[TopicPartition, int],
                           timeout_s: float) -> dict[TopicPartition, int]:
    """High watermarks read from fetch responses; assigns ``tps`` (log starts ``firsts``)
    to the consumer."""
    hints = await consumer.end_offsets(tps)
    # Each position is set as its partition is assigned, with no await between: a partition
    # assigned without one would first be reset through the group's committed offsets,
    # which holds the first fetch back by the client's retry backoff.
    consumer.assign(tps)
    for tp in tps:
        # Fetching from the ListOffsets answer returns at most the last batch, and the
        # response's high watermark is the true end whatever that answer was.
        consumer.seek(tp, max(firsts[tp], hints[tp]))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while any(consumer.highwater(tp) is None for tp in tps):
        if loop.time() > deadline:
            raise TimeoutError(f"no fetch response for {tps} within {timeout_s:g} s")
        await consumer.getmany(*tps, timeout_ms=_HIGHWATER_POLL_MS, max_records=1)
    return {tp: consumer.highwater(tp) for tp in tps}


async def plan_ranges(bootstrap: str, topic: str, group_id: str | None = None,
                      timeout_s: float = 30.0,
                      client: Mapping[str, Any] | None = None) -> list[OffsetRange]:
    """One range per partition of ``topic``: from the group's committed offset to the end.

    Without ``group_id`` (or for a partition the group never committed) a range starts at
    the log start. A committed offset outside the log (the topic was deleted and created
    again) also restarts at the log start: every record there is new to the group.
    """
    consumer = _consumer(bootstrap, group_id, timeout_s, client)
    await started(consumer)
    try:
        tps = await _partitions(consumer, topic)
        firsts = await consumer.beginning_offsets(tps)
        ends = await _high_watermarks(consumer, tps, firsts, timeout_s)
        ranges = []
        for tp in tps:
            committed = await consumer.committed(tp) if group_id else None
            start = firsts[tp]
            if committed is not None and firsts[tp] <= committed <= ends[tp]:
                start = committed
            ranges.append(OffsetRange(topic, tp.partition, start, ends[tp]))
        return ranges
    finally:
        await consumer.stop()


async def commit_ranges(bootstrap: str, group_id: str, ranges: Iterable[OffsetRange],
                        timeout_s: float = 30.0,
                        client: Mapping[str, Any] | None = None) -> None:
    """Commit each range's end as ``group_id``'s offset: the group's next read starts there."""
    offsets = {TopicPartition(r.topic, r.partition): OffsetAndMetadata(r.end, "")
               for r in ranges}
    if not offsets:
        return
    consumer = _consumer(bootstrap, group_id, timeout_s, client)
    await started(consumer)
    try:
        consumer.assign(list(offsets))
        await consumer.commit(offsets)
    finally:
        await consumer.stop()
