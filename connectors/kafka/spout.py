"""``KafkaSpout``: one tracked tuple per Kafka record, at least once (api.md §10).

Prior art: storm-kafka-client's ``KafkaSpout`` (storm-internals.md §2.3), on aiokafka, with
one deliberate difference: after the last retry the record itself goes to ``failed_topic``
(Storm acks and drops it).

Guarantees, per record of an assigned partition:

- it is emitted with ``msg_id = (topic, partition, offset)``; a failed tuple is re-emitted
  after an exponential backoff, at most ``max_retries`` times;
- then, or at once if it cannot be decoded, one failed-record JSON (``failed.py``) is written
  to ``failed_topic``, and only once the broker confirmed it does the offset count as done;
- a partition's committed offset never passes a record that is not done, so a crash or a
  rebalance re-reads (and re-emits) only records not yet done: at least once, with
  duplicates bounded by what was in flight;
- an offset already committed is never emitted again by this task.

Without ``failed_topic``, a given-up record is logged, counted in ``metrics.dropped`` and its
offset counts as done (Storm's behaviour). A failed-topic write that fails is retried every
second while the partition is owned, holding back that partition's commits meanwhile.

Records live in the task's memory between fetch and done (retries are replayed from there,
not re-fetched); ``max_uncommitted_offsets`` per partition bounds that.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from connectors.kafka.codec import Decoder
from connectors.kafka.failed import FailedRecord
from connectors.kafka.failed_writer import FailedWriter
from connectors.kafka.fetcher import Fetcher, MsgId, Partition, Pending
from connectors.kafka.retry import Backoff, RetryQueue
from engine import Spout

__all__ = ["KafkaSpout", "KafkaSpoutMetrics"]

log = logging.getLogger("connectors.kafka")

EMIT_BATCH = 100
"""Most tuples one ``next_tuple`` call emits (fewer under ``topology.max.spout.pending``)."""

_CONSUMER_DEFAULTS: dict[str, Any] = {
    "enable_auto_commit": False,
    "auto_offset_reset": "earliest",  # as storm-kafka-client's UNCOMMITTED_EARLIEST
}

_FORBIDDEN = {
    "enable_auto_commit": "the spout commits only what is done; auto commit would lose records",
    "key_deserializer": "use value_format; the spout decodes so bad records reach failed_topic",
    "value_deserializer": "use value_format; the spout decodes so bad records reach failed_topic",
}

# Connection and security options the failed-topic producer shares with the consumer.
_SHARED_CLIENT_OPTIONS = (
    "client_id", "api_version", "request_timeout_ms", "retry_backoff_ms", "metadata_max_age_ms",
    "connections_max_idle_ms", "security_protocol", "ssl_context", "sasl_mechanism",
    "sasl_plain_username", "sasl_plain_password", "sasl_kerberos_service_name",
    "sasl_kerberos_domain_name", "sasl_oauth_token_provider",
)


@dataclass(slots=True)
class KafkaSpoutMetrics:
    """Counters of one ``KafkaSpout`` instance, shared by all its tasks (api.md §2)."""

    retried: int = 0
    """Re-emits after a fail."""
    failed_records: int = 0
    """Records written to ``failed_topic`` (given up, or undecodable)."""
    decode_failures: int = 0
    """Records whose key or value did not decode with ``value_format``."""
    dropped: int = 0
    """Records given up with no ``failed_topic`` set (logged, offset done, as Storm)."""


def consumer_config(consumer_options: Mapping[str, Any]) -> dict[str, Any]:
    """The spout's consumer defaults overlaid with the user's options (theirs win)."""
    for key, why in _FORBIDDEN.items():
        if key in consumer_options and not (key == "enable_auto_commit"
                                            and not consumer_options[key]):
            raise ValueError(f"KafkaSpout: consumer option {key!r} is not supported: {why}")
    return {**_CONSUMER_DEFAULTS, **consumer_options}


def producer_config(consumer_options: Mapping[str, Any]) -> dict[str, Any]:
    """Options of the failed-topic producer: the consumer's connection and security ones."""
    shared = {k: v for k, v in consumer_options.items() if k in _SHARED_CLIENT_OPTIONS}
    return {"acks": "all", **shared}


class KafkaSpout(Spout):
    """Consumer-group subscription to ``topics``; emits ``fields`` of each record.

    ``fields`` are taken from the record: any of ``topic``, ``partition``, ``offset``,
    ``key``, ``value``, ``timestamp``, ``headers``. Extra keywords beyond api.md:
    ``max_uncommitted_offsets`` (per partition, pause above it), ``commit_interval_secs``
    (periodic commit), ``buffer_size`` (records fetched ahead). Everything else is passed to
    ``AIOKafkaConsumer`` (SASL/SSL included) and overrides the spout's defaults.
    """

    shared_across_processes = True
    """Engine processes running it split the partitions through the consumer group."""

    def __init__(self, topics: str | Iterable[str], bootstrap_servers: str | list[str],
                 group_id: str, *, fields: Sequence[str] = ("key", "value"),
                 value_format: str = "str", max_retries: int = 3,
                 retry_backoff_secs: tuple[float, float] = (0.5, 30.0),
                 failed_topic: str | None = None, max_uncommitted_offsets: int = 10_000,
                 commit_interval_secs: float = 5.0, buffer_size: int = 10_000,
                 **consumer_options: Any) -> None:
        self.topics = [topics] if isinstance(topics, str) else list(topics)
        if not self.topics or not all(isinstance(t, str) and t for t in self.topics):
            raise ValueError(f"KafkaSpout: topics must be a topic name or a non-empty list "
                             f"of names, got {topics!r}")
        if max_uncommitted_offsets < 1 or buffer_size < 1 or commit_interval_secs <= 0:
            raise ValueError("KafkaSpout: max_uncommitted_offsets and buffer_size must be "
                             ">= 1 and commit_interval_secs > 0")
        self.bootstrap_servers = bootstrap_servers
        self.group_id = group_id
        self.fields = tuple(fields)
        self.value_format = value_format
        self.decoder = Decoder(self.fields, value_format)
        initial, maximum = retry_backoff_secs
        self.backoff = Backoff(initial, maximum, max_retries)
        self.failed_topic = failed_topic
        self.max_uncommitted_offsets = max_uncommitted_offsets
        self.commit_interval_secs = commit_interval_secs
        self.buffer_size = buffer_size
        self.consumer_options = consumer_config(consumer_options)
        self.metrics = KafkaSpoutMetrics()

    def declare_output_fields(self, declarer: Any) -> None:
        """One stream, ``default``, with ``fields``."""
        declarer.declare(list(self.fields))

    async def open(self, conf: Mapping[str, Any], context: Any, collector: Any) -> None:
        """Connect, join the group and start the fetch and failed-topic loops."""
        self._collector = collector
        self._topology = getattr(context, "topology_name", None) or conf.get("topology.name")
        self._component = context.component_id
        max_pending = conf.get("topology.max.spout.pending")
        self._emit_batch = min(EMIT_BATCH, max_pending) if max_pending else EMIT_BATCH
        self._retries: RetryQueue[tuple[Partition, Pending]] = RetryQueue()
        self._tasks: list[asyncio.Task[None]] = []
        self._producer: AIOKafkaProducer | None = None
        self._writer: FailedWriter | None = None
        self._consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap_servers,
                                          group_id=self.group_id, **self.consumer_options)
        self._fetcher = Fetcher(
            self._consumer, self.decoder, self._undecodable, self._before_revoke,
            max_uncommitted=self.max_uncommitted_offsets, max_buffer=self.buffer_size,
            commit_interval=self.commit_interval_secs)
        try:
            await self._start_clients()
        except BaseException:
            await self._stop_clients()
            raise
        self._tasks.append(asyncio.create_task(self._fetcher.run(self._report),
                                               name=f"kafka-fetch-{context.task_id}"))
        if self._writer is not None:
            self._tasks.append(asyncio.create_task(self._writer.run(),
                                                   name=f"kafka-failed-{context.task_id}"))

    async def _start_clients(self) -> None:
        if self.failed_topic is not None:
            self._producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap_servers,
                                              **producer_config(self.consumer_options))
            await self._producer.start()
            self._writer = FailedWriter(self._producer, self.failed_topic)
        await self._consumer.start()
        self._consumer.subscribe(self.topics, listener=self._fetcher.listener)

    def next_tuple(self) -> None:
        """Emit due retries, then buffered records; never waits on the broker."""
        emit = self._collector.emit
        retries = self._retries
        if len(retries):
            for part, pending in retries.pop_ready(time.monotonic()):
                if part.holds(pending):
                    self.metrics.retried += 1
                    emit(pending.values, pending.msg_id)
        fetcher = self._fetcher
        buffer = fetcher.buffer
        n = self._emit_batch
        while n and buffer:
            part, pending = buffer.popleft()
            if part.holds(pending):
                emit(pending.values, pending.msg_id)
                n -= 1
        if len(buffer) <= fetcher.max_buffer // 2 and not fetcher.wake.is_set():
            fetcher.wake.set()

    def ack(self, msg_id: MsgId) -> None:
        """The record's tree completed: its offset is done."""
        self._fetcher.ack(msg_id)

    def fail(self, msg_id: MsgId) -> None:
        """Schedule a retry, or after ``max_retries`` write the record to ``failed_topic``."""
        found = self._fetcher.lookup(msg_id)
        if found is None:
            return  # partition revoked since the emit: its new owner re-reads the record
        part, pending = found
        pending.failures += 1
        delay = self.backoff.delay(pending.failures)
        if delay is not None:
            self._retries.schedule((part, pending), time.monotonic() + delay)
            return
        attempts = pending.failures
        self._give_up(part, pending, attempts,
                      f"tuple failed {attempts} times (max_retries={self.backoff.max_retries})")

    def _undecodable(self, part: Partition, pending: Pending, reason: str) -> None:
        self.metrics.decode_failures += 1
        log.warning("%s: record %s not decodable: %s", self._component, pending.msg_id, reason)
        self._give_up(part, pending, 0, reason)

    def _give_up(self, part: Partition, pending: Pending, attempts: int, reason: str) -> None:
        if self._writer is None:
            self.metrics.dropped += 1
            log.warning("%s: dropping record %s (no failed_topic): %s",
                        self._component, pending.msg_id, reason)
            self._fetcher.done(part, pending)
            return
        rec = pending.record
        payload = FailedRecord.now(
            rec.topic, rec.partition, rec.offset, rec.key, rec.value or b"", attempts, reason,
            self._topology, self._component).to_json()

        def written() -> None:
            self.metrics.failed_records += 1
            self._fetcher.done(part, pending)

        self._writer.submit(payload, written, lambda: part.holds(pending))

    async def _before_revoke(self, parts: list[Partition]) -> None:
        # Let failed-topic writes of revoked records land so the commit can pass them;
        # otherwise the new owner would write them again.
        if self._writer is not None and self._writer.outstanding:
            await self._writer.wait_idle(5.0)

    def _report(self, exc: BaseException) -> None:
        self._collector.report_error(exc)

    async def close(self) -> None:
        """Stop fetching, let failed-topic writes land, commit what is done, leave the group."""
        if not hasattr(self, "_fetcher"):
            return  # never opened
        tasks = self._tasks
        if tasks:
            await _cancel(tasks[0])
        if self._writer is not None:
            await self._writer.wait_idle(10.0)
        for task in tasks[1:]:
            await _cancel(task)
        self._tasks = []
        await self._fetcher.commit()
        await self._stop_clients()

    async def _stop_clients(self) -> None:
        with contextlib.suppress(Exception):
            await self._consumer.stop()
        if self._producer is not None:
            with contextlib.suppress(Exception):
                await self._producer.stop()


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
