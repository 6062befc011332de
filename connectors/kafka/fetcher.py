"""The Kafka spout's I/O side: one consumer, one fetch loop, a bounded buffer, commits.

The fetch loop is the only code that waits on the broker for records; ``next_tuple`` takes
from ``buffer`` and never awaits. Bounds:

- ``buffer`` holds at most ``max_buffer`` records plus one fetch (``fetch_max_records``);
- a partition holds at most ``max_uncommitted`` records fetched but not yet committable;
  at the cap it is paused (only that one) until acks move its commit point, and records
  fetched past the cap are dropped and read again later (storm-kafka-client's
  ``maxUncommittedOffsets`` may overshoot by ``maxPollRecords - 1``; this does not).

Rebalance (storm-kafka-client semantics, and one step more): on revoke, stop emitting the
partitions' buffered records and give those already emitted up to ``drain_secs`` to
complete, commit what is done, then forget the partitions' records, buffered tuples and
retries (late acks for them are ignored); on assign, resume at the committed offset. The
new owner so re-reads only what did not complete in that time (storm-kafka-client commits
at once and re-reads everything in flight). Nothing here relies on ``end_offsets``.

Commits (``commits.py`` says when) run one at a time, each reading the offsets only once
the one before it has landed: a periodic commit, a revoke's and the last one at close can
never land out of order, so a partition's committed offset only moves forward.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from itertools import groupby, repeat
from operator import itemgetter
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import KafkaError

from connectors.kafka.codec import DecodeError
from connectors.kafka.commits import CommitSchedule
from connectors.kafka.offsets import PartitionOffsets
from engine.clock import now

__all__ = ["Fetcher", "Partition", "Pending"]

log = logging.getLogger("connectors.kafka")
commit_log = logging.getLogger("connectors.kafka.commits")
"""Every commit that landed, at DEBUG (off unless that logger is set to DEBUG)."""

MsgId = tuple[str, int, int]

_PARTITION_OF = itemgetter(0, 1)  # a message id's (topic, partition)
_OFFSET_OF = itemgetter(2)
_DRAIN_POLL_SECS = 0.01  # how often a revoke looks whether its emitted records completed


class Pending:
    """One fetched record not yet done: its tuple values, how often it failed and why."""

    __slots__ = ("failures", "msg_id", "reason", "record", "values")

    def __init__(self, msg_id: MsgId, values: list[Any] | None, record: Any) -> None:
        self.msg_id = msg_id
        self.values = values  # None: undecodable, never emitted
        self.record = record
        self.failures = 0
        self.reason: Any = None  # the latest failure's cause, if the engine gave one


class Partition:
    """An assigned partition: its offsets and its records in flight.

    A revoked ``Partition`` object is never reused; a re-assignment makes a new one, so
    stale buffer entries and retries are recognised by identity.
    """

    __slots__ = ("draining", "offsets", "paused", "records", "revoked", "tp")

    def __init__(self, tp: TopicPartition, offsets: PartitionOffsets | None) -> None:
        self.tp = tp
        self.offsets = offsets  # None until the start offset is known
        self.records: dict[int, Pending] = {}
        self.revoked = False
        self.draining = False  # being revoked: nothing more fetched or emitted
        self.paused = False

    def holds(self, pending: Pending) -> bool:
        """Whether ``pending`` is still this partition's live record for its offset."""
        return not self.revoked and self.records.get(pending.msg_id[2]) is pending


class Fetcher:
    """Fetches into ``buffer``, tracks offsets per partition, commits them."""

    def __init__(self, consumer: AIOKafkaConsumer, decode: Callable[[Any], list[Any]],
                 on_undecodable: Callable[[Partition, Pending, str], None],
                 before_revoke: Callable[[list[Partition]], Awaitable[None]], *,
                 max_uncommitted: int, max_buffer: int, commit_interval: float,
                 commit_every: int | None = None, drain_secs: float = 0.0,
                 fetch_max_records: int = 500) -> None:
        self.consumer = consumer
        self._decode = decode
        # A Decoder decodes a whole fetched batch in one call; any other callable per record.
        self._decode_many: Callable[[list[Any]], list[list[Any]]] = getattr(
            decode, "many", None) or (lambda records: [decode(r) for r in records])
        self._on_undecodable = on_undecodable
        self._before_revoke = before_revoke
        self.max_uncommitted = max_uncommitted
        self.max_buffer = max_buffer
        self._schedule = CommitSchedule(commit_interval, commit_every, now())
        self._commit_lock = asyncio.Lock()
        self.drain_secs = drain_secs
        self._fetch_max_records = fetch_max_records
        self.parts: dict[TopicPartition, Partition] = {}
        self.buffer: deque[tuple[Partition, Pending]] = deque()
        self.wake = asyncio.Event()  # set when a paused partition or a full buffer frees up
        self.halted = False  # set for good: every partition paused, nothing more committed
        # Told of a failed commit instead of the default WARNING line (the spout throttles).
        self.on_commit_error: Callable[[BaseException], None] | None = None
        self.listener = _Listener(self)
        # Partitions not to fetch for now, and what to tell of new ones (set by the spout).
        self.held_back: Callable[[], set[TopicPartition]] = set
        self.on_assigned: Callable[[list[TopicPartition]], Awaitable[None]] | None = None

    def lookup(self, msg_id: MsgId) -> tuple[Partition, Pending] | None:
        """The live partition and record for ``msg_id``, or None (revoked or done)."""
        part = self.parts.get(msg_id[:2])  # type: ignore[call-overload]
        if part is None:
            return None
        pending = part.records.get(msg_id[2])
        return None if pending is None else (part, pending)

    def position(self, tp: TopicPartition) -> tuple[int, int] | None:
        """``(committed, fetched)`` offsets of ``tp``: committed last (or started at), and
        fetched next; None unless it is held and its start is known."""
        part = self.parts.get(tp)
        if part is None or part.revoked or part.offsets is None:
            return None
        return part.offsets.committed, part.offsets.fetch_position

    def done(self, part: Partition, pending: Pending) -> None:
        """``pending`` was acked or finally failed: its offset may be committed."""
        if part.holds(pending):
            self._done(part, pending.msg_id[2])

    def ack_many(self, msg_ids: Iterable[MsgId]) -> None:
        """The tuples of ``msg_ids`` completed; each is ignored if its partition was revoked
        since or it was done already. Acks come in runs from one partition: each run is
        marked done there in one call, its offsets taken out at C speed."""
        parts = self.parts
        for key, run in groupby(msg_ids, _PARTITION_OF):
            part = parts.get(key)
            if part is None or part.offsets is None:
                continue
            offsets = list(map(_OFFSET_OF, run))
            popped = list(map(part.records.pop, offsets, repeat(None, len(offsets))))
            if None in popped:  # done already, or never tracked: not done again
                offsets = [o for o, p in zip(offsets, popped, strict=True) if p is not None]
                if not offsets:
                    continue
            part.offsets.done_all(offsets)
            self._trim(part)

    def _done(self, part: Partition, offset: int) -> None:
        del part.records[offset]
        offsets = part.offsets
        assert offsets is not None
        offsets.done_unordered(offset)
        self._trim(part)

    def _trim(self, part: Partition) -> None:
        """Move ``part``'s commit point past its done offsets; a paused partition back
        under the cap wakes the fetch loop."""
        offsets = part.offsets
        assert offsets is not None
        offsets.trim()
        if part.paused and offsets.uncommitted < self.max_uncommitted:
            self.wake.set()

    async def run(self, on_error: Callable[[BaseException], None]) -> None:
        """Fetch, and commit when the schedule says, until cancelled; errors are reported,
        not fatal."""
        schedule = self._schedule
        while True:
            try:
                await self._step()
                if schedule.due(now(), self.ready()):
                    landed = await self.commit()
                    (schedule.failed if landed is False else schedule.committed)(now())
            except Exception as exc:
                # Broker trouble (KafkaError) is usually transient; anything else is a bug
                # worth seeing. Either way report it and keep the partitions' state.
                on_error(exc)
                await asyncio.sleep(1.0)

    async def _step(self) -> None:
        fetchable, paused = self._apply_pauses()
        if not fetchable:
            self.wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), 0.2)
            fetchable, paused = self._apply_pauses()
        # getmany is called even with every partition paused: a consumer that stops calling
        # it is taken for dead after max_poll_interval_ms and leaves the group. With some
        # partitions paused, short waits let them resume soon after acks free them.
        timeout_ms = 0 if not fetchable else 20 if paused else 200
        batches = await self.consumer.getmany(timeout_ms=timeout_ms,
                                              max_records=self._fetch_max_records)
        for tp, records in batches.items():
            if not records:
                continue
            part = self.parts.get(tp)
            if part is None or part.draining:
                # Assigned to the consumer but not (or no longer) tracked here: fetched
                # while the assignment callback still runs (the consumer fetches new
                # partitions before it returns), during or after a revoke. The consumer's
                # position moved past these records; rewind it so they are read again once
                # the partition is tracked, or they would never be emitted while a later
                # commit passes them.
                self.consumer.seek(tp, records[0].offset)
                continue
            if part.offsets is None:
                part.offsets = PartitionOffsets(records[0].offset)
            self._admit_batch(tp, part, records)
            position = await self.consumer.position(tp)
            if self.parts.get(tp) is part:  # a rebalance may have run during the await
                part.offsets.fetched_upto(position)

    def _admit_batch(self, tp: TopicPartition, part: Partition, records: list[Any]) -> None:
        """Track, decode and buffer one partition's fetched records, a batch at a time."""
        offsets = part.offsets
        assert offsets is not None
        start = offsets.fetch_position
        if records[0].offset < start:  # a re-fetch overlapping what is tracked already
            records = [r for r in records if r.offset >= start]
        room = self.max_uncommitted - offsets.uncommitted
        if len(records) > room:
            # At the cap: read the rest again once acks let this partition resume.
            if room <= 0:
                self.consumer.seek(tp, records[0].offset)
                return
            self.consumer.seek(tp, records[room].offset)
            records = records[:room]
        if not records:
            return
        at = [r.offset for r in records]
        offsets.track_many(at)
        reasons: dict[int, str] = {}
        try:
            decoded: list[list[Any] | None] = self._decode_many(records)  # type: ignore[assignment]
        except DecodeError:
            decoded = [self._decode_one(r, reasons) for r in records]
        msg_ids = zip(repeat(tp.topic), repeat(tp.partition), at)
        pendings = list(map(Pending, msg_ids, decoded, records))
        part.records.update(zip(at, pendings, strict=True))
        if not reasons:  # every record decoded: the common case, at C speed
            self.buffer.extend(zip(repeat(part), pendings))
            return
        for pending in pendings:
            if pending.values is not None:
                self.buffer.append((part, pending))
            else:
                self._on_undecodable(part, pending, reasons[pending.msg_id[2]])

    def _decode_one(self, record: Any, reasons: dict[int, str]) -> list[Any] | None:
        try:
            return self._decode(record)
        except DecodeError as exc:
            reasons[record.offset] = str(exc)
            return None

    def _apply_pauses(self) -> tuple[int, int]:
        """Pause partitions at the cap (all of them while the buffer is full), resume the
        rest; returns how many assigned partitions may fetch and how many are paused."""
        assigned = self.consumer.assignment()
        cap = self.max_uncommitted
        capped = {tp for tp, part in self.parts.items()
                  if part.offsets is not None and part.offsets.uncommitted >= cap}
        for tp, part in self.parts.items():
            part.paused = tp in capped  # acks on it wake the fetch loop
        full = self.halted or len(self.buffer) >= self.max_buffer
        want = set(assigned) if full else (capped | self.held_back()) & assigned
        paused = self.consumer.paused()
        if to_pause := want - paused:
            self.consumer.pause(*to_pause)
        if to_resume := paused - want:
            self.consumer.resume(*to_resume)
        return len(assigned) - len(want), len(want)

    def ready(self) -> int:
        """Offsets committable and not yet committed, summed over the partitions."""
        return sum(p.offsets.committable - p.offsets.committed
                   for p in self.parts.values() if p.offsets is not None)

    async def commit(self, parts: Iterable[Partition] | None = None) -> bool | None:
        """Commit each partition's first not-done offset (Kafka's "last processed + 1");
        nothing once halted. True when it landed, False when it failed, None when there
        was nothing to commit. One commit at a time, its offsets read once the previous
        one has landed: commits land in order, committed offsets never go back."""
        async with self._commit_lock:
            if self.halted:
                return None
            chosen = list(self.parts.values() if parts is None else parts)
            offsets = {p.tp: p.offsets.committable for p in chosen
                       if p.offsets is not None and p.offsets.needs_commit()}
            if not offsets:
                return None
            try:
                await self.consumer.commit(offsets)
            except KafkaError as exc:
                if self.on_commit_error is not None:
                    self.on_commit_error(exc)
                else:
                    log.warning("commit of %s failed: %s: %s", offsets, type(exc).__name__,
                                exc)
                return False
            for p in chosen:
                if p.tp in offsets:
                    assert p.offsets is not None
                    p.offsets.mark_committed(offsets[p.tp])
            if commit_log.isEnabledFor(logging.DEBUG):
                commit_log.debug("committed %s", {f"{tp.topic}[{tp.partition}]": o
                                                  for tp, o in sorted(offsets.items())})
            return True

    async def revoke(self, tps: Iterable[TopicPartition]) -> None:
        """Commit what is done on ``tps``, then forget their records, buffer and retries."""
        parts = [self.parts[tp] for tp in tps if tp in self.parts]
        if not parts:
            return
        await self._drain(parts)
        await self._before_revoke(parts)
        await self.commit(parts)
        for part in parts:
            part.revoked = True
            part.records.clear()
            del self.parts[part.tp]
        self.buffer = deque(e for e in self.buffer if not e[0].revoked)
        log.info("partitions revoked: %s", sorted(p.tp for p in parts))

    async def _drain(self, parts: list[Partition]) -> None:
        """Stop fetching and emitting ``parts``; wait up to ``drain_secs`` until none of
        their emitted records is still in flight."""
        for part in parts:
            part.draining = True
        unsent = {part: 0 for part in parts}  # buffered records, never emitted
        kept: deque[tuple[Partition, Pending]] = deque()
        for entry in self.buffer:
            if entry[0].draining:
                unsent[entry[0]] += 1
            else:
                kept.append(entry)
        self.buffer = kept
        deadline = now() + self.drain_secs
        while any(len(p.records) > unsent[p] for p in parts) and now() < deadline:
            await asyncio.sleep(_DRAIN_POLL_SECS)

    async def assign(self, tps: Iterable[TopicPartition]) -> None:
        """Start tracking ``tps`` at their committed offsets (or the first record fetched)."""
        for tp in tps:
            if tp in self.parts:
                continue  # kept through the rebalance: its state is still right
            try:
                committed = await self.consumer.committed(tp)
            except KafkaError as exc:
                log.warning("committed offset of %s unavailable (%s); starting from the "
                            "consumer's position", tp, exc)
                committed = None
            offsets = None if committed is None else PartitionOffsets(committed)
            self.parts[tp] = Partition(tp, offsets)
            if committed is not None:
                self.consumer.seek(tp, committed)
        log.info("partitions assigned: %s", sorted(tps))
        if self.on_assigned is not None:
            await self.on_assigned(list(tps))


class _Listener(ConsumerRebalanceListener):
    """aiokafka calls these inside the group rebalance, before and after reassignment."""

    def __init__(self, fetcher: Fetcher) -> None:
        self._fetcher = fetcher

    async def on_partitions_revoked(self, revoked: Any) -> None:
        """Before the group reassigns: commit what is done, forget the partitions."""
        await self._fetcher.revoke(revoked)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        """After it: resume each new partition at its committed offset."""
        await self._fetcher.assign(assigned)
