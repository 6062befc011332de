"""Partitioned and opaque spouts run as plain transactional spouts, with per-partition state.

Storm's ``PartitionedTransactionalSpoutExecutor`` and
``OpaquePartitionedTransactionalSpoutExecutor``. Each emitter task owns partitions
``task_index, task_index + n, ...`` and keeps, per partition, the metadata of every live
transaction in ``TransactionalState`` (scope ``partition:<i>``):

- partitioned: a transaction whose metadata is stored is emitted again from it, so a replay
  carries exactly the same tuples; a new one continues from the latest earlier metadata and
  is stored before the batch is acked, hence before it can commit;
- opaque: every emission continues from the latest earlier metadata and replaces the
  transaction's own, so a replay may differ but never skips or repeats a tuple.

Either way, storing a transaction's metadata forgets that of later transactions: they
cannot have committed (commits go in order) and are replayed after this one, so they must
continue from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.transactional.spout import (
    BatchCollector,
    OpaquePartitionedTransactionalSpout,
    PartitionedTransactionalSpout,
    TransactionalSpout,
)
from engine.transactional.state import TransactionalState, partition_scope
from engine.usercall import awaitable

if TYPE_CHECKING:
    from engine.context import TopologyContext
    from engine.topology import OutputFieldsDeclarer
    from engine.transactional.attempt import TransactionAttempt

__all__ = ["TRANSACTIONAL_ID", "OpaquePartitionedSpoutExecutor", "PartitionedSpoutExecutor",
           "as_transactional_spout"]

TRANSACTIONAL_ID = "transactional.id"


def as_transactional_spout(spout: Any) -> TransactionalSpout:
    """``spout`` as a ``TransactionalSpout``, wrapping partitioned and opaque spouts."""
    if isinstance(spout, PartitionedTransactionalSpout):
        return PartitionedSpoutExecutor(spout)
    if isinstance(spout, OpaquePartitionedTransactionalSpout):
        return OpaquePartitionedSpoutExecutor(spout)
    if isinstance(spout, TransactionalSpout):
        return spout
    raise TypeError(
        f"expected a TransactionalSpout, PartitionedTransactionalSpout or "
        f"OpaquePartitionedTransactionalSpout, got {type(spout).__name__}")


def _owned(context: TopologyContext, num_partitions: int) -> range:
    """The partitions an emitter task owns: its index, then every n-th after it."""
    return range(context.task_index, num_partitions, len(context.this_component_tasks()))


class _Coordinator:
    """The coordinator half of a partitioned spout: metadata = number of partitions."""

    def __init__(self, inner: Any, opaque: bool) -> None:
        self._is_ready = awaitable(inner, "is_ready")
        self._num_partitions = None if opaque else awaitable(inner, "num_partitions")
        self.close = awaitable(inner, "close", optional=True)
        finite = getattr(inner, "exhausted", None)
        if callable(finite):
            self.exhausted = finite

    async def is_ready(self) -> bool:
        return bool(await self._is_ready())

    async def initialize_transaction(self, txid: int, prev_metadata: Any) -> Any:
        return None if self._num_partitions is None else await self._num_partitions()


class _PartitionStateEmitter:
    """Per-partition metadata kept for the partitions this task owns, cleaned and closed
    together with the wrapped emitter."""

    def __init__(self, inner: Any, state: TransactionalState, context: TopologyContext) -> None:
        self._state = state
        self._context = context
        self._close = awaitable(inner, "close", optional=True)
        self._partitions = 0

    def cleanup_before(self, txid: int) -> None:
        for p in _owned(self._context, self._partitions):
            self._state.cleanup_before(partition_scope(p), txid)

    async def close(self) -> None:
        try:
            await self._close()
        finally:
            self._state.close()


class _PartitionedEmitter(_PartitionStateEmitter):
    """Emits a batch partition by partition, replaying stored metadata where it exists."""

    def __init__(self, inner: Any, state: TransactionalState, context: TopologyContext) -> None:
        super().__init__(inner, state, context)
        self._new = awaitable(inner, "emit_partition_batch_new")
        self._again = awaitable(inner, "emit_partition_batch")

    async def emit_batch(self, attempt: TransactionAttempt, num_partitions: int,
                         collector: BatchCollector) -> None:
        txid, state = attempt.transaction_id, self._state
        self._partitions = max(self._partitions, num_partitions)
        for p in _owned(self._context, num_partitions):
            scope = partition_scope(p)
            meta = state.get(scope, txid, _MISSING)
            if meta is not _MISSING:
                await self._again(attempt, collector, p, meta)
                continue
            prev = state.latest_before(scope, txid)
            meta = await self._new(attempt, collector, p, None if prev is None else prev[1])
            state.put(scope, txid, meta, drop_later=True)


class _OpaqueEmitter(_PartitionStateEmitter):
    """Emits each owned partition's batch following the latest earlier metadata."""

    def __init__(self, inner: Any, state: TransactionalState, context: TopologyContext) -> None:
        super().__init__(inner, state, context)
        self._emit = awaitable(inner, "emit_partition_batch")
        self._num_partitions = awaitable(inner, "num_partitions")

    async def emit_batch(self, attempt: TransactionAttempt, metadata: Any,
                         collector: BatchCollector) -> None:
        txid, state = attempt.transaction_id, self._state
        num_partitions = int(await self._num_partitions())
        self._partitions = max(self._partitions, num_partitions)
        for p in _owned(self._context, num_partitions):
            scope = partition_scope(p)
            prev = state.latest_before(scope, txid)
            meta = await self._emit(attempt, collector, p, None if prev is None else prev[1])
            state.put(scope, txid, meta, drop_later=True)


_MISSING = object()


class _PartitionedAdapter(TransactionalSpout):
    """Runs a partitioned spout as a ``TransactionalSpout`` (one class per kind below)."""

    opaque = False
    emitter: type = _PartitionedEmitter

    def __init__(self, spout: PartitionedTransactionalSpout
                 | OpaquePartitionedTransactionalSpout) -> None:
        self.spout = spout

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.spout.declare_output_fields(declarer)

    def get_coordinator(self, conf: dict[str, Any], context: TopologyContext) -> Any:
        return _Coordinator(self.spout.get_coordinator(conf, context), opaque=self.opaque)

    def get_emitter(self, conf: dict[str, Any], context: TopologyContext) -> Any:
        state = TransactionalState.from_conf(conf, conf[TRANSACTIONAL_ID])
        return self.emitter(self.spout.get_emitter(conf, context), state, context)


class PartitionedSpoutExecutor(_PartitionedAdapter):
    """A ``PartitionedTransactionalSpout`` run as a ``TransactionalSpout``: replays are exact."""


class OpaquePartitionedSpoutExecutor(_PartitionedAdapter):
    """An ``OpaquePartitionedTransactionalSpout`` run as a ``TransactionalSpout``: each batch
    continues where the previous transaction's batch ended."""

    opaque = True
    emitter = _OpaqueEmitter
