"""``CoordinatedBolt``: runs a ``BatchBolt`` and knows when a task has a whole batch.

Storm's ``CoordinatedBolt`` + ``BatchBoltExecutor``. Per task and per live attempt it
counts the tuples received from upstream, and learns how many to expect from the
``(attempt, count)`` each upstream task sends it on the direct coordination stream when it
is done with the batch. ``finish_batch`` runs only when every upstream task reported and
every reported tuple arrived; for a committer, also only after the coordinator's commit
tuple for that attempt arrived. Then the task reports its own counts downstream.

How this ties into the ackers. A bolt "finishes in the commit phase" if it is a committer or
a source of it does; otherwise in the processing phase. A task *holds* (neither acks nor
fails) the coordination tuples of sources that finish in its own phase, and a committer
holds the commit tuple, until its ``finish_batch`` returned; its finish emits and
reports are anchored to them. So the coordinator's batch tree completes only after every
processing-phase ``finish_batch`` ran, and the commit tree only after every commit-phase
one ran. Data tuples, and reports from processing-phase sources to a commit-phase bolt, are
acked as soon as they are counted: holding them would keep the batch tree open until the
commit, which waits for the batch tree. A failure anywhere fails every held tuple, hence
the batch; tuples of an older attempt of a transaction are failed on sight.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.clock import now
from engine.collector import BasicOutputCollector
from engine.components import BasicBolt, Bolt
from engine.config import TOPOLOGY_MAX_SPOUT_PENDING, TOPOLOGY_MESSAGE_TIMEOUT_SECS
from engine.failure import FailReason
from engine.transactional.attempt import TransactionAttempt
from engine.transactional.committer import BatchBolt
from engine.usercall import awaitable, fail_on_error, is_async

if TYPE_CHECKING:
    from engine.collector import OutputCollector
    from engine.context import TopologyContext
    from engine.topology import OutputFieldsDeclarer
    from engine.tuples import Tuple

__all__ = ["BATCH_STREAM", "COMMIT_STREAM", "COORD_STREAM", "BoltPlan", "CoordinatedBolt"]

BATCH_STREAM = "$batch"
COMMIT_STREAM = "$commit"
COORD_STREAM = "$coord"
COORD_FIELDS = ("tx", "count")
_KEEP_ATTEMPTS = 4096


@dataclass(frozen=True)
class BoltPlan:
    """A batch bolt's place in the transactional topology, fixed by the builder."""

    sources: dict[str, bool]
    """Upstream component id -> whether it finishes in the commit phase."""
    downstream: tuple[str, ...]
    """Components subscribed to this one: they get its per-task counts."""
    committer: bool = False
    commit_phase: bool = False


@dataclass(eq=False)
class _Batch:
    """One live attempt on one task."""

    attempt: TransactionAttempt
    born: float
    bolt: Any = None
    collector: BasicOutputCollector | None = None
    received: int = 0
    expected: int = 0
    reports: int = 0
    held: list[Tuple] = field(default_factory=list)
    commit: Tuple | None = None
    failed: bool = False


async def _nothing() -> None:
    return None


class _BasicBatchBolt(BatchBolt):
    """A ``BasicBolt`` in a transactional topology: per-tuple work, nothing at finish."""

    def __init__(self, inner: BasicBolt) -> None:
        self.inner = inner
        self.execute_async = is_async(type(inner), "execute")

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: Any,
                attempt: TransactionAttempt) -> None:
        self.collector = collector

    async def execute(self, tup: Tuple) -> None:
        result = self.inner.execute(tup, self.collector)
        if self.execute_async:
            await result

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.inner.declare_output_fields(declarer)


class CoordinatedBolt(Bolt):
    """Wraps a ``BatchBolt`` (or ``BasicBolt``); ``finish_batch`` only on a whole batch."""

    def __init__(self, delegate: BatchBolt | BasicBolt, plan: BoltPlan,
                 coordinator_id: str) -> None:
        self.delegate = delegate
        self.plan = plan
        self.coordinator_id = coordinator_id

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.delegate.declare_output_fields(declarer)
        declarer.declare(list(COORD_FIELDS), stream=COORD_STREAM, direct=True)

    def component_configuration(self) -> dict[str, Any] | None:
        return self.delegate.component_configuration()

    async def prepare(self, conf: dict[str, Any], context: TopologyContext,
                      collector: OutputCollector) -> None:
        """Learn the upstream and downstream task ids; prepare a ``BasicBolt`` once."""
        self._conf = conf
        self._context = context
        self._out = collector
        plan = self.plan
        self._num_reports = sum(len(context.component_tasks(s)) for s in plan.sources)
        self._out_tasks = [t for d in plan.downstream for t in context.component_tasks(d)]
        self._hold_from = {s for s, commit in plan.sources.items()
                           if commit == plan.commit_phase}
        self._batches: dict[int, _Batch] = {}
        self._newest: dict[int, int] = {}
        pending = conf.get(TOPOLOGY_MAX_SPOUT_PENDING) or 1
        self._expire_after = (pending + 2) * float(conf[TOPOLOGY_MESSAGE_TIMEOUT_SECS])
        template: Any = copy.copy(self.delegate)
        if isinstance(template, BasicBolt):
            await awaitable(template, "prepare")(conf, context)
            self._cleanup = awaitable(template, "cleanup")
            template = _BasicBatchBolt(template)
        else:
            self._cleanup = _nothing
        self._template = template
        cls = type(template)
        self._execute_async = is_async(cls, "execute")
        self._prepare_async = is_async(cls, "prepare")
        self._finish_async = is_async(cls, "finish_batch")

    async def execute(self, tup: Tuple) -> None:
        """Count, run or hold ``tup``; finish the batch when it is complete."""
        if tup.is_tick():
            return
        batch = self._batch_for(tup.values[0])
        if batch is None or batch.failed:
            self._out.fail(tup)
            return
        stream = tup.source_stream
        if stream == COORD_STREAM:
            batch.reports += 1
            batch.expected += tup.values[1]
            if tup.source_component in self._hold_from:
                batch.held.append(tup)
            else:
                self._out.ack(tup)
        elif stream == COMMIT_STREAM and tup.source_component == self.coordinator_id:
            batch.commit = tup
            batch.held.append(tup)
        else:
            batch.received += 1
            if not await self._run(batch, tup):
                return
            self._out.ack(tup)
        if self._complete(batch):
            await self._finish(batch)

    async def cleanup(self) -> None:
        """Fail what is still held (the trees are dropped anyway) and clean up."""
        for batch in self._batches.values():
            self._fail(batch)
        self._batches.clear()
        await self._cleanup()

    def _complete(self, batch: _Batch) -> bool:
        if batch.reports < self._num_reports or batch.received < batch.expected:
            return False
        return batch.commit is not None or not self.plan.committer

    async def _run(self, batch: _Batch, tup: Tuple) -> bool:
        """Execute ``tup`` on the batch's bolt; False (and the batch failed) if it raised."""
        try:
            if batch.bolt is None:
                await self._start(batch)
            assert batch.collector is not None
            batch.collector.anchor = tup
            if self._execute_async:
                await batch.bolt.execute(tup)
            else:
                batch.bolt.execute(tup)
        except BaseException as exc:
            self._fail(batch, fail_on_error(self._out, exc, (tup,), failed_is_expected=True))
            return False
        return True

    async def _start(self, batch: _Batch) -> None:
        bolt = copy.copy(self._template)
        batch.collector = BasicOutputCollector(self._out, count=True)
        result = bolt.prepare(self._conf, self._context, batch.collector, batch.attempt)
        if self._prepare_async:
            await result
        batch.bolt = bolt

    async def _finish(self, batch: _Batch) -> None:
        held = batch.held
        try:
            if batch.bolt is None:
                await self._start(batch)
            assert batch.collector is not None
            batch.collector.anchor = held
            result = batch.bolt.finish_batch()
            if self._finish_async:
                await result
        except BaseException as exc:
            self._fail(batch, fail_on_error(self._out, exc, failed_is_expected=True))
            return
        sent, attempt, emit_direct = batch.collector.sent, batch.attempt, self._out.emit_direct
        for t in self._out_tasks:
            emit_direct(t, [attempt, sent.get(t, 0)], held, COORD_STREAM)
        for tup in held:
            self._out.ack(tup)
        del self._batches[attempt.transaction_id]

    def _fail(self, batch: _Batch, reason: FailReason | None = None) -> None:
        batch.failed = True
        batch.bolt = None
        if reason is None:
            reason = FailReason("explicit", f"batch {batch.attempt} failed", None,
                                self._out.component)
        for t in batch.held:
            self._out.fail_with(t, reason)
        batch.held = []

    def _batch_for(self, attempt: TransactionAttempt) -> _Batch | None:
        """The live batch of ``attempt``, a new one for a newer attempt, None if stale."""
        txid, aid = attempt.transaction_id, attempt.attempt_id
        newest = self._newest.get(txid)
        if newest is not None and aid <= newest:
            return self._batches.get(txid) if aid == newest else None
        old = self._batches.pop(txid, None)
        if old is not None:
            self._fail(old)
        self._newest[txid] = aid
        if len(self._newest) > _KEEP_ATTEMPTS:
            del self._newest[next(iter(self._newest))]  # the oldest txid seen, in practice
        born = now()
        self._expire(born)
        batch = self._batches[txid] = _Batch(attempt, born)
        return batch

    def _expire(self, now: float) -> None:
        """Drop batches older than every tree that could still complete them."""
        limit = now - self._expire_after
        batches = self._batches
        while batches:
            txid, batch = next(iter(batches.items()))
            if batch.born > limit:
                return
            self._fail(batch)
            del batches[txid]
