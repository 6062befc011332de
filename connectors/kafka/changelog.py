"""Changelog topics: each input partition's state changes, kept by Kafka, restored by the
partition's next owner.

- ``changelog_name(group, component)``: ``<group>-<component>-changelog``.
- ``ensure_changelog`` creates it with the input's partition count, ``cleanup.policy``
  ``compact`` and ``min.compaction.lag.ms`` ``COMPACTION_LAG_MS`` (a key's older record
  outlives, by that much, a newer one whose input offset is not committed yet, which a
  restore skips), or checks an existing one: a different count is refused with
  ``PartitionMismatch``, one line naming the topic and both counts.
- ``ChangelogWriter.write(records)`` sends each partition's records (``encode_changes``,
  markers) to the changelog partition of the same number as the input partition, all
  partitions at once, and returns, once the broker confirmed every one, the offset after
  each partition's last record: only then may the input offsets they cover be committed,
  and the local state move to that offset.
- ``read_partition`` reads one changelog partition from a given offset up to the fetch
  high watermark into a ``ChangelogRestore``, one fetch at a time, yielding to the event
  loop between fetches so that the other partitions keep flowing; it says whether the
  partition is empty and whether it ends before that offset (it was created again).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from connectors.kafka import client_options
from connectors.kafka.client_start import started
from connectors.kafka.topics import ensure_topic
from engine.clock import now
from engine.state.changelog import ChangelogRestore
from engine.state.standby import StandbyCopy

__all__ = ["COMPACTION_LAG_MS", "ChangelogRead", "ChangelogWriter", "changelog_name",
           "ensure_changelog", "follow_partition", "read_partition"]

COMPACTION_LAG_MS = 3600 * 1000
"""How long compaction leaves a superseded changelog record: longer than any delay between
a change's record and the commit of the input offsets it covers."""

_CONFIGS = {"cleanup.policy": "compact", "retention.ms": "-1",
            "min.compaction.lag.ms": str(COMPACTION_LAG_MS)}
FETCH_RECORDS = 5_000


def changelog_name(group: str, component: str) -> str:
    """The changelog topic of stateful bolt ``component`` fed from consumer group ``group``."""
    return f"{group}-{component}-changelog"


async def ensure_changelog(bootstrap: str | list[str], options: Mapping[str, Any],
                           inputs: Sequence[str], topic: str) -> int:
    """Create or check the changelog ``topic`` of ``inputs`` (see the module docstring);
    returns its partition count. Raises ``PartitionMismatch``."""
    return await ensure_topic(bootstrap, options, inputs, topic, _CONFIGS, "changelog")


class ChangelogWriter:
    """Writes changelog records to chosen partitions and waits for the broker's word."""

    def __init__(self, topic: str, bootstrap: str | list[str],
                 options: Mapping[str, Any]) -> None:
        self.topic = topic
        self._producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all",
                                          linger_ms=5, **client_options.shared(options))

    async def start(self) -> None:
        """Connect the producer."""
        await started(self._producer)

    async def write(self, records: Mapping[int, Sequence[tuple[bytes, bytes]]]
                    ) -> dict[int, int]:
        """Send each partition's ``records``; once every one is confirmed, the offset after
        each partition's last record (raises the produce error otherwise)."""
        send, topic = self._producer.send, self.topic
        last: dict[int, Any] = {}
        futures = []
        for partition, batch in records.items():
            for key, value in batch:
                futures.append(future := await send(topic, value, key=key, partition=partition))
            if batch:
                last[partition] = future
        await asyncio.gather(*futures)
        return {partition: future.result().offset + 1 for partition, future in last.items()}

    async def stop(self) -> None:
        """Flush and close the producer."""
        await self._producer.stop()


@dataclass(frozen=True)
class ChangelogRead:
    """What ``read_partition`` found: ``high`` the partition's end (fetch high watermark),
    ``empty`` no record at all, ``rewound`` it ends before the offset asked (it was
    created again), ``secs`` how long it took."""

    high: int
    empty: bool
    rewound: bool
    secs: float


async def read_partition(bootstrap: str | list[str], options: Mapping[str, Any],
                         topic: str, partition: int, start: int, restore: ChangelogRestore,
                         stall_secs: float = 60.0) -> ChangelogRead:
    """Read changelog ``partition`` of ``topic`` from offset ``start`` up to its fetch high
    watermark into ``restore`` (nothing if it ends before ``start``). Raises
    ``TimeoutError`` when ``stall_secs`` pass without a fetch that moved it on."""
    began = now()
    tp = TopicPartition(topic, partition)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                max_partition_fetch_bytes=8 << 20, fetch_max_wait_ms=100,
                                **{**client_options.shared(options),
                                   "auto_offset_reset": "earliest"})
    await started(consumer)
    try:
        consumer.assign([tp])
        consumer.seek(tp, start)
        high = await _high_watermark(consumer, tp, restore, stall_secs)
        if high < start:
            return ChangelogRead(high, high == 0, True, now() - began)
        moved = now()
        while await consumer.position(tp) < high:
            if now() - moved > stall_secs:
                raise TimeoutError(f"changelog {topic!r} partition {partition}: no record "
                                   f"read in {stall_secs:g} s, at offset "
                                   f"{await consumer.position(tp)} of {high}")
            batch = await consumer.getmany(tp, timeout_ms=200, max_records=FETCH_RECORDS)
            got = batch.get(tp, ())
            if got:
                moved = now()
                restore.add((r.offset, r.key, r.value) for r in got)
            high = max(high, consumer.highwater(tp) or 0)
            # getmany returns buffered records without suspending: let the partitions
            # that are not restoring run between two batches.
            await asyncio.sleep(0)
    finally:
        await consumer.stop()
    return ChangelogRead(high, high == 0, False, now() - began)


async def _high_watermark(consumer: AIOKafkaConsumer, tp: TopicPartition,
                          restore: ChangelogRestore, stall_secs: float) -> int:
    """The partition's fetch high watermark, known after a first fetch; the records that
    fetch brought go to ``restore``."""
    asked = now()
    while (high := consumer.highwater(tp)) is None:
        if now() - asked > stall_secs:
            raise TimeoutError(f"changelog {tp.topic!r} partition {tp.partition}: no fetch "
                               f"answered in {stall_secs:g} s")
        batch = await consumer.getmany(tp, timeout_ms=200, max_records=FETCH_RECORDS)
        got = batch.get(tp, ())
        if got:
            restore.add((r.offset, r.key, r.value) for r in got)
    return high


async def follow_partition(bootstrap: str | list[str], options: Mapping[str, Any],
                           topic: str, partition: int, copy: StandbyCopy,
                           committed: Callable[[], Awaitable[int | None]]) -> None:
    """Follow changelog ``partition`` of ``topic`` into the standby ``copy``, from its
    position, until cancelled or the copy stops at a record it cannot read; after each
    fetch the copy settles what the group's ``committed()`` input offset passed."""
    tp = TopicPartition(topic, partition)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                max_partition_fetch_bytes=8 << 20,
                                **{**client_options.shared(options),
                                   "auto_offset_reset": "earliest"})
    await started(consumer)
    try:
        consumer.assign([tp])
        consumer.seek(tp, copy.next_offset)
        checked = False
        while copy.stopped_at is None:
            batch = await consumer.getmany(tp, timeout_ms=1000, max_records=FETCH_RECORDS)
            high = consumer.highwater(tp)
            if not checked and high is not None:
                checked = True
                if high < copy.next_offset:  # created again since the copy was made
                    copy.reset()
                    consumer.seek(tp, 0)
                    continue
            got = batch.get(tp, ())
            if got:
                copy.add((r.offset, r.key, r.value) for r in got)
                copy.flush(await committed())
    finally:
        await consumer.stop()
