"""Repartition topics: a fields grouping carried between engine processes through Kafka.

With ``topology.workers`` above 1 the engine replaces a fields grouping downstream of a
``KafkaSpout`` by a hop (``engine/keyed/hops.py``) made of the two components here:

- ``RepartitionWriter``, a ``KafkaBolt`` that writes each tuple to the topic
  ``<group>-<bolt>-repartition`` as one record: the key is the grouping fields' value (UTF-8
  text for one field, a MessagePack array for several), the value a MessagePack array of
  the tuple's values (``repartition_codec``: each comes back as the type it was, and a
  value of a type the hop does not carry fails its tuple, naming the field), the partition
  Kafka's default one (murmur2 of the key). A tuple is acked once the broker confirmed its
  record, failed with the produce error otherwise: the upstream tree completes when the hop
  has the record.
- ``RepartitionSpout``, a Kafka consumer spout (``ConsumerSpout``) on that topic in the
  upstream spout's group, with its options (retries, failed topic, consumer settings): each
  record starts a new tree, and its offset is committed only when that tree completed. In
  front of a stateful windowed bolt (``with_offsets_in``) it puts each record's offset in
  the bolt's message-id field.

Before either starts, ``ensure_topic`` creates the topic with as many partitions as the
spout's input (``cleanup.policy=delete``, ``retention.ms`` ``RETENTION_MS``), or checks an
existing one: a different partition count is refused with ``PartitionMismatch``, one line
naming the topic and both counts (docs/scaling.md says how to migrate).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any

from connectors.kafka import client_options
from connectors.kafka.bolt import KafkaBolt
from connectors.kafka.codec import DecodeError
from connectors.kafka.consumer_spout import ConsumerSpout
from connectors.kafka.keyed_state import ChangelogInput
from connectors.kafka.keys import KeyPartitions, record_key
from connectors.kafka.repartition_codec import (
    DECODE_ERRORS,
    decode_row,
    encode_row,
    fields_key,
    key_bytes,
)
from connectors.kafka.spout_options import KafkaSpoutMetrics
from connectors.kafka.topics import RETENTION_MS, PartitionMismatch, ensure_topic

__all__ = [
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


_KEY_MEMO = 1 << 16  # grouping values whose key bytes a writer remembers


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
        self._key_of = itemgetter(*self._at)  # several fields: their values, as a tuple
        self._keys: dict[str, bytes] = {}  # str grouping value -> its key bytes

    async def prepare(self, conf: Mapping[str, Any], context: Any, collector: Any) -> None:
        """Create or check the topic, then start the producer."""
        spout = self._spout
        await ensure_topic(spout.bootstrap_servers, spout.consumer_options, spout.topics,
                           self.topic)
        await super().prepare(conf, context, collector)

    def _record(self, tup: Any) -> tuple[bytes | None, bytes | None]:
        values = tup.values
        row = encode_row(values, self._fields)
        if self._one is not None:
            value = values[self._one]
            if type(value) is str:  # the common key: its bytes remembered, as the writer's
                key = self._keys.get(value)  # partitioner remembers its partition
                if key is None:
                    key = self._remember(value)
                return key, row
            return key_bytes(values, self._at), row
        return fields_key(self._key_of(values)), row

    def _remember(self, value: str) -> bytes:
        keys = self._keys
        if len(keys) >= _KEY_MEMO:
            keys.clear()
        key = keys[value] = value.encode("utf-8")
        return key


class _Rows:
    """Decodes a repartition record's value (a MessagePack array) into the tuple's values."""

    __slots__ = ("_n",)

    def __init__(self, n: int) -> None:
        self._n = n

    def __call__(self, record: Any) -> list[Any]:
        try:
            values = decode_row(record.value)
        except DECODE_ERRORS as exc:
            raise DecodeError(f"repartition value is not a row of MessagePack values: "
                              f"{exc}") from None
        if type(values) is not list or len(values) != self._n:
            raise DecodeError(f"repartition value is not an array of {self._n} values")
        return values

    def many(self, records: list[Any]) -> list[list[Any]]:
        """Every record's values; raises ``DecodeError`` if any is not a row (the fetcher
        then decodes them one by one, to name each bad record)."""
        unpack, n = decode_row, self._n
        try:
            rows = [unpack(r.value) for r in records]
        except DECODE_ERRORS as exc:
            raise DecodeError(str(exc)) from None
        for row in rows:
            if type(row) is not list or len(row) != n:
                raise DecodeError("not a row")
        return rows


class _OffsetRows(_Rows):
    """``_Rows`` with each record's offset in place of the value at ``at``: the message id
    of a stateful windowed bolt behind the hop (it grows per partition, and a record read
    again has the same)."""

    __slots__ = ("_at",)

    def __init__(self, n: int, at: int) -> None:
        super().__init__(n)
        self._at = at

    def __call__(self, record: Any) -> list[Any]:
        values = super().__call__(record)
        values[self._at] = record.offset
        return values

    def many(self, records: list[Any]) -> list[list[Any]]:
        """Every record's values, each with its offset at ``at``."""
        rows, at = super().many(records), self._at
        for row, record in zip(rows, records, strict=True):
            row[at] = record.offset
        return rows


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
