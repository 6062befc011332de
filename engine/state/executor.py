"""Checkpoint handling in bolts: the executors the builder puts around every bolt of a
topology that has a stateful one.

Storm's ``BaseStatefulBoltExecutor`` (the barrier), ``StatefulBoltExecutor`` and
``CheckpointTupleForwarder``, as adapters the engine runs like any bolt:

- ``CheckpointForwarder`` wraps a bolt without state: regular tuples go to it; a checkpoint,
  once every upstream task sent it, is forwarded downstream (anchored to it) and acked.
- ``StatefulBoltExecutor`` wraps a ``StatefulBolt``: it opens the task's state, holds
  tuples until INITSTATE has called ``init_state``, and acts on the checkpoint actions.
  The user's acks are recorded, moved to "prepared" at PREPARE, really sent at the COMMIT
  that covers them, and turned into fails at ROLLBACK; so a spout tuple completes only
  once the state it changed is committed.

In both, an emit without anchors raises: an unanchored tuple would let its spout tuple
complete before the state downstream of it is committed.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Coroutine
from operator import attrgetter
from typing import Any

from engine.anchoring import AnchoringCollector, HeldAckCollector
from engine.basic_bolt import adapt_basic_bolt
from engine.components import BasicBolt, Bolt
from engine.config import TOPOLOGY_STATE_CHECKPOINT_INTERVAL_MS
from engine.context import TopologyContext
from engine.state.barrier import CheckpointBarrier
from engine.state.checkpoint import (
    CHECKPOINT_FIELDS,
    CHECKPOINT_STREAM,
    COMMIT,
    INITSTATE,
    PREPARE,
    ROLLBACK,
)
from engine.state.kv import KeyValueState
from engine.state.store import SqliteStateStore, open_store, release_store
from engine.topology import OutputFieldsDeclarer
from engine.tuples import Tuple
from engine.usercall import awaitable, fail_on_error, is_async, method

__all__ = ["BatchCheckpointForwarder", "CheckpointForwarder", "StatefulBoltExecutor",
           "SyncCheckpointForwarder", "SyncStatefulBoltExecutor", "wrap_for_checkpoints"]


_STREAM = attrgetter("source_stream")

class _CheckpointAware(Bolt):
    """The barrier and the checkpoint stream; subclasses say what a checkpoint does."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.inner.declare_output_fields(declarer)
        declarer.declare(list(CHECKPOINT_FIELDS), stream=CHECKPOINT_STREAM)

    def component_configuration(self) -> dict[str, Any] | None:
        return self.inner.component_configuration()  # type: ignore[no-any-return]

    def _setup(self, context: TopologyContext, collector: Any) -> None:
        self.name = f"bolt {context.component_id!r}"
        self.out = collector
        upstream = sum(len(context.component_tasks(c)) for c, s in context.this_sources()
                       if s == CHECKPOINT_STREAM)
        self.barrier = CheckpointBarrier(upstream)

    async def execute(self, tup: Tuple) -> None:
        if tup.source_stream == CHECKPOINT_STREAM:
            await self._checkpoint(tup)
        else:
            await self._handle(tup)

    async def _checkpoint(self, tup: Tuple) -> None:
        txid, action = tup["txid"], tup["action"]
        if not self.barrier.arrive(action, txid):
            self.out.ack(tup)  # waiting for the other upstream tasks' copies
            return
        if not self.barrier.accept(txid):
            self.out.ack(tup)  # older than what this task acted on already
            return
        try:
            if await self._on_checkpoint(action, txid):
                self.out.emit([txid, action], tup, CHECKPOINT_STREAM)
                self.out.ack(tup)
            else:
                self.out.fail(tup)
            self.barrier.done(action, txid)
        except BaseException as exc:
            fail_on_error(self.out, exc, (tup,))

    async def _handle(self, tup: Tuple) -> None:
        raise NotImplementedError

    async def _on_checkpoint(self, action: str, txid: int) -> bool:
        """Act on a completed checkpoint; False fails it (forcing recovery)."""
        raise NotImplementedError


class CheckpointForwarder(_CheckpointAware):
    """A bolt without state in a stateful topology: forwards checkpoints downstream."""

    async def prepare(self, conf: dict[str, Any], context: TopologyContext,
                      collector: Any) -> None:
        self._setup(context, collector)
        bolt = copy.copy(self.inner)
        basic = isinstance(bolt, BasicBolt)
        self.bolt = adapt_basic_bolt(bolt) if basic else bolt
        self._execute = awaitable(self.bolt, "execute")
        self._run = method(self.bolt, "execute")[0]
        # A basic bolt's emits are anchored to its input already: no check per emit.
        out = collector if basic else AnchoringCollector(collector, required=self.name)
        await awaitable(self.bolt, "prepare")(conf, context, out)

    async def execute(self, tup: Tuple) -> None:
        # The bolt's own coroutine straight from here: no frame in between per tuple.
        if tup.source_stream == CHECKPOINT_STREAM:
            await self._checkpoint(tup)
        else:
            await self._execute(tup)

    async def _on_checkpoint(self, action: str, txid: int) -> bool:
        return True

    async def cleanup(self) -> None:
        if hasattr(self, "bolt"):
            await awaitable(self.bolt, "cleanup")()


class BatchCheckpointForwarder(CheckpointForwarder):
    """A ``CheckpointForwarder`` around a bolt that takes whole queue batches
    (``executes_batches``, as the Kafka bolt does): each run of data tuples between
    checkpoint tuples goes to the bolt in one call."""

    executes_batches = True

    def execute_batch(self, batch: list[Tuple] | tuple[Tuple, ...]) -> Awaitable[None] | None:
        """The bolt's ``execute_batch`` on each run of data tuples, the checkpoint tuples
        between them acted on in order; returns the last wait the bolt asked for."""
        run_batch = self.bolt.execute_batch  # type: ignore[union-attr]
        if CHECKPOINT_STREAM not in map(_STREAM, batch):
            return run_batch(batch)  # type: ignore[no-any-return]
        settle: Awaitable[None] | None = None
        run: list[Tuple] = []
        for tup in batch:
            if tup.source_stream != CHECKPOINT_STREAM:
                run.append(tup)
                continue
            if run:
                settle = _latest(settle, run_batch(run))
                run = []
            _run_now(self._checkpoint(tup))
        return _latest(settle, run_batch(run)) if run else settle


def _latest(earlier: Awaitable[None] | None,
            later: Awaitable[None] | None) -> Awaitable[None] | None:
    """The later of two waits; the earlier one, superseded, is closed unawaited."""
    if later is None:
        return earlier
    close = getattr(earlier, "close", None)
    if close is not None:
        close()
    return later


class StatefulBoltExecutor(_CheckpointAware):
    """Runs a ``StatefulBolt`` task: state, held acks, and the checkpoint actions."""

    def hold_secs(self, conf: dict[str, Any]) -> float:
        """How long an ack can wait here by design: until the commit after the next
        checkpoint (two intervals), or longer where the bolt is a window."""
        interval = float(conf.get(TOPOLOGY_STATE_CHECKPOINT_INTERVAL_MS, 1000)) / 1000
        inner = getattr(self.inner, "hold_secs", None)
        return max(2 * interval, 0.0 if inner is None else float(inner(conf)))

    def checkpoint_round(self, conf: dict[str, Any]) -> float | None:
        """The round that paces this bolt's acks (``hold_secs``), or None where the bolt
        is a window: then the window's own hold sets the pace."""
        if getattr(self.inner, "hold_secs", None) is not None:
            return None
        return self.hold_secs(conf)

    async def prepare(self, conf: dict[str, Any], context: TopologyContext,
                      collector: Any) -> None:
        self._setup(context, collector)
        self.bolt = self.task_bolt()
        self.collector = HeldAckCollector(collector, required=self.name)
        self._execute = awaitable(self.bolt, "execute")
        self._run, self._run_async = method(self.bolt, "execute")
        self.initialized = False
        self.pending: list[Tuple] = []
        self.prepared: list[Tuple] = []
        await awaitable(self.bolt, "prepare")(conf, context, self.collector)
        self.state = self.open_state(conf, context)

    def task_bolt(self) -> Any:
        """The bolt this task runs: a copy of the user's (as each task gets one)."""
        return copy.copy(self.inner)

    def open_state(self, conf: dict[str, Any], context: TopologyContext) -> KeyValueState:
        """The task's state, the one place that says where it lives: a ``KeyValueState``
        in the shared store, namespaced ``<topology>/<component>-<task>``. The executor
        needs of it only the map the bolt gets and ``prepare_commit``/``commit``/``rollback``."""
        self.store: SqliteStateStore | None = open_store(conf)
        namespace = f"{context.topology_name}/{context.component_id}-{context.task_id}"
        return KeyValueState(self.store, namespace)

    async def _handle(self, tup: Tuple) -> None:
        if self.initialized:
            await self._execute(tup)
        else:
            self.pending.append(tup)

    async def _on_checkpoint(self, action: str, txid: int) -> bool:
        if action == PREPARE:
            if not self.initialized:
                return False  # a restarted task: the spout must recover first
            await awaitable(self.bolt, "pre_prepare")(txid)
            self.state.prepare_commit(txid)
            self.prepared.extend(self.collector.take_acked())
        elif action == COMMIT:
            await awaitable(self.bolt, "pre_commit")(txid)
            self.state.commit(txid)
            await self._committed(txid)
            prepared, self.prepared = self.prepared, []
            for tup in prepared:
                self.out.ack(tup)
        elif action == ROLLBACK:
            await awaitable(self.bolt, "pre_rollback")()
            self.state.rollback()
            failed, self.prepared = self.prepared + self.collector.take_acked(), []
            for tup in failed:
                self.out.fail(tup)
        elif action == INITSTATE and not self.initialized:
            await awaitable(self.bolt, "init_state")(self.state)
            self.initialized = True
            pending, self.pending = self.pending, []
            for tup in pending:
                try:
                    await self._handle(tup)
                except BaseException as exc:
                    fail_on_error(self.out, exc, (tup,))
        return True

    async def _committed(self, txid: int) -> None:
        """After the state committed ``txid``, before the tuples it covers are acked."""

    async def cleanup(self) -> None:
        if hasattr(self, "bolt"):
            await awaitable(self.bolt, "cleanup")()
        store = getattr(self, "store", None)
        if store is not None:
            release_store(store)
            self.store = None


class SyncCheckpointForwarder(CheckpointForwarder):
    """A ``CheckpointForwarder`` around a bolt with a sync ``execute``: it runs as a sync
    bolt, without a coroutine per tuple."""

    def execute(self, tup: Tuple) -> None:  # type: ignore[override]
        if tup.source_stream == CHECKPOINT_STREAM:
            _run_now(self._checkpoint(tup))
        else:
            self._run(tup)


class SyncStatefulBoltExecutor(StatefulBoltExecutor):
    """A ``StatefulBoltExecutor`` around a bolt whose ``execute`` and state hooks are all
    sync: it runs as a sync bolt, without a coroutine per tuple."""

    def execute(self, tup: Tuple) -> None:  # type: ignore[override]
        if tup.source_stream == CHECKPOINT_STREAM:
            _run_now(self._checkpoint(tup))
        elif self.initialized:
            self._run(tup)
        else:
            self.pending.append(tup)


_STATE_HOOKS = ("execute", "init_state", "pre_prepare", "pre_commit", "pre_rollback")


def wrap_for_checkpoints(bolt: Bolt | BasicBolt, stateful: bool) -> _CheckpointAware:
    """The executor for ``bolt`` in a stateful topology: sync where every method it calls
    per tuple or per checkpoint is (the user's ``prepare`` may be async either way)."""
    names = _STATE_HOOKS if stateful else _STATE_HOOKS[:1]
    sync = not any(is_async(bolt, n) for n in names)
    if stateful:
        return SyncStatefulBoltExecutor(bolt) if sync else StatefulBoltExecutor(bolt)
    if getattr(bolt, "executes_batches", False) is True:
        return BatchCheckpointForwarder(bolt)
    return SyncCheckpointForwarder(bolt) if sync else CheckpointForwarder(bolt)


def _run_now(step: Coroutine[Any, Any, None]) -> None:
    """Run a checkpoint step whose awaits are all sync methods (so it never suspends)."""
    try:
        step.send(None)
    except StopIteration:
        return
    step.close()
    raise RuntimeError("a checkpoint step suspended in a sync executor")
