"""The Kafka side of a stateful bolt that keeps its state per input partition.

A ``StatefulBolt`` behind a repartition hop reads the repartition topic (as many partitions
as the upstream spout's topics, which the changelog has too); ``ChangelogInput``
is what its executor asks of Kafka:

- ``partition_of(values)``: a tuple's input partition, from its grouping fields, as the
  writer chose it (Kafka's default partitioner);
- ``start(on_revoked, on_assigned)``: create or check the changelog topic (its partition
  count must be the input's: ``PartitionMismatch`` otherwise), start its producer, and have
  ``on_revoked(partitions)`` called while the group takes partitions away and
  ``on_assigned(partitions)`` once it gave new ones;
- ``restore(partition, store, namespace)``: rebuild the partition's state from its
  changelog, up to the group's committed input offset; the spouts of this process do not
  fetch the partition meanwhile;
- ``write(changes)``: write each partition's committed changes, each record carrying the
  group's committed input offset at that moment (a bound below every tuple behind it,
  which are not acked yet), and return once the broker confirmed them all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from connectors.kafka import client_options, revocations
from connectors.kafka.changelog import (
    ChangelogWriter,
    changelog_name,
    ensure_changelog,
    restore_partition,
)
from connectors.kafka.repartition import KeyPartitions, record_key
from engine.state.changelog import ChangelogRestore, encode_changes
from engine.state.store import SqliteStateStore

__all__ = ["ChangelogInput"]


class ChangelogInput:
    """Partitions, changelog and restores of stateful bolt ``component`` reading ``topic``
    in ``group`` (see the module docstring)."""

    def __init__(self, group: str, topic: str, sources: Sequence[str], component: str,
                 bootstrap: str | list[str], options: Mapping[str, Any],
                 fields: Sequence[str], key_fields: Sequence[str]) -> None:
        self.group = group
        self.input = topic
        self.sources = list(sources)  # the upstream spout's topics: the partition count
        self.topic = changelog_name(group, component)
        self.bootstrap = bootstrap
        self.options = client_options.shared(options)
        self._at = tuple(list(fields).index(f) for f in key_fields)
        self._partition = KeyPartitions()  # the writer's partitioner, memo included
        self.partitions: list[int] = []
        self._callback: Callable[[list[int]], Awaitable[None]] | None = None
        self._on_assigned: Callable[[list[int]], Awaitable[None]] | None = None
        self._writer: ChangelogWriter | None = None
        self._offsets: AIOKafkaConsumer | None = None

    def partition_of(self, values: Sequence[Any]) -> int:
        """The input partition of a tuple with ``values``."""
        partitions = self.partitions
        return self._partition(record_key(values, self._at), partitions, partitions)

    async def start(self, on_revoked: Callable[[list[int]], Awaitable[None]],
                    on_assigned: Callable[[list[int]], Awaitable[None]] | None = None) -> None:
        """Create or check the changelog, start its clients, follow revocations (and
        assignments)."""
        count = await ensure_changelog(self.bootstrap, self.options, self.sources, self.topic)
        self.partitions = list(range(count))
        self._writer = ChangelogWriter(self.topic, self.bootstrap, self.options)
        await self._writer.start()
        # Asks the group's committed offsets (OffsetFetch) without joining it.
        self._offsets = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=self.group,
                                         enable_auto_commit=False, **self.options)
        await self._offsets.start()
        self._callback = on_revoked
        revocations.subscribe(self.group, self.input, on_revoked)
        self._on_assigned = on_assigned
        if on_assigned is not None:
            revocations.subscribe(self.group, self.input, on_assigned, "assigned")

    async def committed(self, partition: int) -> int:
        """The group's committed offset of input ``partition`` (0 if none)."""
        assert self._offsets is not None
        return await self._offsets.committed(TopicPartition(self.input, partition)) or 0

    async def restore(self, partition: int, store: SqliteStateStore,
                      namespace: str) -> tuple[int, int, float]:
        """Rebuild ``namespace`` from changelog ``partition``: records applied, records
        skipped (beyond the committed offset), seconds."""
        tp = TopicPartition(self.input, partition)
        revocations.hold_back(self.group, tp)  # its records wait in Kafka meanwhile
        try:
            restore = ChangelogRestore(store, namespace, await self.committed(partition))
            applied, secs = await restore_partition(self.bootstrap, self.options, self.topic,
                                                    partition, restore)
        finally:
            revocations.release(self.group, tp)
        return applied, restore.skipped, secs

    async def write(self, changes: Mapping[int, Mapping[Any, Any]]) -> None:
        """Write each partition's ``changes``; return once every record is confirmed."""
        assert self._writer is not None
        for partition, changed in changes.items():
            first = await self.committed(partition)
            await self._writer.write(partition, encode_changes(changed, first))

    async def stop(self) -> None:
        """Stop following revocations; close the clients."""
        if self._callback is not None:
            revocations.unsubscribe(self.group, self.input, self._callback)
            self._callback = None
        if self._on_assigned is not None:
            revocations.unsubscribe(self.group, self.input, self._on_assigned, "assigned")
            self._on_assigned = None
        for client in (self._writer, self._offsets):
            if client is not None:
                await client.stop()
        self._writer = self._offsets = None
