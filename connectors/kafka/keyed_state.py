"""The Kafka side of a stateful bolt that keeps its state per input partition.

A ``StatefulBolt`` behind a repartition hop reads the repartition topic (as many partitions
as the upstream spout's topics, which the changelog has too); ``ChangelogInput``
is what its executor asks of Kafka:

- ``partition_of(values)``: a tuple's input partition, from its grouping fields, as the
  writer chose it (Kafka's default partitioner);
- ``start(on_revoked, on_assigned)``: create or check the changelog topic (its partition
  count must be the input's: ``PartitionMismatch`` otherwise; a missing one while the group
  has consumed the bolt's input is refused: ``StateRefused``), start its producer, and
  have ``on_revoked(partitions)`` called while the group takes partitions away and
  ``on_assigned(partitions)`` once it gave new ones;
- ``hold(partition)``: the spouts of this process do not fetch the partition until its
  restore ended;
- ``restore(partition, store, namespace)``: bring the partition's state on this host up to
  its changelog's end, reading only past what the host holds (from the beginning when it
  holds nothing); state that is gone or a record that cannot be read is refused
  (``engine.state.changelog.refusal``);
- ``write(changes, partitions)``: write each partition's committed changes, each record
  carrying the group's committed input offset at that moment (a bound below every tuple
  behind it, which are not acked yet), and a marker per partition whose tuples the
  checkpoint releases; return, once the broker confirmed them all, the offset after each
  partition's records.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from connectors.kafka import client_options, revocations
from connectors.kafka.changelog import (
    ChangelogRead,
    ChangelogWriter,
    changelog_name,
    ensure_changelog,
    follow_partition,
    read_partition,
)
from connectors.kafka.client_start import started
from connectors.kafka.keys import KeyPartitions, StrKeys, record_key
from connectors.kafka.topics import topic_exists
from engine.config import TOPOLOGY_STATE_ALLOW_EMPTY
from engine.state.changelog import (
    ChangelogRestore,
    StateRefused,
    encode_changes,
    encode_marker,
    encode_start,
    refusal,
)
from engine.state.partition_store import PartitionStore, Position
from engine.state.restored import Restored, Written
from engine.state.standby import StandbyCopy

__all__ = ["ChangelogInput"]


log = logging.getLogger("connectors.kafka.keyed_state")


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
        self._one = self._at[0] if len(self._at) == 1 else None
        self._keys = StrKeys()  # one str grouping field -> its partition
        self.partitions: list[int] = []
        self._callback: Callable[[list[int]], Awaitable[None]] | None = None
        self._on_assigned: Callable[[list[int]], Awaitable[None]] | None = None
        self._writer: ChangelogWriter | None = None
        self._offsets: AIOKafkaConsumer | None = None
        self._unstarted: set[int] = set()  # empty changelog partitions: a start record owed
        self.allow_empty = False

    def partition_of(self, values: Sequence[Any]) -> int:
        """The input partition of a tuple with ``values``."""
        if self._one is not None:
            value = values[self._one]
            if type(value) is str:  # the common key: its partition remembered
                found = self._keys.known.get(value)
                if found is None:
                    found = self._keys.learn(value, self._partition_of_key)
                return found[0]
        return self._partition_of_key(record_key(values, self._at))

    def _partition_of_key(self, key: bytes) -> int:
        partitions = self.partitions
        return self._partition(key, partitions, partitions)

    async def start(self, on_revoked: Callable[[list[int]], Awaitable[None]],
                    on_assigned: Callable[[list[int]], Awaitable[None]] | None = None,
                    allow_empty: bool = False) -> None:
        """Create or check the changelog, start its clients, follow revocations (and
        assignments). Raises ``StateRefused`` when the changelog does not exist while the
        group has consumed this bolt's input (unless ``allow_empty``)."""
        self.allow_empty = allow_empty
        # Asks the group's committed offsets (OffsetFetch) without joining it.
        self._offsets = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=self.group,
                                         enable_auto_commit=False, **self.options)
        await started(self._offsets)
        if not await topic_exists(self.bootstrap, self.options, self.topic):
            await self._refuse_missing()
        count = await ensure_changelog(self.bootstrap, self.options, self.sources, self.topic)
        self.partitions = list(range(count))
        self._keys.recount(count)
        self._writer = ChangelogWriter(self.topic, self.bootstrap, self.options)
        await self._writer.start()
        self._callback = on_revoked
        revocations.subscribe(self.group, self.input, on_revoked)
        self._on_assigned = on_assigned
        if on_assigned is not None:
            revocations.subscribe(self.group, self.input, on_assigned, "assigned")

    async def _refuse_missing(self) -> None:
        """The changelog does not exist: refuse if the group committed offsets on this
        bolt's input (its state is gone: deleted, or the bolt renamed or added)."""
        assert self._offsets is not None
        consumer, progress = self._offsets, {}
        await consumer.topics()
        for topic in [*self.sources, self.input]:
            for p in sorted(consumer.partitions_for_topic(topic) or ()):
                if committed := await consumer.committed(TopicPartition(topic, p)):
                    progress[f"{topic}[{p}]"] = committed
        if not progress:
            return
        shown = ", ".join(f"{tp}={o}" for tp, o in list(progress.items())[:4])
        why = (f"changelog {self.topic!r} does not exist, but group {self.group!r} has "
               f"committed offsets on the bolt's input ({shown}"
               f"{', ...' if len(progress) > 4 else ''}): the state behind them is gone "
               f"(the changelog was deleted, or the bolt was renamed or added to a running "
               f"group)")
        if not self.allow_empty:
            raise StateRefused(f"{why}; to start it from empty state on purpose, set "
                               f"{TOPOLOGY_STATE_ALLOW_EMPTY}=true")
        log.warning("%s; starting it from empty state (%s=true)", why,
                    TOPOLOGY_STATE_ALLOW_EMPTY)

    def hold(self, partition: int) -> None:
        """Do not fetch input ``partition`` in this process until its restore ended."""
        revocations.hold_back(self.group, TopicPartition(self.input, partition))

    async def committed(self, partition: int) -> int | None:
        """The group's committed offset of input ``partition`` (None if none)."""
        assert self._offsets is not None
        return await self._offsets.committed(TopicPartition(self.input, partition))

    async def restore(self, partition: int, store: PartitionStore,
                      namespace: str) -> Restored:
        """Bring ``namespace`` up to changelog ``partition``'s end: from where this host's
        state of it stands, else from the beginning; then fetch the partition again.
        Raises ``StateRefused`` for state that is gone (unless ``allow_empty`` was given to
        ``start``: then what the changelog holds is taken, with a WARNING) or a record that
        cannot be read."""
        committed = await self.committed(partition)
        where = f"changelog {self.topic!r} partition {partition}"
        held = store.position(namespace)
        if held is not None and held.topic != self.topic:
            held = None  # what the host holds came from another changelog
        if held is not None:
            store.resume(namespace, committed or 0)
            restore = self._restore(store, namespace, committed, where, held)
            read = await self._read(partition, held.next_offset, restore)
            if read.rewound:
                held = None
        if held is None:
            store.begin(namespace, self.topic)
            restore = self._restore(store, namespace, committed, where, None)
            read = await self._read(partition, 0, restore)
        restore.finish()
        self._judge(partition, where, committed, restore, read.empty)
        revocations.release(self.group, TopicPartition(self.input, partition))
        return Restored(restore.applied, restore.skipped, restore.records, read.secs,
                        held is not None)

    @staticmethod
    def _restore(store: PartitionStore, namespace: str, committed: int | None, where: str,
                 held: Position | None) -> ChangelogRestore:
        if held is None:
            return ChangelogRestore(store, namespace, committed or 0, where)
        return ChangelogRestore(store, namespace, committed or 0, where, held.marker,
                                held.started)

    async def _read(self, partition: int, start: int,
                    restore: ChangelogRestore) -> ChangelogRead:
        return await read_partition(self.bootstrap, self.options, self.topic, partition,
                                    start, restore)

    def _judge(self, partition: int, where: str, committed: int | None,
               restore: ChangelogRestore, empty: bool) -> None:
        """Refuse state that is gone; note the partitions whose changelog starts now."""
        why = refusal(where, self.group, committed, restore, empty)
        if why is not None and not self.allow_empty:
            raise StateRefused(f"{why}; to go on with what the changelog holds on purpose, "
                               f"set {TOPOLOGY_STATE_ALLOW_EMPTY}=true")
        if why is not None:
            log.warning("%s; going on with what it holds (%s=true)", why,
                        TOPOLOGY_STATE_ALLOW_EMPTY)
        if not restore.started:
            self._unstarted.add(partition)

    async def write(self, changes: Mapping[int, Mapping[Any, Any]],
                    partitions: Iterable[int]) -> dict[int, Written]:
        """Write each partition's ``changes`` and a marker for each of ``partitions`` (those
        whose tuples the checkpoint releases); return, once every record is confirmed,
        where each partition's changelog stands."""
        assert self._writer is not None
        records: dict[int, list[tuple[bytes, bytes]]] = {}
        firsts: dict[int, tuple[int, tuple[int, int] | None]] = {}
        for partition in sorted(set(partitions) | set(changes)):
            known = revocations.position(self.group, TopicPartition(self.input, partition))
            if known is None:
                committed = await self.committed(partition)
                first, marker = committed or 0, None
            else:
                first, marker = known[0], known
            batch = records[partition] = []
            if partition in self._unstarted:
                batch.append(encode_start(first))
            batch += encode_changes(changes.get(partition, {}), first)
            if marker is not None:
                batch.append(encode_marker(*marker))
            firsts[partition] = (first, marker)
        ends = await self._writer.write(records)
        self._unstarted.difference_update(ends)
        return {p: Written(firsts[p][0], end, firsts[p][1]) for p, end in ends.items()}

    async def follow(self, partition: int, copy: StandbyCopy) -> None:
        """Keep the standby ``copy`` of ``partition`` caught up with its changelog until
        cancelled."""
        await follow_partition(self.bootstrap, self.options, self.topic, partition, copy,
                               lambda: self.committed(partition))

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
