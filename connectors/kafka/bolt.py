"""``KafkaBolt``: every input tuple becomes one Kafka record (api.md §10).

Guarantee: a tuple is acked only after the broker confirmed its record (with the
producer's ``acks``, default ``"all"``), and failed if the produce fails, so the spout
replays it: at least once on ``topic``. ``execute`` does not wait for the confirmation:
records are appended to per-partition batches (``batch_send.py``) and the tuples of a
batch are acked together from its one delivery callback.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from aiokafka import AIOKafkaProducer

from connectors.kafka.batch_send import BatchSender
from connectors.kafka.codec import check_value_format, encode_key, encode_value
from engine import Bolt

__all__ = ["KafkaBolt"]

log = logging.getLogger("connectors.kafka")

_PRODUCER_DEFAULTS: dict[str, Any] = {"acks": "all", "linger_ms": 5}


class KafkaBolt(Bolt):
    """Produces ``tup[key_field]`` / ``tup[value_field]`` to ``topic``; declares no output.

    With ``value_field=None`` the value is the tuple's only field for "str"/"bytes", and a
    JSON object of all fields for "json". ``producer_options`` go to ``AIOKafkaProducer``
    (SASL/SSL included) and override the bolt's defaults.
    """

    def __init__(self, topic: str, bootstrap_servers: str | list[str], *,
                 key_field: str | None = None, value_field: str | None = None,
                 value_format: str = "str", **producer_options: Any) -> None:
        if not isinstance(topic, str) or not topic:
            raise ValueError(f"KafkaBolt: topic must be a non-empty str, got {topic!r}")
        self.topic = topic
        self.bootstrap_servers = bootstrap_servers
        self.key_field = key_field
        self.value_field = value_field
        self.value_format = check_value_format(value_format)
        self.producer_options = {**_PRODUCER_DEFAULTS, **producer_options}

    async def prepare(self, conf: Mapping[str, Any], context: Any, collector: Any) -> None:
        """Start this task's producer."""
        self._collector = collector
        self._producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap_servers,
                                          **self.producer_options)
        await self._producer.start()
        self._sender = BatchSender(self._producer, self.topic, self._batch_delivered,
                                   partitioner=self.producer_options.get("partitioner"),
                                   linger=self.producer_options.get("linger_ms", 0) / 1000,
                                   max_request_size=self.producer_options.get(
                                       "max_request_size", 1048576))
        await self._sender.start()

    def _value(self, tup: Any) -> Any:
        if self.value_field is not None:
            return tup[self.value_field]
        if self.value_format == "json":
            return dict(zip(tup.fields, tup.values, strict=True))
        if len(tup) == 1:
            return tup[0]
        raise ValueError(f"KafkaBolt: value_field is not set and tuples from "
                         f"{tup.source_component!r} have fields {list(tup.fields)}; "
                         f"set value_field (or value_format='json' for all fields)")

    async def execute(self, tup: Any) -> None:
        """Hand the record to the producer; the ack or fail follows the broker's answer."""
        if tup.is_tick():
            return
        key = encode_key(tup[self.key_field]) if self.key_field is not None else None
        value = encode_value(self._value(tup), self.value_format)
        await self._sender.add(key, value, tup)

    def _batch_delivered(self, tuples: list[Any], future: Any) -> None:
        if not future.cancelled() and future.exception() is None:
            ack = self._collector.ack
            for tup in tuples:
                ack(tup)
            return
        for tup in tuples:
            self._delivered(tup, future)

    def _delivered(self, tup: Any, future: Any) -> None:
        exc = None if future.cancelled() else future.exception()
        if exc is None and not future.cancelled():
            self._collector.ack(tup)
            return
        self._collector.fail(tup)
        if exc is not None:
            self._collector.report_error(exc)

    async def cleanup(self) -> None:
        """Wait for outstanding records (their tuples are acked or failed), then stop."""
        sender = getattr(self, "_sender", None)
        if sender is not None:
            await sender.close()
        producer = getattr(self, "_producer", None)
        if producer is not None:
            await producer.stop()  # flushes first
