"""``KafkaBolt``: every input tuple becomes one Kafka record (docs/kafka.md).

Guarantee: a tuple is acked only after the broker confirmed its record (with the
producer's ``acks``, default ``"all"``), and failed if the produce fails, so the spout
replays it: at least once on ``topic``. ``execute`` does not wait for the confirmation:
records are appended to per-partition batches (``batch_send.py``) and the tuples of a
batch are acked together from its one delivery callback.

A failed produce fails the tuple with the error as its reason (``"MessageSizeTooLargeError:
..."``), so the spout's failed record says why. Errors are not logged per record: an outage
is one WARNING when it starts and one INFO when it ends (``outage.py``; a blackhole, where
records are sent and no answer comes for ``outage_after_secs``, counts as one), and any
other produce error one line per kind per ``log_throttle_secs``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Mapping
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from connectors.kafka import client_options
from connectors.kafka.batch_send import BatchSender
from connectors.kafka.client_start import started
from connectors.kafka.client_stop import close_deadline, stop_by
from connectors.kafka.codec import check_value_format, encode_key, encode_value
from connectors.kafka.kafka_errors import describe, is_outage
from connectors.kafka.outage import IdleProbe, Outage, StallWatch, servers_text
from connectors.kafka.throttle import DEFAULT_INTERVAL_SECS, LogThrottle, throttle_aiokafka
from engine import Bolt
from engine.usercall import fail_on_error

__all__ = ["KafkaBolt"]

log = logging.getLogger("connectors.kafka")

# Batches of up to 256 KB a partition (aiokafka's default is 16 KB, librdkafka's 1 MB): under
# load a send cycle then goes out in one produce request per linger instead of one per
# 16 KB, and each request costs a socket write and the broker's answer (about 12% less CPU
# per record through the Kafka bench). A batch still leaves at most ``linger_ms`` after
# its first record, so latency is unchanged.
_PRODUCER_DEFAULTS: dict[str, Any] = {"acks": "all", "linger_ms": 5,
                                      "max_batch_size": 256 * 1024}


class KafkaBolt(Bolt):
    """Produces ``tup[key_field]`` / ``tup[value_field]`` to ``topic``; declares no output.

    With ``value_field=None`` the value is the tuple's only field for "str"/"bytes", and a
    JSON object of all fields for "json". ``producer_options`` go to ``AIOKafkaProducer``
    (SASL/SSL included, see ``client_options``) and override the bolt's defaults.
    """

    def __init__(self, topic: str, bootstrap_servers: str | list[str], *,
                 key_field: str | None = None, value_field: str | None = None,
                 value_format: str = "str", log_throttle_secs: float = DEFAULT_INTERVAL_SECS,
                 outage_after_secs: float = 15.0, **producer_options: Any) -> None:
        if not isinstance(topic, str) or not topic:
            raise ValueError(f"KafkaBolt: topic must be a non-empty str, got {topic!r}")
        if log_throttle_secs < 0 or outage_after_secs <= 0:
            raise ValueError("KafkaBolt: log_throttle_secs must be >= 0 and "
                             "outage_after_secs > 0")
        self.log_throttle_secs = log_throttle_secs
        self.outage_after_secs = outage_after_secs
        self.topic = topic
        self.bootstrap_servers = bootstrap_servers
        self.key_field = key_field
        self.value_field = value_field
        self.value_format = check_value_format(value_format)
        self.producer_options = client_options.build(producer_options, _PRODUCER_DEFAULTS,
                                                     "KafkaBolt")

    async def prepare(self, conf: Mapping[str, Any], context: Any, collector: Any) -> None:
        """Start this task's producer and its outage watch."""
        self._collector = collector
        self._context = context
        self._loop = asyncio.get_running_loop()
        self._component = context.component_id
        self._outage = Outage(f"KafkaBolt {self._component!r} task {context.task_id}", log,
                              servers_text(self.bootstrap_servers))
        self._throttle = LogThrottle(self.log_throttle_secs)
        throttle_aiokafka(self.log_throttle_secs)
        self._sent = 0
        self._produced = 0
        self._errors = 0
        self._producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap_servers,
                                          **self.producer_options)
        await started(self._producer)
        self._watch_task = asyncio.create_task(self._watch(),
                                               name=f"kafka-bolt-watch-{context.task_id}")
        self._sender = BatchSender(self._producer, self.topic, self._batch_delivered,
                                   partitioner=self.producer_options.get("partitioner"),
                                   linger=self.producer_options.get("linger_ms", 0) / 1000,
                                   max_request_size=self.producer_options.get(
                                       "max_request_size", 1048576), **self._packing())
        await self._sender.start()

    def _packing(self) -> dict[str, Any]:
        """How the sender packs values into records (``BatchSender``'s ``pack`` options):
        not at all, every tuple its own record."""
        return {}

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

    def _record(self, tup: Any) -> tuple[bytes | None, bytes | None]:
        """The key and value bytes of ``tup``'s record."""
        key = encode_key(tup[self.key_field]) if self.key_field is not None else None
        return key, encode_value(self._value(tup), self.value_format)

    async def execute(self, tup: Any) -> None:
        """Hand the record to the producer; the ack or fail follows the broker's answer."""
        settle = self.execute_batch((tup,))
        if settle is not None:
            await settle

    @property
    def executes_batches(self) -> bool:
        """The bolt executor hands whole queue batches to ``execute_batch``, unless a
        subclass overrides ``execute`` (then its ``execute`` runs per tuple, as written)."""
        return type(self).execute is KafkaBolt.execute

    def execute_batch(self, batch: list[Any] | tuple[Any, ...]) -> Awaitable[None] | None:
        """``execute`` for each tuple of a queue batch, without a coroutine per tuple: every
        record is handed to the producer's batches at once; the returned wait (for room
        among them, if they are full) holds no tuple. A tuple whose record cannot be made
        (a missing field, a value its format cannot encode) fails alone."""
        sender = self._sender
        add, record, fmt = sender.add_nowait, self._record, self.value_format
        by_field = self._by_field
        layout: Any = None
        at_key = at_value = -1
        full = False
        for tup in batch:
            if tup.is_tick():
                continue
            try:
                if by_field:  # the common case, inlined: one field each, no JSON
                    fields = tup.fields
                    if fields is not layout:
                        at_key, at_value = self._field_indexes(fields)
                        layout = fields
                    values = tup.values
                    key = values[at_key] if at_key >= 0 else None
                    value = values[at_value]
                    if type(key) is not bytes and key is not None:
                        key = encode_key(key)
                    if type(value) is not bytes and value is not None:
                        value = encode_value(value, fmt)
                else:
                    key, value = record(tup)
                self._sent += 1
                full = not add(key, value, tup) or full
            except KafkaError as exc:  # refused before sending (too large, no metadata)
                self._failed(tup, exc)
            except BaseException as exc:
                fail_on_error(self._collector, exc, (tup,))
        return sender.room() if full else None

    @property
    def _by_field(self) -> bool:
        """Whether a record is the tuple's ``key_field`` and ``value_field`` as they are
        (bytes) or encoded alone: what ``execute_batch`` inlines. Not for JSON values, nor
        for a subclass that makes its records otherwise."""
        cls = type(self)
        return (self.value_field is not None and self.value_format != "json"
                and cls._record is KafkaBolt._record and cls._value is KafkaBolt._value)

    def _field_indexes(self, fields: Any) -> tuple[int, int]:
        """Where ``key_field`` (-1: none) and ``value_field`` are among ``fields``; raises
        the tuple's own error for a field it does not have."""
        assert self.value_field is not None
        at_key = -1 if self.key_field is None else fields.index(self.key_field)
        return at_key, fields.index(self.value_field)

    def _batch_delivered(self, tuples: list[Any], future: Any) -> None:
        """Ack the batch's tuples if it was stored, else fail them. ``future`` comes
        checked (``batch_send.checked``): a confirmation for another topic or partition
        than the batch was sent to, or without an offset, arrives as a failure."""
        if not future.cancelled() and future.exception() is None:
            self._produced += len(tuples)
            ack = self._collector.ack
            for tup in tuples:
                ack(tup)
            if self._outage.down_since is not None:
                self._outage.up(self._loop.time())
            return
        for tup in tuples:
            self._delivered(tup, future)

    def _delivered(self, tup: Any, future: Any) -> None:
        exc = None if future.cancelled() else future.exception()
        if exc is None and not future.cancelled():
            self._produced += 1
            self._collector.ack(tup)
            if self._outage.down_since is not None:
                self._outage.up(self._loop.time())
            return
        self._failed(tup, exc or asyncio.CancelledError("produce cancelled"))

    def _failed(self, tup: Any, exc: BaseException) -> None:
        """Fail ``tup`` with ``exc`` as its reason; log the outage or the error kind once."""
        self._errors += 1
        reason = describe(exc)
        self._collector.fail(tup, reason=reason)
        now = self._loop.time()
        if is_outage(exc):
            self._outage.down(now, reason)
            return
        allowed, held = self._throttle.allow(type(exc), now)
        if allowed:
            log.error("%s: produce to %r failed, tuple failed (%s)%s", self._component,
                      self.topic, reason, f"; {held} more since the last line" if held else "")

    async def _watch(self) -> None:
        """Every second: an outage when sends stay unanswered (a blackhole); the next
        confirmed record ends it. While nothing waits for an answer, a metadata request
        every third of ``outage_after_secs`` (``IdleProbe``) finds an outage all the same:
        a bolt with nothing to send (its spouts cut off by the same outage) says so too."""
        stall = StallWatch()
        after = self.outage_after_secs
        idle = IdleProbe(self._outage, after, max(1.0, after / 3),
                         "a metadata request sent while idle",
                         lambda exc: f"{type(exc).__name__}: {exc}")
        metadata = self._producer.client.fetch_all_metadata
        try:
            while True:
                await asyncio.sleep(1.0)
                now = self._loop.time()
                answered = self._produced + self._errors
                waiting = self._sent > answered
                still = stall.check(answered, waiting, now)
                if still >= after:
                    self._outage.down(now - still, f"no produce answered for {still:.0f} s")
                idle.look(now, None if waiting else metadata)
        finally:
            await idle.close()

    def metrics(self) -> dict[str, Any]:
        """This task's records confirmed by the broker and produce errors (failed tuples)."""
        return {"produced": getattr(self, "_produced", 0),
                "produce_errors": getattr(self, "_errors", 0)}

    async def cleanup(self) -> None:
        """Hand outstanding records to the producer and stop it (it flushes: their tuples
        are acked or failed), by the stop's deadline (``context.stop_deadline``,
        ``client_stop``); past it, what is left is dropped with one WARNING and its tuples
        time out (the spout replays them)."""
        loop = asyncio.get_running_loop()
        deadline = close_deadline(getattr(self, "_context", None), loop.time())
        sender = getattr(self, "_sender", None)
        if sender is not None:
            try:
                async with asyncio.timeout_at(deadline):
                    await sender.close()
            except TimeoutError:
                await sender.close(flush=False)
                log.warning("%s: records not handed to the producer by the stop's deadline "
                            "were dropped; their tuples time out and are replayed",
                            self._component)
        task = getattr(self, "_watch_task", None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        producer = getattr(self, "_producer", None)
        if producer is not None:
            await stop_by(producer, deadline, f"KafkaBolt {self._component!r}")
