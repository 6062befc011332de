"""Records to one topic in per-partition batches, one delivery future per batch.

``BatchSender`` is ``KafkaBolt``'s produce path. ``AIOKafkaProducer.send`` costs one future,
one partitioner call with two metadata look-ups and one accumulator insert per record;
here a record is appended to an open ``BatchBuilder`` of its partition and the batch is
handed to the producer whole (``send_batch``), so the delivery callback runs once per
batch and acks or fails every item of it together.

Guarantees:

- an item's ``on_done(items, future)`` runs once, after the broker confirmed or refused the
  batch holding its record (``future`` is that batch's delivery future), or with a failed
  future when the producer would not take the batch, or when the confirmation names
  another topic or partition than the batch was sent to, or no offset
  (``DeliveryMismatch``): only a batch confirmed where it was sent counts as stored;
- records of one partition reach the producer in the order they were added, so a key's
  records keep their order;
- the partition of a keyed record is the producer's partitioner's choice (by default
  Kafka's murmur2 of the key, as every Kafka client); records without a key stick to one
  partition per send cycle (Kafka's sticky partitioning), rotating between cycles;
- a send cycle starts at most ``linger`` seconds after the first record added to it, at
  once when a batch is full;
- at most ``max_queued`` full batches wait for the sender: ``add`` waits beyond that;
- a packing sender (``pack`` given) joins the values added for one partition into one
  record per send cycle (``pack(values)``, keyed by the first value's key, no headers:
  a producer that sends it again by its key puts it in the same partition; a new record
  past ``pack_bytes``), so many small values cost one record; their items are acked or
  failed with that record's batch, in the order added.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError, MessageSizeTooLargeError
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from engine.murmur2 import default_partition

__all__ = ["PACK_BYTES", "BatchSender", "DeliveryMismatch", "checked", "confirmation_problem"]

PACK_BYTES = 64 * 1024
"""Largest packed record a packing sender makes (but for one value larger than this)."""
_RECORD_OVERHEAD = 128  # more than a record batch's header and one record's framing
_NO_HEADERS: list[tuple[str, bytes]] = []
Done = Callable[[list[Any], "asyncio.Future[Any]"], None]


class DeliveryMismatch(KafkaError):
    """A batch's confirmation does not say it was stored where it was sent."""

    retriable = True  # its records are sent again by the replay of their tuples


def confirmation_problem(metadata: Any, topic: str, partition: int) -> str | None:
    """What is wrong with a batch's confirmation ``metadata`` for ``topic[partition]``, or
    None. ``None`` metadata (``acks=0``: the broker confirms nothing) passes."""
    if metadata is None:
        return None
    if metadata.topic != topic or metadata.partition != partition:
        return (f"batch sent to {topic}[{partition}] was confirmed for "
                f"{metadata.topic}[{metadata.partition}]")
    offset = metadata.offset
    if not isinstance(offset, int) or offset < 0:
        return f"batch sent to {topic}[{partition}] was confirmed without an offset ({offset!r})"
    return None


def checked(future: asyncio.Future[Any], topic: str,
            partition: int) -> asyncio.Future[Any]:
    """``future`` (done), or a failed one with ``DeliveryMismatch`` when its confirmation
    does not match ``topic[partition]``."""
    if future.cancelled() or future.exception() is not None:
        return future
    problem = confirmation_problem(future.result(), topic, partition)
    if problem is None:
        return future
    failed = future.get_loop().create_future()
    failed.set_exception(DeliveryMismatch(problem))
    failed.exception()  # retrieved here; on_done reads it again
    return failed


def _takes_records_directly(builder: Any) -> bool:
    """Whether ``builder`` (the producer's ``BatchBuilder``) is the kind ``_add`` appends
    to directly: a v2 record builder inside, no key or value serializer to apply."""
    return (isinstance(getattr(builder, "_builder", None), DefaultRecordBatchBuilder)
            and type(getattr(builder, "_relative_offset", None)) is int
            and getattr(builder, "_key_serializer", None) is None
            and getattr(builder, "_value_serializer", None) is None)


class _Pack:
    """Values bound for one partition that will share one record, and their items."""

    __slots__ = ("items", "key", "size", "values")

    def __init__(self) -> None:
        self.values: list[bytes] = []
        self.items: list[Any] = []
        self.size = 0
        self.key: bytes | None = None  # the first value's key, the record's


class BatchSender:
    """Batches records for ``topic`` per partition and sends them with one future each."""

    def __init__(self, producer: AIOKafkaProducer, topic: str, on_done: Done, *,
                 partitioner: Callable[..., int] | None = None, linger: float = 0.005,
                 max_request_size: int = 1048576, max_queued: int = 64,
                 pack: Callable[[list[bytes]], bytes] | None = None,
                 pack_bytes: int = PACK_BYTES) -> None:
        self._producer = producer
        self._topic = topic
        self._on_done = on_done
        self._partitioner = partitioner or default_partition
        self._linger = linger
        self._max_request_size = max_request_size
        self._max_queued = max_queued
        # partition -> batches in add order: [(builder, items), ...]; the last one is open
        self._open: dict[int, list[tuple[Any, list[Any]]]] = {}
        self._queued = 0  # full batches not yet taken by the sender
        self._wake = asyncio.Event()
        self._room = asyncio.Event()
        self._idle = asyncio.Event()
        self._all: list[int] = []
        self._available: list[int] = []
        self._sticky = itertools.cycle([0])
        self._sticky_partition = 0
        self._task: asyncio.Task[None] | None = None
        self._pack = pack
        self._pack_bytes = pack_bytes
        self._packs: dict[int, _Pack] = {}  # partition -> values not yet in a record
        self._direct = _takes_records_directly(producer.create_batch())

    async def start(self) -> None:
        """Wait for the topic's metadata, then start the sending task."""
        await self._producer.partitions_for(self._topic)
        self._refresh()
        self._task = asyncio.create_task(self._run(), name=f"kafka-send-{self._topic}")

    def _refresh(self) -> None:
        cluster = self._producer.client.cluster
        all_parts = sorted(cluster.partitions_for_topic(self._topic) or ())
        if not all_parts:
            return  # metadata momentarily without the topic: keep the last known layout
        if all_parts != self._all:
            self._all = all_parts
            self._sticky = itertools.cycle(all_parts)
        self._available = sorted(cluster.available_partitions_for_topic(self._topic) or ())
        self._sticky_partition = next(self._sticky)

    async def add(self, key: bytes | None, value: bytes | None, item: Any,
                  headers: list[tuple[str, bytes]] | None = None,
                  partition: int | None = None) -> None:
        """Append one record (to ``partition`` if given); ``item`` is passed to ``on_done``
        with its batch. Waits while ``max_queued`` full batches wait for the sender.

        Raises ``MessageSizeTooLargeError`` (as ``AIOKafkaProducer.send``) for a record
        larger than ``max_request_size``; nothing is added then.
        """
        if not self.add_nowait(key, value, item, headers, partition):
            await self.room()

    def add_nowait(self, key: bytes | None, value: bytes | None, item: Any,
                   headers: list[tuple[str, bytes]] | None = None,
                   partition: int | None = None) -> bool:
        """``add`` without the wait: the record is appended either way; False means the
        caller should ``await room()`` before adding more."""
        size = (0 if value is None else len(value)) + (0 if key is None else len(key))
        if size + _RECORD_OVERHEAD > self._max_request_size:
            self._check_size(key, value)
        if partition is None:
            partition = (self._sticky_partition if key is None
                         else self._partitioner(key, self._all, self._available))
        if self._pack is not None:
            self._add_to_pack(partition, value or b"", item, key)
        else:
            self._append(partition, key, value, headers or _NO_HEADERS).append(item)
        self._wake.set()
        return self._queued < self._max_queued

    @property
    def partitions(self) -> list[int]:
        """The topic's partitions as of the last send cycle (sorted)."""
        return self._all

    def partition_of(self, key: bytes) -> int:
        """The partition the partitioner gives ``key`` now."""
        return self._partitioner(key, self._all, self._available)

    def add_row(self, partition: int, key: bytes, value: bytes, item: Any) -> None:
        """A packing sender's ``add_nowait`` of ``value`` (whose key is ``key``) to
        ``partition``, chosen by the caller, without waking the sender (``wake`` does, once
        for many rows)."""
        if len(value) + len(key) + _RECORD_OVERHEAD > self._max_request_size:
            self._check_size(key, value)
        self._add_to_pack(partition, value, item, key)

    def wake(self) -> bool:
        """Wake the sender for what was added; False means the caller should ``await
        room()`` before adding more."""
        self._wake.set()
        return self._queued < self._max_queued

    def _append(self, partition: int, key: bytes | None, value: bytes | None,
                headers: list[tuple[str, bytes]]) -> list[Any]:
        """Append one record to ``partition``'s open batch; returns that batch's items."""
        batches = self._open.get(partition)
        if batches is None:
            batches = self._open[partition] = [(self._producer.create_batch(), [])]
        builder, items = batches[-1]
        if not self._add(builder, key, value, headers):
            # Full (an empty builder always takes its first record): open the next one.
            builder = self._producer.create_batch()
            self._add(builder, key, value, headers)
            items = []
            batches.append((builder, items))
            self._queued += 1
        return items

    def _add(self, builder: Any, key: bytes | None, value: bytes | None,
             headers: list[tuple[str, bytes]]) -> bool:
        """``builder.append``; False when the batch is full. Batches without serializers
        (``_direct``) take the record straight into their record builder: the wrapper's
        per-record work cost more than the append itself."""
        if not self._direct:
            return builder.append(key=key, value=value, timestamp=None,
                                  headers=headers) is not None
        at = builder._relative_offset
        if builder._builder.append(at, None, key=key, value=value, headers=headers) is None:
            builder.close()  # as the wrapper does with a full batch
            return False
        builder._relative_offset = at + 1
        return True

    def _add_to_pack(self, partition: int, value: bytes, item: Any,
                     key: bytes | None) -> None:
        pack = self._packs.get(partition)
        if pack is None:
            pack = self._packs[partition] = _Pack()
        elif pack.size + len(value) > self._pack_bytes and pack.values:
            self._seal(partition, pack)
        if not pack.values:
            pack.key = key
        pack.values.append(value)
        pack.items.append(item)
        pack.size += len(value)

    def _seal(self, partition: int, pack: _Pack) -> None:
        """``pack``'s values become one record of ``partition``; the pack starts empty."""
        assert self._pack is not None
        self._append(partition, pack.key, self._pack(pack.values),
                     _NO_HEADERS).extend(pack.items)
        pack.values, pack.items, pack.size, pack.key = [], [], 0, None

    def _seal_all(self) -> None:
        for partition, pack in self._packs.items():
            if pack.values:
                self._seal(partition, pack)

    async def room(self) -> None:
        """Return once fewer than ``max_queued`` full batches wait for the sender."""
        if self._queued >= self._max_queued:
            self._room.clear()
            await self._room.wait()

    def _check_size(self, key: bytes | None, value: bytes | None) -> None:
        size = DefaultRecordBatchBuilder.estimate_size_in_bytes(key, value, [])
        if size > self._max_request_size:
            raise MessageSizeTooLargeError(
                f"The message is {size} bytes when serialized which is larger than the "
                f"maximum request size you have configured with the max_request_size "
                f"configuration")

    async def _run(self) -> None:
        while True:
            self._idle.set()
            await self._wake.wait()
            self._idle.clear()
            if self._linger and not self._queued:
                # Let the batches fill: fewer, larger produce requests.
                await asyncio.sleep(self._linger)
            self._wake.clear()
            self._seal_all()
            taken, self._open = self._open, {}
            self._queued = 0
            self._room.set()
            self._refresh()
            if len(taken) == 1:
                for partition, batches in taken.items():
                    await self._send_all(partition, batches)
            else:
                # Partitions go concurrently: the producer holds a partition's next batch
                # until its previous one left, which must not hold up the others.
                await asyncio.gather(*(self._send_all(partition, batches)
                                       for partition, batches in taken.items()))

    async def _send_all(self, partition: int, batches: list[tuple[Any, list[Any]]]) -> None:
        for builder, items in batches:
            await self._send(builder, items, partition)

    async def _send(self, builder: Any, items: list[Any], partition: int) -> None:
        builder.close()  # complete: the producer sends it without lingering
        try:
            future = await self._producer.send_batch(builder, self._topic,
                                                     partition=partition)
        except Exception as exc:  # closed, timed out waiting for room, or fatal
            future = asyncio.get_running_loop().create_future()
            future.set_exception(exc)
            future.exception()  # retrieved here; on_done reads it again
        topic = self._topic
        future.add_done_callback(lambda f: self._on_done(items, checked(f, topic, partition)))

    async def flush(self) -> None:
        """Hand every added record to the producer (delivery is the producer's flush)."""
        while self._task is not None and not self._task.done():
            if not self._open and self._idle.is_set() and not any(
                    p.values for p in self._packs.values()):
                return
            self._wake.set()
            await asyncio.sleep(0)
            if not self._idle.is_set():
                await self._idle.wait()

    async def close(self, flush: bool = True) -> None:
        """Flush (unless told not to: records not handed over stay unsent and their tuples
        time out), then stop the sending task."""
        if flush:
            await self.flush()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
