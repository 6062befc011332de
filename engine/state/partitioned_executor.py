"""``PartitionedBoltExecutor``: a ``StatefulBolt`` whose state is kept per input partition
and moves with it, under ``topology.workers`` > 1.

The engine puts it in place of the ``StatefulBoltExecutor`` of a stateful bolt behind a
repartition hop (``engine/keyed``). The bolt's API does not change: ``init_state`` gets a
``KeyValueState`` (a ``PartitionedState``), and before each tuple its input partition is
selected. Besides what ``StatefulBoltExecutor`` does:

- a partition assigned (or, failing that, its first tuple) starts the restore of its state
  in the background (``PartitionHolds``): its records are not fetched meanwhile and only
  its tuples wait. A host that held the partition before (its state directory kept)
  reads only what the changelog got since; one log line says how many records it took
  and how long. A restore that fails is tried again from where it stopped; one that is
  refused (state that is gone, a record that cannot be read) stops the topology with one
  line (``TopologyContext.refuse``, exit status 2), its partition's tuples left unacked;
- at each checkpoint COMMIT, what each partition's commit changed is written to its
  changelog with a marker, and confirmed by the broker; then the local state takes it,
  with the changelog offset it reached; then the tuples it covers are acked (so their
  input offsets can be committed). A failed write fails the checkpoint and keeps the
  changes for the next COMMIT;
- when the group takes partitions away, a changelog write in progress ends first, then
  their state leaves memory and their held tuples are failed, with those whose acks wait
  for a commit (their changes leave unwritten): their new owner reads them again. A tuple
  of such a partition that still comes is failed, until the partition is assigned again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from engine.config import TOPOLOGY_STATE_ALLOW_EMPTY, TOPOLOGY_STATE_STANDBY_REPLICAS
from engine.context import TopologyContext
from engine.state.changelog import StateRefused, partition_namespace
from engine.state.checkpoint import CHECKPOINT_STREAM
from engine.state.executor import StatefulBoltExecutor
from engine.state.holds import PartitionHolds
from engine.state.kv import KeyValueState
from engine.state.partition_store import PartitionStore
from engine.state.partitioned import PartitionedState
from engine.state.restored import Restored, Written
from engine.state.standby import StandbyCopy, StandbyKeeper, standby_namespace
from engine.state.store import SqliteStateStore, open_store
from engine.tuples import Tuple
from engine.usercall import fail_on_error

__all__ = ["PartitionedBoltExecutor", "PartitionedInput", "keyed_executor"]

log = logging.getLogger("engine.state")


class PartitionedInput(Protocol):
    """What the input's system offers a bolt that keeps state per partition: its
    ``partitions`` (known once started) and its changelog's name (``topic``), and:"""

    partitions: list[int]
    topic: str

    def partition_of(self, values: Sequence[Any]) -> int:
        """The input partition of a tuple with ``values``."""
        ...

    async def start(self, on_revoked: Any, on_assigned: Any = None,
                    allow_empty: bool = False) -> None:
        """Create or check the changelog; call ``on_revoked(partitions)`` on revocations
        and ``on_assigned(partitions)`` on assignments."""

    def hold(self, partition: int) -> None:
        """Do not fetch ``partition`` until its restore ended."""

    async def restore(self, partition: int, store: PartitionStore,
                      namespace: str) -> Restored:
        """Bring ``namespace`` up to the changelog's end; then fetch the partition again.
        Raises ``StateRefused`` for state that cannot be trusted."""
        ...

    async def write(self, changes: Mapping[int, Mapping[Any, Any]],
                    partitions: Iterable[int]) -> dict[int, Written]:
        """Write and confirm each partition's committed changes, with a marker for each
        of ``partitions``; where each partition's changelog stands."""
        ...

    async def follow(self, partition: int, copy: StandbyCopy) -> None:
        """Keep the standby ``copy`` of ``partition`` caught up until cancelled."""

    async def stop(self) -> None:
        """Close what ``start`` opened."""


class PartitionedBoltExecutor(StatefulBoltExecutor):
    """A ``StatefulBoltExecutor`` with state per input partition (see the module docstring)."""

    partitioned = True

    def __init__(self, inner: Any, source: PartitionedInput) -> None:
        super().__init__(inner)
        self.source = source
        self.restores = 0
        self.restored_records = 0
        self.standbys: StandbyKeeper | None = None  # with topology.state.standby.replicas

    def open_state(self, conf: dict[str, Any], context: TopologyContext) -> KeyValueState:
        self.store: SqliteStateStore | None = open_store(conf)
        self.partition_store = PartitionStore(self.store)
        self.parts = PartitionedState(self.partition_store, f"{context.topology_name}/"
                                                            f"{context.component_id}")
        self.holds = PartitionHolds(self._restore, self._run_held, self._retry,
                                    self._refused)
        self.writing = asyncio.Lock()
        return self.parts

    async def prepare(self, conf: dict[str, Any], context: TopologyContext,
                      collector: Any) -> None:
        await super().prepare(conf, context, collector)
        self.context = context
        await self.source.start(self._revoked, self._assigned,
                                bool(conf.get(TOPOLOGY_STATE_ALLOW_EMPTY)))
        if conf.get(TOPOLOGY_STATE_STANDBY_REPLICAS):
            prefix = self.parts.namespace
            self.standbys = StandbyKeeper(
                self.partition_store, lambda p: partition_namespace(prefix, p),
                self.source.topic, self.source.follow)

    async def execute(self, tup: Tuple) -> None:
        """As ``StatefulBoltExecutor.execute``; a data tuple for a sync ``execute`` runs in
        this call, without the two coroutines of its own that ``_handle`` would take."""
        if self._run_async or not self.initialized or tup.source_stream == CHECKPOINT_STREAM:
            await super().execute(tup)
        elif self._admit(tup):
            self._run(tup)

    async def _handle(self, tup: Tuple) -> None:
        if not self.initialized:
            self.pending.append(tup)
        elif self._admit(tup):
            await self._execute(tup)

    def _admit(self, tup: Tuple) -> bool:
        """Whether ``tup`` runs now, its partition selected; a tuple of a restoring
        partition is held for later, one of a revoked partition failed."""
        partition = self.source.partition_of(tup.values)
        admitted = self.holds.admit(partition, tup)
        if admitted:
            self.parts.select(partition)
            return True
        if admitted is None:
            self.out.fail(tup)  # its partition was revoked: the new owner reads it
        return False

    async def _restore(self, partition: int) -> None:
        namespace = partition_namespace(self.parts.namespace, partition)
        if self.partition_store.adopt(namespace, standby_namespace(namespace)):
            log.info("%s: partition %d: taking over its standby copy", self.name, partition)
        got = await self.source.restore(partition, self.partition_store, namespace)
        self.parts.open(partition)
        self.restores += 1
        self.restored_records += got.read
        log.info("%s: partition %d restored: %d changelog records in %.2f s, read %s "
                 "(%d changes applied, %d beyond the committed input offset skipped)",
                 self.name, partition, got.read, got.secs,
                 "past the state this host held" if got.delta else "from the beginning",
                 got.applied, got.skipped)

    async def _run_held(self, partition: int, held: list[Tuple]) -> None:
        for tup in held:
            self.parts.select(partition)
            try:
                await self._execute(tup)
            except BaseException as exc:
                fail_on_error(self.out, exc, (tup,))

    def _retry(self, partition: int, exc: BaseException, attempt: int, delay: float) -> None:
        # The back-off (1, 2, 4 … 30 s) paces these lines.
        log.warning("%s: restore of partition %d failed (%s: %s), try %d; trying again in "
                    "%g s from where it stopped; its tuples wait", self.name, partition,
                    type(exc).__name__, exc, attempt, delay)

    def _refused(self, partition: int, exc: StateRefused) -> None:
        self.context.refuse(f"{self.name}: partition {partition}: {exc}")

    async def _committed(self, txid: int) -> None:
        async with self.writing:
            changes = self.parts.take_committed()
            try:
                written = await self.source.write(changes, list(self.parts.partitions))
            except BaseException:
                self.parts.give_back(changes)
                raise
            for partition, at in written.items():
                if partition in self.parts.partitions:
                    self.partition_store.commit(
                        partition_namespace(self.parts.namespace, partition),
                        changes.get(partition, {}), at.first, at.next_offset, at.marker)

    async def _assigned(self, partitions: list[int]) -> None:
        standbys = self.standbys
        if standbys is not None:
            await standbys.drop(partitions)  # their copies are the restores' to take
        for partition in partitions:
            self.source.hold(partition)
            self.holds.start(partition)
        if standbys is not None:
            owned = self.holds.ready | set(self.holds.restoring()) | set(partitions)
            standbys.keep(p for p in self.source.partitions if p not in owned)

    async def _revoked(self, partitions: list[int]) -> None:
        async with self.writing:
            for partition in partitions:
                for tup in self.holds.drop(partition):
                    self.out.fail(tup)
                for tup in await self._leave(partition):
                    self.out.fail(tup)
                self.parts.close(partition)
            self._fail_uncommitted(set(partitions))
        if self.standbys is not None:
            self.standbys.keep(partitions)

    async def _leave(self, partition: int) -> list[Tuple]:
        """Put away what the bolt keeps of revoked ``partition`` beside its state; the
        tuples it holds un-acked, to fail (none here: a plain bolt holds none)."""
        return []

    def _fail_uncommitted(self, gone: set[int]) -> None:
        """Fail the tuples of partitions ``gone`` whose acks wait for a commit: their
        changes leave with the partition unwritten, so their new owner must read them
        again (acked, their offsets could be committed first)."""
        of, out = self.source.partition_of, self.out
        for held in (self.prepared, self.collector.acked):
            keep = []
            for tup in held:
                if of(tup.values) in gone:
                    out.fail(tup)
                else:
                    keep.append(tup)
            held[:] = keep

    def metrics(self) -> dict[str, Any]:
        """Restores done, changelog records they applied, partitions restoring now (and
        the bolt's own metrics, if it has any)."""
        own = getattr(getattr(self, "bolt", None), "metrics", None)
        out: dict[str, Any] = dict(own()) if callable(own) else {}
        holds = getattr(self, "holds", None)
        standbys = self.standbys
        out.update(state_restores=self.restores, state_restored_records=self.restored_records,
                   state_restoring=0 if holds is None else len(holds.restoring()),
                   state_standby_partitions=0 if standbys is None else len(
                       standbys.following()))
        return out

    async def cleanup(self) -> None:
        holds = getattr(self, "holds", None)
        if holds is not None:
            await holds.close()
        if self.standbys is not None:
            await self.standbys.close()
        await self.source.stop()
        await super().cleanup()


def keyed_executor(bolt: Any, source: PartitionedInput) -> PartitionedBoltExecutor | None:
    """The executor of stateful ``bolt`` with its state per input partition of ``source``:
    the one the bolt names (``per_partition(source)``: a stateful window's, one window per
    partition), else a ``PartitionedBoltExecutor``; None where it cannot be (a bolt that
    holds tuples by design, ``hold_secs``, and names none)."""
    own = getattr(bolt, "per_partition", None)
    if own is not None:
        executor: PartitionedBoltExecutor = own(source)
        return executor
    if getattr(bolt, "hold_secs", None) is not None:
        return None
    return PartitionedBoltExecutor(bolt, source)
