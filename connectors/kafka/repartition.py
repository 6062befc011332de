"""Repartition topics: a fields grouping carried between engine processes through Kafka.

With ``topology.workers`` above 1 the engine replaces a fields grouping downstream of a
``KafkaSpout`` by a hop (``engine/keyed/hops.py``) made of the two components here:

- ``RepartitionWriter``, a ``KafkaBolt`` that writes the tuples to the topic
  ``<group>-<bolt>-repartition``, partitioned by the grouping fields' value (its key bytes:
  UTF-8 text for one field, a MessagePack array for several; the partition Kafka's default
  one, murmur2 of those bytes). Each tuple becomes a row, a MessagePack array of its values
  (``repartition_codec``: each comes back as the type it was, and a value of a type the
  hop does not carry fails its tuple, naming the field); the rows bound for one partition
  in one send cycle share one record (``pack_rows``, at most ``PACK_BYTES``, keyed by its
  first row's key, so that a record replayed by its key lands in its partition again), so
  a word costs a row, not a record. A tuple is acked once the broker confirmed its record,
  failed with the produce error otherwise: the upstream tree completes when the hop has
  the record.
- ``RepartitionSpout``, a Kafka consumer spout (``ConsumerSpout``) on that topic in the
  upstream spout's group, with its options (retries, failed topic, consumer settings): the
  rows of a record are the roots of one new tree (``emit_many``), and the record's offset
  is committed only when that tree completed; a failed tuple replays its record's rows.
  A record of one row alone (as the hop wrote before it packed rows) is read as one row.
  In front of a stateful windowed bolt (``with_offsets_in``) it puts each row's message id
  in the bolt's message-id field: the record's offset times ``ID_SPAN`` plus the row's
  index for a packed record, the offset for a one-row record, so ids grow per
  partition and are the same when a record is read again.

Before either starts, ``ensure_topic`` creates the topic with as many partitions as the
spout's input (``cleanup.policy=delete``, ``retention.ms`` ``RETENTION_MS``), or checks an
existing one: a different partition count is refused with ``PartitionMismatch``, one line
naming the topic and both counts (docs/scaling.md says how to migrate).
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from connectors.kafka import client_options
from connectors.kafka.batch_send import PACK_BYTES
from connectors.kafka.bolt import KafkaBolt
from connectors.kafka.codec import DecodeError
from connectors.kafka.consumer_spout import EMIT_ROWS, ConsumerSpout
from connectors.kafka.keyed_state import ChangelogInput
from connectors.kafka.keys import KeyPartitions, StrKeys, record_key
from connectors.kafka.repartition_codec import (
    DECODE_ERRORS,
    decode_rows,
    encode_row,
    is_packed,
    key_bytes,
    pack_rows,
)
from connectors.kafka.spout_options import KafkaSpoutMetrics
from connectors.kafka.topics import RETENTION_MS, PartitionMismatch, ensure_topic

__all__ = [
    "ID_SPAN",
    "PACK_BYTES",
    "RETENTION_MS",
    "KeyPartitions",
    "PartitionMismatch",
    "RepartitionSpout",
    "RepartitionWriter",
    "ensure_topic",
    "hop",
    "record_key",
    "topic_name",
]


def topic_name(group: str, receiver: str) -> str:
    """The repartition topic of bolt ``receiver`` fed from consumer group ``group``."""
    return f"{group}-{receiver}-repartition"


def hop(spout: ConsumerSpout, receiver: str, key_fields: Sequence[str],
        fields: Sequence[str]) -> tuple[RepartitionWriter, RepartitionSpout]:
    """The writer bolt and reader spout carrying ``fields`` tuples keyed by ``key_fields``
    into bolt ``receiver`` (see ``KafkaSpout.repartition_hop``)."""
    topic = topic_name(spout.group_id, receiver)
    writer = RepartitionWriter(topic, spout, key_fields, fields)
    return writer, RepartitionSpout(topic, spout, fields)


ID_SPAN = 1 << 20
"""Message ids per packed record (a record holds at most ``PACK_BYTES`` of rows, fewer
than this many rows)."""


class RepartitionWriter(KafkaBolt):
    """Writes each tuple to the repartition topic keyed by the grouping fields (see the
    module docstring); acks it once the broker confirmed the record."""

    def __init__(self, topic: str, spout: ConsumerSpout, key_fields: Sequence[str],
                 fields: Sequence[str]) -> None:
        options = {**client_options.shared(spout.consumer_options),
                   "partitioner": KeyPartitions()}
        super().__init__(topic, spout.bootstrap_servers, value_format="bytes",
                         log_throttle_secs=spout.log_throttle_secs,
                         outage_after_secs=spout.outage_after_secs, **options)
        self._spout = spout
        self._fields = tuple(fields)
        self._at = tuple(self._fields.index(f) for f in key_fields)
        self._one = self._at[0] if len(self._at) == 1 else None
        self._keys = StrKeys()

    def _packing(self) -> dict[str, Any]:
        return {"pack": pack_rows}

    async def prepare(self, conf: Mapping[str, Any], context: Any, collector: Any) -> None:
        """Create or check the topic, then start the producer."""
        spout = self._spout
        await ensure_topic(spout.bootstrap_servers, spout.consumer_options, spout.topics,
                           self.topic)
        await super().prepare(conf, context, collector)

    def execute_batch(self, batch: list[Any] | tuple[Any, ...]) -> Awaitable[None] | None:
        """``KafkaBolt.execute_batch``, with the common tuple (one grouping field holding a
        str) packed straight into its partition's record: the partition of each such value
        is remembered while the topic's partition count stays. Any other tuple takes the
        bolt's own path, which fails it alone with the reason if its row cannot be made."""
        one, sender = self._one, self._sender
        if one is None:
            return super().execute_batch(batch)
        keys = self._keys
        keys.recount(len(sender.partitions))
        partition_of, fields, add = keys.known, self._fields, sender.add_row
        others = []
        for tup in batch:
            values = tup.values
            try:
                value = values[one]
            except IndexError:  # a tick tuple (the bolt's path skips it)
                others.append(tup)
                continue
            known = partition_of.get(value) if type(value) is str else None
            if known is None and (type(value) is not str or tup.is_tick()):
                others.append(tup)
                continue
            try:
                row = encode_row(values, fields)
                partition, key = known or keys.learn(value, sender.partition_of)
                add(partition, key, row, tup)
            except BaseException:
                others.append(tup)  # failed there, with the reason
                continue
            self._sent += 1
        waits = super().execute_batch(others) if others else None
        return sender.room() if not sender.wake() or waits is not None else None

    def _record(self, tup: Any) -> tuple[bytes | None, bytes | None]:
        """A tuple ``execute_batch`` does not pack itself: its key bytes and row."""
        values = tup.values
        row = encode_row(values, self._fields)  # a value it cannot carry fails the tuple
        return key_bytes(values, self._at), row


READER_BUFFER_RECORDS = 256
"""Most records a reader task holds fetched and decoded before it emits them (the spout's
``buffer_size`` if smaller): up to 16 MB of rows at ``PACK_BYTES`` a record."""


class _Rows:
    """Decodes a repartition record's value into the rows it carries (the tuples' values):
    several for a packed record, one for a record of one row alone."""

    __slots__ = ("_n",)

    def __init__(self, n: int) -> None:
        self._n = n

    def __call__(self, record: Any) -> list[list[Any]]:
        try:
            rows = decode_rows(record.value)
        except DECODE_ERRORS as exc:
            raise DecodeError(f"repartition value is not rows of MessagePack values: "
                              f"{exc}") from None
        if rows and set(map(len, rows)) != {self._n}:
            raise DecodeError(f"repartition value is not rows of {self._n} values")
        return rows

    def many(self, records: list[Any]) -> list[list[list[Any]]]:
        """Every record's rows; raises ``DecodeError`` if any is not rows (the fetcher
        then decodes them one by one, to name each bad record)."""
        unpack, n = decode_rows, {self._n}
        try:
            out = [unpack(r.value) for r in records]
        except DECODE_ERRORS as exc:
            raise DecodeError(str(exc)) from None
        for rows in out:
            if rows and set(map(len, rows)) != n:
                raise DecodeError("not a row")
        return out


class _OffsetRows(_Rows):
    """``_Rows`` with each row's message id in place of the value at ``at``: the message
    ids of a stateful windowed bolt behind the hop (see the module docstring)."""

    __slots__ = ("_at",)

    def __init__(self, n: int, at: int) -> None:
        super().__init__(n)
        self._at = at

    def __call__(self, record: Any) -> list[list[Any]]:
        rows = super().__call__(record)
        self._number(record, rows)
        return rows

    def many(self, records: list[Any]) -> list[list[list[Any]]]:
        """Every record's rows, each with its message id at ``at``."""
        out = super().many(records)
        for record, rows in zip(records, out, strict=True):
            self._number(record, rows)
        return out

    def _number(self, record: Any, rows: list[list[Any]]) -> None:
        at, offset = self._at, record.offset
        if not is_packed(record.value):  # one row alone: the record's offset
            rows[0][at] = offset
            return
        if len(rows) >= ID_SPAN:
            raise DecodeError(f"a packed record of {len(rows)} rows (at most {ID_SPAN - 1})")
        first = offset * ID_SPAN
        for i, row in enumerate(rows):
            row[at] = first + i


class RepartitionSpout(ConsumerSpout):
    """Reads the repartition topic in the upstream spout's group, with its options; emits
    the written tuples' values as ``fields`` on the default stream."""

    checks_input = False  # its topic is the engine's, empty until the writer writes

    def __init__(self, topic: str, upstream: ConsumerSpout, fields: Sequence[str]) -> None:
        self.__dict__.update(upstream.__dict__)
        self.input_topics = list(upstream.topics)
        self.topics = [topic]
        self.fields = tuple(fields)
        self.decoder = _Rows(len(self.fields))  # type: ignore[assignment]
        # Records written before this member joined must be read: never start at the end.
        self.consumer_options = {**upstream.consumer_options, "auto_offset_reset": "earliest"}
        self.counters = KafkaSpoutMetrics()
        self.keyed_downstream = False
        # A record holds up to PACK_BYTES of rows: bound what waits decoded by records.
        self.buffer_size = min(upstream.buffer_size, READER_BUFFER_RECORDS)

    def next_tuple(self) -> None:
        """Emit due retries, then buffered records: each record's rows as the roots of one
        tree, about ``EMIT_ROWS`` rows and at most the spout's trees a call (``EMIT_BATCH``,
        fewer under ``topology.max.spout.pending``); never waits on the broker."""
        if self._halted is not None:
            return
        emit = self._collector.emit_many
        self._emit_retries(emit)
        fetcher = self._fetcher
        buffer = fetcher.buffer
        rows, trees = EMIT_ROWS, self._emit_batch
        while rows > 0 and trees and buffer:
            part, pending = buffer.popleft()
            if not part.revoked and part.records.get(pending.msg_id[2]) is pending:
                rows -= emit(pending.values, pending.msg_id)
                trees -= 1
        self._refill()

    def with_offsets_in(self, field: str) -> RepartitionSpout:
        """A copy of this reader that puts each record's offset in ``field`` of the tuple it
        emits (the message ids of a stateful windowed bolt behind the hop); the reader of
        any other bolt decodes its records as they are."""
        reader = copy.copy(self)
        rows = _OffsetRows(len(self.fields), self.fields.index(field))
        reader.decoder = rows  # type: ignore[assignment]
        return reader

    def changelog_input(self, component: str, key_fields: Sequence[str]) -> Any:
        """What stateful bolt ``component``, grouped on ``key_fields`` behind this reader,
        asks of Kafka to keep its state per partition (a ``ChangelogInput``)."""
        return ChangelogInput(self.group_id, self.topics[0], self.input_topics, component,
                              self.bootstrap_servers, self.consumer_options, self.fields,
                              key_fields)

    async def open(self, conf: Mapping[str, Any], context: Any, collector: Any) -> None:
        """Create or check the topic, then join the group and read it."""
        await ensure_topic(self.bootstrap_servers, self.consumer_options, self.input_topics,
                           self.topics[0])
        await super().open(conf, context, collector)
