"""Changelog topics: each input partition's state changes, kept by Kafka, restored by the
partition's next owner.

- ``changelog_name(group, component)``: ``<group>-<component>-changelog``.
- ``ensure_changelog`` creates it with the input's partition count, ``cleanup.policy``
  ``compact`` and ``min.compaction.lag.ms`` ``COMPACTION_LAG_MS`` (a key's older record
  outlives, by that much, a newer one whose input offset is not committed yet, which a
  restore skips), or checks an existing one: a different count is refused with
  ``PartitionMismatch``, one line naming the topic and both counts.
- ``ChangelogWriter.write(partition, records)`` sends records (``encode_changes``) to that
  partition of the changelog, the same number as the input partition, and returns once the
  broker confirmed every one: only then may the input offsets they cover be committed.
- ``restore_partition`` reads one changelog partition from its beginning up to the fetch
  high watermark into a ``ChangelogRestore``, one fetch at a time, yielding to the event
  loop between fetches so that the other partitions keep flowing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from connectors.kafka import client_options
from connectors.kafka.repartition import ensure_topic
from engine.state.changelog import ChangelogRestore

__all__ = ["COMPACTION_LAG_MS", "ChangelogWriter", "changelog_name", "ensure_changelog",
           "restore_partition"]

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
    """Writes changelog records to a chosen partition and waits for the broker's word."""

    def __init__(self, topic: str, bootstrap: str | list[str],
                 options: Mapping[str, Any]) -> None:
        self.topic = topic
        self._producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all",
                                          linger_ms=5, **client_options.shared(options))

    async def start(self) -> None:
        """Connect the producer."""
        await self._producer.start()

    async def write(self, partition: int, records: Sequence[tuple[bytes, bytes]]) -> None:
        """Send ``records`` to ``partition``; return once every one is confirmed (raises
        the produce error otherwise)."""
        send = self._producer.send
        futures = [await send(self.topic, value, key=key, partition=partition)
                   for key, value in records]
        await asyncio.gather(*futures)

    async def stop(self) -> None:
        """Flush and close the producer."""
        await self._producer.stop()


async def restore_partition(bootstrap: str | list[str], options: Mapping[str, Any],
                            topic: str, partition: int, restore: ChangelogRestore,
                            timeout: float = 300.0) -> tuple[int, float]:
    """Read changelog ``partition`` of ``topic`` from the beginning up to its fetch high
    watermark into ``restore``; returns the records applied and the seconds it took.
    Raises ``TimeoutError`` after ``timeout`` seconds."""
    started = time.monotonic()
    tp = TopicPartition(topic, partition)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                max_partition_fetch_bytes=8 << 20, fetch_max_wait_ms=100,
                                **client_options.shared(options))
    await consumer.start()
    try:
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        while not await _caught_up(consumer, tp):
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"changelog {topic!r} partition {partition}: not read to "
                                   f"its end in {timeout:g} s")
            batch = await consumer.getmany(tp, timeout_ms=200, max_records=FETCH_RECORDS)
            restore.add((r.key, r.value) for r in batch.get(tp, ()))
            # getmany returns buffered records without suspending: let the partitions
            # that are not restoring run between two batches.
            await asyncio.sleep(0)
    finally:
        await consumer.stop()
    return restore.finish(), time.monotonic() - started


async def _caught_up(consumer: AIOKafkaConsumer, tp: TopicPartition) -> bool:
    """Whether the position reached the fetch high watermark (known after a fetch)."""
    high = consumer.highwater(tp)
    return high is not None and await consumer.position(tp) >= high
