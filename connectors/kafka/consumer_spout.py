"""The Kafka consumer spout behind ``KafkaSpout``: one tracked tuple per Kafka record, at
least once (docs/kafka.md).

Prior art: storm-kafka-client's ``KafkaSpout``, on aiokafka, with
one deliberate difference: after the last retry the record itself goes to ``failed_topic``
(Storm acks and drops it).

Guarantees, per record of an assigned partition:

- it is emitted with ``msg_id = (topic, partition, offset)``; a failed tuple is re-emitted
  after an exponential backoff, at most ``max_retries`` times;
- then, or at once if it cannot be decoded, one failed-record JSON (``failed.py``) is written
  to ``failed_topic``, and only once the broker confirmed it does the offset count as done;
- a partition's committed offset never passes a record that is not done, and only moves
  forward, so a rebalance re-reads (and re-emits) only records not yet done, a crash also
  those done since the last commit: at least once, with duplicates bounded by what was in
  flight and by how often the spout commits (``commits.py``);
- an offset already committed is never emitted again by this task.

Without ``failed_topic``, a given-up record is logged, counted in ``counters.dropped`` and
its offset counts as done (Storm's behaviour).

The failure path (``docs/kafka.md``):

- the failed record's ``reason`` is the last failure's cause as the engine reports it to
  ``fail(msg_id, reason=...)``: the bolt's exception (with ``error_trace``), the reason
  given to ``collector.fail``, or ``"timed out after T s"``; fails are also logged, at most
  once per ``log_throttle_secs``;
- a record the replay job wrote back carries its first failure's coordinates and attempts
  in headers: its next failed record keeps those coordinates and keeps counting attempts;
- a failed record too large for the failed topic is cut to fit (``fit.py``); a failed
  topic that refuses records for good (invalid, not authorised) halts the spout;
- with ``dead_letter_limit`` (``breaker.py``) the spout halts once too many records are
  given up: halted, it emits nothing, pauses every partition and commits nothing more,
  after one CRITICAL line; ``counters.halted`` and ``metrics()`` say why;
- at start, an input topic that did not exist (a broker that creates topics on use made
  it, empty) or that holds no record is one WARNING line (``input_check.py``);
- a broker outage or a stalled fetch (no answer for ``outage_after_secs``: a network
  blackhole) is one WARNING, its end one INFO with its length (``outage.py``), also while
  every partition is paused (a probe then asks the broker, ``broker_watch.py``);
- a group rebalance is not an outage: its end is one INFO with its length and cause, one
  running for ``outage_after_secs`` one WARNING (``rebalance.py``).

With ``topology.worker.id`` set (``--workers`` sets it), each task's consumer is a static
member of the group, its id from the worker, the component and the task, so that a
restarted process takes its own partitions back (``static_member.py``).

Records live in the task's memory between fetch and done (retries are replayed from there,
not re-fetched); ``max_uncommitted_offsets`` per partition bounds that.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from connectors.kafka import assignor, client_options, input_check, revocations
from connectors.kafka.alone import SplitWatch
from connectors.kafka.breaker import DeadLetterBreaker, DeadLetterLimit
from connectors.kafka.broker_watch import BrokerWatch
from connectors.kafka.client_stop import CLOSE_FLOOR_SECS, close_deadline, stop_by
from connectors.kafka.codec import Decoder
from connectors.kafka.failed import FailedRecord, ReplayOrigin
from connectors.kafka.failed_writer import FailedWriter
from connectors.kafka.fetcher import Fetcher, MsgId, Partition, Pending
from connectors.kafka.kafka_errors import describe, is_outage
from connectors.kafka.outage import Outage, servers_text
from connectors.kafka.rebalance import RebalanceWatch
from connectors.kafka.retry import RetryQueue
from connectors.kafka.spout_options import (
    DEFAULT_FAILED_MAX_BYTES,
    KafkaSpoutMetrics,
    backoff,
    consumer_config,
    producer_config,
)
from connectors.kafka.static_member import instance_id
from connectors.kafka.throttle import DEFAULT_INTERVAL_SECS, LogThrottle, throttle_aiokafka
from engine import Spout
from engine.keyed import TopologyFingerprint

__all__ = ["ConsumerSpout", "KafkaSpoutMetrics"]

log = logging.getLogger("connectors.kafka")

EMIT_BATCH = 100
"""Most tuples one ``next_tuple`` call emits (fewer under ``topology.max.spout.pending``)."""
EMIT_ROWS = 1000
"""About the most tuples one ``next_tuple`` call emits where a record carries several."""

_WATCH_SECS = 1.0  # how often the outage watch and the breaker's window look


class ConsumerSpout(Spout):
    """Everything of ``KafkaSpout`` (see its docstring for the options and guarantees) but
    carrying a fields grouping across processes: the base of the spout users build and of
    the repartition hop's reader."""

    shared_across_processes = True
    """Engine processes running it split the partitions through the consumer group."""

    checks_input = True
    """At start, say in one WARNING line if an input topic did not exist or holds no record
    (``input_check.py``); off for the engine's own topics, empty at first by design."""

    keyed_downstream = False
    """Set by the engine when a fields grouping downstream stays in process
    (``topology.workers`` 1): a task then says so if its process is not alone in the group."""

    hop_format = 2
    """The layout of the records its repartition hops write (2: the rows bound for one
    partition packed into one record), stated in the topology's fingerprint."""

    topology_fingerprint: TopologyFingerprint | None = None
    """What the engine process runs, as this spout's consumers state it to their group
    (``connectors.kafka.assignor``); None outside the engine's runtime."""

    def set_topology_fingerprint(self, fingerprint: TopologyFingerprint) -> None:
        """Given by the engine before ``open``: members of the group that state another
        topology are refused, and so is this one if the group runs another."""
        self.topology_fingerprint = fingerprint

    def __init__(self, topics: str | Iterable[str], bootstrap_servers: str | list[str],
                 group_id: str, *, fields: Sequence[str] = ("key", "value"),
                 value_format: str = "str", max_retries: int = 3,
                 retry_backoff_secs: float | tuple[float, float] = (0.5, 30.0),
                 failed_topic: str | None = None, max_uncommitted_offsets: int = 250_000,
                 commit_interval_secs: float = 5.0, buffer_size: int = 10_000,
                 dead_letter_limit: DeadLetterLimit | None = None,
                 failed_max_bytes: int | None = None,
                 log_throttle_secs: float = DEFAULT_INTERVAL_SECS,
                 outage_after_secs: float = 15.0, revoke_drain_secs: float = 2.0,
                 **consumer_options: Any) -> None:
        self.topics = [topics] if isinstance(topics, str) else list(topics)
        if not self.topics or not all(isinstance(t, str) and t for t in self.topics):
            raise ValueError(f"KafkaSpout: topics must be a topic name or a non-empty list "
                             f"of names, got {topics!r}")
        if max_uncommitted_offsets < 1 or buffer_size < 1 or commit_interval_secs <= 0:
            raise ValueError("KafkaSpout: max_uncommitted_offsets and buffer_size must be "
                             ">= 1 and commit_interval_secs > 0")
        if log_throttle_secs < 0 or outage_after_secs <= 0 or revoke_drain_secs < 0:
            raise ValueError("KafkaSpout: log_throttle_secs and revoke_drain_secs must be "
                             ">= 0 and outage_after_secs > 0")
        self.bootstrap_servers = bootstrap_servers
        self.group_id = group_id
        self.fields = tuple(fields)
        self.value_format = value_format
        self.decoder = Decoder(self.fields, value_format)
        self.backoff = backoff(retry_backoff_secs, max_retries)
        self.failed_topic = failed_topic
        self.max_uncommitted_offsets = max_uncommitted_offsets
        self.commit_interval_secs = commit_interval_secs
        self.buffer_size = buffer_size
        self.dead_letter_limit = dead_letter_limit
        self.log_throttle_secs = log_throttle_secs
        self.outage_after_secs = outage_after_secs
        self.revoke_drain_secs = revoke_drain_secs
        self.consumer_options = client_options.build(consumer_config(consumer_options),
                                                     who="KafkaSpout")
        self.failed_max_bytes = (DEFAULT_FAILED_MAX_BYTES if failed_max_bytes is None
                                 else failed_max_bytes)
        self.counters = KafkaSpoutMetrics()
        self._dropped = 0

    def declare_output_fields(self, declarer: Any) -> None:
        """One stream, ``default``, with ``fields``."""
        declarer.declare(list(self.fields))

    async def open(self, conf: Mapping[str, Any], context: Any, collector: Any) -> None:
        """Connect, join the group and start the fetch, failed-topic and watch loops."""
        self._collector = collector
        self._context = context
        self._topology = getattr(context, "topology_name", None) or conf.get("topology.name")
        self._component = context.component_id
        self._loop = asyncio.get_running_loop()
        who = f"KafkaSpout {self._component!r} task {context.task_id}"
        self._outage = Outage(who, log, servers_text(self.bootstrap_servers))
        self._split = SplitWatch(self._component, context.task_id, self.group_id,
                                 self.topics) if self.keyed_downstream else None
        self._throttle = LogThrottle(self.log_throttle_secs)
        throttle_aiokafka(self.log_throttle_secs)
        limit = self.dead_letter_limit
        self._breaker = None if limit is None else DeadLetterBreaker(limit)
        self._halted: str | None = None
        self._written = 0
        max_pending = conf.get("topology.max.spout.pending")
        self._emit_batch = min(EMIT_BATCH, max_pending) if max_pending else EMIT_BATCH
        self._retries: RetryQueue[tuple[Partition, Pending]] = RetryQueue()
        self._tasks: list[asyncio.Task[None]] = []
        self._producer: AIOKafkaProducer | None = None
        self._writer: FailedWriter | None = None
        static_id = instance_id(conf, context, self.consumer_options, log)
        self._consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap_servers,
                                          group_id=self.group_id, **self.consumer_options,
                                          group_instance_id=static_id,
                                          **assignor.strategy(
                                              self.consumer_options, self.topology_fingerprint,
                                              self.group_id, who, context.refuse))
        self._fetcher = Fetcher(
            self._consumer, self.decoder, self._undecodable, self._before_revoke,
            max_uncommitted=self.max_uncommitted_offsets, max_buffer=self.buffer_size,
            commit_interval=self.commit_interval_secs,
            commit_every=max_pending or self.max_uncommitted_offsets,
            drain_secs=self.revoke_drain_secs)
        self._fetcher.on_commit_error = self._report
        self._fetcher.held_back = functools.partial(revocations.held_back, self.group_id)
        self._fetcher.on_assigned = functools.partial(revocations.assigned, self.group_id)
        revocations.track(self.group_id, self._fetcher.position)
        self._rebalance = RebalanceWatch(self._fetcher.listener, self._consumer, who, log,
                                         self.outage_after_secs, self._loop.time)
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
        self._tasks.append(asyncio.create_task(self._watch(),
                                               name=f"kafka-watch-{context.task_id}"))
        if self._input_missing is not None:  # first task of this group and topics here
            self._tasks.append(asyncio.create_task(input_check.warn_if_idle(
                self._consumer, f"KafkaSpout {self._component!r}", self.topics,
                self._input_missing, self.bootstrap_servers, self.consumer_options),
                name=f"kafka-input-check-{context.task_id}"))

    async def _start_clients(self) -> None:
        if self.failed_topic is not None:
            self._producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap_servers,
                                              **producer_config(self.consumer_options))
            await self._producer.start()
            self._writer = FailedWriter(
                self._producer, self.failed_topic, max_bytes=self.failed_max_bytes,
                on_unwritable=self.halt, outage=self._outage, throttle=self._throttle)
        await self._consumer.start()
        self._input_missing = (await input_check.missing_before(
            self._consumer, self.group_id, self.topics) if self.checks_input else None)
        self._consumer.subscribe(self.topics, listener=self._rebalance)

    def next_tuple(self) -> None:
        """Emit due retries, then buffered records; never waits on the broker."""
        if self._halted is not None:
            return
        emit = self._collector.emit
        self._emit_retries(emit)
        fetcher = self._fetcher
        buffer = fetcher.buffer
        n = self._emit_batch
        while n and buffer:
            part, pending = buffer.popleft()
            # ``part.holds(pending)``, inlined: this runs once per record.
            if not part.revoked and part.records.get(pending.msg_id[2]) is pending:
                emit(pending.values, pending.msg_id)
                n -= 1
        self._refill()

    def _emit_retries(self, emit: Any) -> None:
        """Emit, with ``emit``, the records whose retry is due."""
        retries = self._retries
        if len(retries):
            for part, pending in retries.pop_ready(self._loop.time()):
                if part.holds(pending):
                    self.counters.retried += 1
                    emit(pending.values, pending.msg_id)

    def _refill(self) -> None:
        """Wake the fetcher once the buffer is half empty."""
        fetcher = self._fetcher
        if len(fetcher.buffer) <= fetcher.max_buffer // 2 and not fetcher.wake.is_set():
            fetcher.wake.set()

    def ack(self, msg_id: MsgId) -> None:
        """The record's tree completed: its offset is done."""
        self.ack_many([msg_id])

    def ack_many(self, msg_ids: list[MsgId]) -> None:
        """``ack`` for each of ``msg_ids``, in one call (the engine batches a run of acks)."""
        self._fetcher.ack_many(msg_ids)
        if self._breaker is not None:
            self._breaker.ok += len(msg_ids)

    def fail(self, msg_id: MsgId, reason: Any = None) -> None:
        """Schedule a retry, or after ``max_retries`` write the record to ``failed_topic``.

        ``reason`` (an ``engine.FailReason``, when the engine knows one) becomes the failed
        record's ``reason`` and ``error_trace`` if this was the last retry.
        """
        if reason is not None:
            self._log_fail(msg_id, reason)
        found = self._fetcher.lookup(msg_id)
        if found is None:
            return  # partition revoked since the emit: its new owner re-reads the record
        part, pending = found
        pending.failures += 1
        pending.reason = reason
        delay = self.backoff.delay(pending.failures)
        if delay is not None:
            self._retries.schedule((part, pending), self._loop.time() + delay)
            return
        attempts = pending.failures
        if reason is None:
            self._give_up(part, pending, attempts, f"tuple failed {attempts} times "
                          f"(max_retries={self.backoff.max_retries})")
        else:
            self._give_up(part, pending, attempts, reason.message, reason.trace,
                          reason.component)

    def _log_fail(self, msg_id: MsgId, reason: Any) -> None:
        allowed, held = self._throttle.allow(("fail", reason.kind), self._loop.time())
        if allowed:
            more = f"; {held} more {reason.kind} fails since the last line" if held else ""
            log.warning("%s: tuple of record %s failed (%s%s): %s%s", self._component,
                        msg_id, reason.kind, "" if reason.component is None
                        else f" in {reason.component!r}", reason.message, more)

    def _undecodable(self, part: Partition, pending: Pending, reason: str) -> None:
        self.counters.decode_failures += 1
        allowed, held = self._throttle.allow("undecodable", self._loop.time())
        if allowed:
            log.warning("%s: record %s not decodable: %s%s", self._component, pending.msg_id,
                        reason, f" ({held} more since the last line)" if held else "")
        self._give_up(part, pending, 1, reason)

    def _give_up(self, part: Partition, pending: Pending, attempts: int, reason: str,
                 trace: str | None = None, failed_by: str | None = None) -> None:
        if self._halted is not None:
            return  # left undone and uncommitted: read again after the restart
        breaker = self._breaker
        if breaker is not None:
            tripped = breaker.give_up(self._loop.time())
            if tripped is not None:
                self.halt(f"dead-letter limit passed: {tripped}")
        if self._writer is None:
            self.counters.dropped += 1  # counters are shared by the tasks; _dropped is this one's
            self._dropped += 1
            allowed, held = self._throttle.allow("dropped", self._loop.time())
            if allowed:
                log.warning("%s: dropping record %s (no failed_topic): %s%s", self._component,
                            pending.msg_id, reason,
                            f" ({held} more dropped since the last line)" if held else "")
            self._fetcher.done(part, pending)
            return
        rec = pending.record
        where: dict[str, Any] = {"error_trace": trace, "failed_by": failed_by}
        origin = ReplayOrigin.from_headers(rec.headers)
        topic, partition, offset = rec.topic, rec.partition, rec.offset
        if origin is not None:
            topic, partition, offset = origin.topic, origin.partition, origin.offset
            attempts += origin.attempts
            where.update(replayed_topic=rec.topic, replayed_partition=rec.partition,
                         replayed_offset=rec.offset)
            if origin.first_failed_at is not None:
                where["first_failed_at"] = origin.first_failed_at
        record = FailedRecord.now(topic, partition, offset, rec.key, rec.value or b"",
                                  attempts, reason, self._topology, self._component, **where)

        def written() -> None:
            self.counters.failed_records += 1
            self._written += 1
            self._fetcher.done(part, pending)

        self._writer.submit(record, written, lambda: part.holds(pending))

    def halt(self, why: str) -> None:
        """Stop this task for good: emit nothing, pause every partition, commit nothing
        more; logs one CRITICAL line (once) and shows ``why`` in ``counters.halted`` and
        ``metrics()``. Records not committed are read again after a restart."""
        if self._halted is not None:
            return
        self._halted = why
        self.counters.halted = why
        self._fetcher.halted = True
        self._fetcher.wake.set()
        committed = {f"{p.tp.topic}[{p.tp.partition}]": p.offsets.committed
                     for p in self._fetcher.parts.values() if p.offsets is not None}
        log.critical("%s: halted, consuming stopped and nothing more committed (committed "
                     "offsets stay at %s): %s; fix the cause and restart the topology",
                     self._component, committed, why)

    async def _before_revoke(self, parts: list[Partition]) -> None:
        # Let failed-topic writes of revoked records land so the commit can pass them;
        # otherwise the new owner would write them again.
        if self._writer is not None and self._writer.outstanding:
            await self._writer.wait_idle(5.0)
        await revocations.revoked(self.group_id, [p.tp for p in parts])

    def _report(self, exc: BaseException) -> None:
        """A fetch-loop or commit error: an outage, or reported once per kind per interval."""
        now = self._loop.time()
        if is_outage(exc):
            self._outage.down(now, describe(exc))
        elif self._throttle.allow(("error", type(exc)), now)[0]:
            self._collector.report_error(exc)

    async def _watch(self) -> None:
        """Every second: look for an outage (``broker_watch.py``: fetches that stopped
        being answered, or a probe's answer while every partition is paused) and its
        end; move the breaker's window."""
        watch = BrokerWatch(self._consumer, self._outage, self.outage_after_secs,
                            probe_every=max(_WATCH_SECS, self.outage_after_secs / 3))
        try:
            while True:
                await asyncio.sleep(_WATCH_SECS)
                now = self._loop.time()
                if self._breaker is not None:
                    self._breaker.tick(now)
                watch.look(now, self._halted is not None, self._rebalance.since is not None)
                self._rebalance.look(now)
                if self._split is not None:
                    with contextlib.suppress(AssertionError):  # a rebalance is running
                        self._split.check(self._consumer)
        finally:
            await watch.close()

    def metrics(self) -> dict[str, Any]:
        """This task's figures: per partition ``committed``, ``high_watermark`` (from the
        last fetch), ``lag``, ``position`` and ``paused``; failed-topic records written and
        write retries; records given up and dropped (no ``failed_topic``); the dead-letter
        breaker and whether the task halted."""
        if not hasattr(self, "_fetcher"):
            return {"partitions": [], "failed_topic_records": 0, "dropped": 0,
                    "failed_topic_retries": 0,
                    "failed_topic_truncated": 0, "halted": None, "dead_letter": None,
                    "broker_unreachable_since": None}  # not opened (yet)
        consumer = self._consumer
        paused = consumer.paused()
        partitions = []
        for part in list(self._fetcher.parts.values()):
            offsets = part.offsets
            if offsets is None:
                continue
            high = consumer.highwater(part.tp)
            partitions.append({
                "topic": part.tp.topic, "partition": part.tp.partition,
                "committed": offsets.committed, "high_watermark": high,
                "lag": None if high is None else max(0, high - offsets.committed),
                "position": offsets.fetch_position, "paused": part.tp in paused})
        breaker = self._breaker
        return {
            "partitions": partitions,
            "failed_topic_records": self._written,
            "dropped": self._dropped,
            "failed_topic_retries": 0 if self._writer is None else self._writer.retries,
            "failed_topic_truncated": 0 if self._writer is None else self._writer.truncated,
            "halted": self._halted,
            "dead_letter": None if breaker is None else {
                "given_up": breaker.given_up, "completed": breaker.ok,
                "tripped": breaker.tripped},
            "broker_unreachable_since": self._outage.down_since,
        }

    async def close(self) -> None:
        """Stop fetching, let failed-topic writes land, commit what is done, leave the group:
        all by the stop's deadline (``context.stop_deadline``: the drain's end, at least
        2 s after it; ``client_stop``). What is not done by then is given up with one
        WARNING: records done since the last commit are read again, and the group drops
        the member after its session timeout."""
        if not hasattr(self, "_fetcher"):
            return  # never opened
        deadline = close_deadline(self._context, self._loop.time())
        tasks = self._tasks
        if tasks:
            await _cancel(tasks[0])
        if self._writer is not None:
            await self._writer.wait_idle(min(10.0, max(0.0, deadline - self._loop.time())))
        for task in tasks[1:]:
            await _cancel(task)
        self._tasks = []
        if self._split is not None:
            self._split.forget()
        revocations.untrack(self.group_id, self._fetcher.position)
        try:
            async with asyncio.timeout_at(deadline):
                await self._fetcher.commit()
        except TimeoutError:
            log.warning("%s: the final commit was not answered by the stop's deadline; "
                        "records done since the last commit will be read again",
                        self._component)
        await self._stop_clients(deadline)

    async def _stop_clients(self, deadline: float | None = None) -> None:
        if deadline is None:
            deadline = self._loop.time() + CLOSE_FLOOR_SECS
        who = f"KafkaSpout {self._component!r}"
        await stop_by(self._consumer, deadline, who)
        if self._producer is not None:
            await stop_by(self._producer, deadline, who)


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
