"""A stateful windowed bolt behind a repartition hop: each input partition it holds runs as
one task of the bolt would.

Under ``topology.workers`` > 1 a ``BaseStatefulWindowedBolt`` fed through a fields grouping
that crosses processes runs in a ``PartitionedWindowsExecutor``: a ``PartitionedBoltExecutor``
(state per input partition, changelog, background restores) whose bolt is a
``PartitionWindows``. Once a partition's state is in place, its first tuple makes what one
task of the bolt would have: a copy of the user's bolt, prepared, in a window of its own
(``PartitionWindow``), given the partition's map in ``init_state``. The user's
``execute(window)`` so sees the tuples of one input partition, as a Storm task sees those of
its keys under a fields grouping.

- Message ids: the reader spout puts each repartition record's offset in the bolt's
  message-id field (``message_id_field`` asks the hop for it): it grows per input
  partition and is the same when the record is read again, here or by the partition's
  next owner. The recovery ids are keyed by input partition (with component and stream),
  not by source task, and kept in the partition's map (``partition_state``), so that they
  move with it through its changelog.
- The checkpoint hooks go to every window; the executor prepares, commits and rolls back
  the partitions' maps, recovery ids included.
- A revoked partition's window is closed: the tuples it holds un-acked are failed, its
  timers stop, the user's copy is cleaned up. The partition's next owner restores its map
  (the user's keys and the ids) as of the committed input offset and reads its records
  from there: records up to the last expired id are acked and dropped, those up to the
  last evaluated one refill the window without firing it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.state.checkpoint import CHECKPOINT_STREAM
from engine.state.partitioned_executor import PartitionedBoltExecutor, PartitionedInput
from engine.usercall import report_on_error
from engine.windowing.partition_state import UserState, WindowIds
from engine.windowing.stateful import (
    BaseStatefulWindowedBolt,
    RecoveryIds,
    StatefulWindowedBoltExecutor,
)

if TYPE_CHECKING:
    from engine.context import TopologyContext
    from engine.state.kv import KeyValueState
    from engine.state.partitioned import PartitionedState
    from engine.tuples import Tuple

__all__ = ["PartitionWindow", "PartitionWindows", "PartitionedWindowsExecutor"]


class PartitionWindow(StatefulWindowedBoltExecutor):
    """The window of input partition ``partition``: its recovery ids keyed by the partition
    and kept in the partition's map ``state``."""

    def __init__(self, inner: BaseStatefulWindowedBolt, component_id: str, partition: int,
                 state: KeyValueState) -> None:
        super().__init__(inner, component_id)
        self.partition = partition
        self.partition_state = state

    def open_ids(self, conf: dict[str, Any], context: TopologyContext) -> RecoveryIds:
        return WindowIds(self.partition_state)

    def source_key(self, tup: Tuple) -> tuple[int, str, str]:
        return (self.partition, tup.source_component, tup.source_stream)

    def source_keys(self) -> list[tuple[int, str, str]]:
        return [(self.partition, component, stream)
                for component, stream in self.context.this_sources()
                if stream != CHECKPOINT_STREAM]

    async def close(self) -> list[Tuple]:
        """Stop the window (its partition was revoked); the tuples it held un-acked."""
        async with self._lock:  # an evaluation in progress ends first
            held = self.acks.unsettled(self.manager.held()) + self.held
            self.manager.clear()
            self.held = []
            try:
                await self.cleanup()
            except Exception as exc:  # the user's cleanup: reported, the revoke goes on
                report_on_error(self.out, exc)
        return held


class PartitionWindows:
    """The bolt a ``PartitionedWindowsExecutor`` runs: a ``PartitionWindow`` per input
    partition, made from ``template`` at the partition's first tuple."""

    def __init__(self, template: StatefulWindowedBoltExecutor) -> None:
        inner = template.inner
        assert isinstance(inner, BaseStatefulWindowedBolt)
        self.inner = inner
        self.windows: dict[int, PartitionWindow] = {}
        self.parts: PartitionedState | None = None

    async def prepare(self, conf: dict[str, Any], context: TopologyContext,
                      collector: Any) -> None:
        """Keep what each partition's window is prepared with."""
        self.conf, self.context, self.collector = conf, context, collector

    async def init_state(self, state: PartitionedState) -> None:
        """The partitions' state: windows are made from now on."""
        self.parts = state

    async def execute(self, tup: Tuple) -> None:
        """Run ``tup`` in the window of the partition selected for it (``parts.select``),
        made first if the partition has none."""
        assert self.parts is not None and self.parts.selected is not None
        partition = self.parts.selected
        window = self.windows.get(partition)
        if window is None:
            window = await self._open(partition)
            if window is None:
                self.collector.fail(tup)  # revoked meanwhile: its next owner reads it
                return
        await window.execute(tup)

    async def _open(self, partition: int) -> PartitionWindow | None:
        """``partition``'s window, prepared and given the partition's map; None if the
        partition was revoked meanwhile."""
        assert self.parts is not None
        state = self.parts.partitions[partition]
        window = PartitionWindow(self.inner, self.context.component_id, partition, state)
        try:
            await window.prepare(self.conf, self.context, self.collector)
            await window.init_state(UserState(state, window.source_keys()))
        except BaseException:
            await window.cleanup()
            raise
        if self.parts.partitions.get(partition) is not state:
            await window.cleanup()
            return None
        self.windows[partition] = window
        return window

    async def pre_prepare(self, txid: int) -> None:
        """Every window's ``pre_prepare``."""
        for window in list(self.windows.values()):
            await window.pre_prepare(txid)

    async def pre_commit(self, txid: int) -> None:
        """Every window's ``pre_commit``."""
        for window in list(self.windows.values()):
            await window.pre_commit(txid)

    async def pre_rollback(self) -> None:
        """Every window's ``pre_rollback``."""
        for window in list(self.windows.values()):
            await window.pre_rollback()

    async def leave(self, partition: int) -> list[Tuple]:
        """Close ``partition``'s window (revoked); the tuples it held un-acked."""
        window = self.windows.pop(partition, None)
        return [] if window is None else await window.close()

    def in_windows(self) -> int:
        """Tuples the windows hold (not acked yet)."""
        return sum(window.in_windows() for window in self.windows.values())

    async def cleanup(self) -> None:
        """Every window's ``cleanup``."""
        windows, self.windows = list(self.windows.values()), {}
        for window in windows:
            await window.cleanup()


class PartitionedWindowsExecutor(PartitionedBoltExecutor):
    """Runs a stateful windowed bolt behind a repartition hop, a window per input partition
    (see the module docstring). ``message_id_field`` names the field the hop's reader
    fills with each record's offset."""

    def __init__(self, inner: StatefulWindowedBoltExecutor, source: PartitionedInput) -> None:
        super().__init__(inner, source)
        self.message_id_field = inner.spec.message_id_field

    def task_bolt(self) -> PartitionWindows:
        return PartitionWindows(self.inner)

    async def _leave(self, partition: int) -> list[Tuple]:
        windows: PartitionWindows = self.bolt
        return await windows.leave(partition)

    def in_windows(self) -> int:
        """Tuples the partitions' windows hold (not acked yet)."""
        windows: PartitionWindows | None = getattr(self, "bolt", None)
        return 0 if windows is None else windows.in_windows()
