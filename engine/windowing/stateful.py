"""Stateful windowed bolts: windows whose evaluations survive a restart without re-firing.

Storm's ``BaseStatefulWindowedBolt`` and ``StatefulWindowedBoltExecutor``. Every input tuple
carries a message id (``with_message_id_field``): an int that grows per source task and
stream and is the same when the tuple is replayed. Beside the user's state, the executor
checkpoints, per source task and stream, the highest id that expired from the window and
the highest id evaluated in a window. After a restart, replayed tuples with ids up to the
last expired one are acked and dropped, those up to the last evaluated one refill the window
without firing it, and once a tuple beyond the last evaluated id arrived from every source
that had any, the window starts firing again with the tuples held meanwhile.

Behind a repartition hop (``topology.workers`` > 1) the message ids are the repartition
records' offsets, put in the message-id field by the hop's reader, and the recovery ids are
kept per input partition instead of per source task (``engine/windowing/partitioned.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Protocol

from engine.errors import TopologyError
from engine.state.bolt import StatefulBolt
from engine.state.checkpoint import CHECKPOINT_STREAM
from engine.state.kv import KeyValueState
from engine.state.store import SqliteStateStore, open_store, release_store
from engine.usercall import awaitable
from engine.windowing.async_executor import AsyncWindowedBoltExecutor
from engine.windowing.bolt import BaseWindowedBolt
from engine.windowing.manager import Activation

if TYPE_CHECKING:
    from engine.context import TopologyContext
    from engine.tuples import Tuple

__all__ = ["BaseStatefulWindowedBolt", "RecoveryIds", "StatefulWindowedBoltExecutor"]


class BaseStatefulWindowedBolt(BaseWindowedBolt):
    """A windowed bolt with checkpointed state (``init_state``) and a message-id field."""

    def with_message_id_field(self, name: str) -> BaseStatefulWindowedBolt:
        """The field holding each tuple's message id (int, growing per source, stable
        across replays)."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"with_message_id_field takes a field name, got {name!r}")
        self._spec().message_id_field = name
        return self

    def init_state(self, state: KeyValueState) -> Any:
        """Receive the task's state; called once before the first ``execute``."""

    def pre_prepare(self, txid: int) -> Any:
        """Called before the state prepares checkpoint ``txid``."""

    def pre_commit(self, txid: int) -> Any:
        """Called before the state commits checkpoint ``txid``."""

    def pre_rollback(self) -> Any:
        """Called before the state rolls back to its last commit."""


_Key = tuple[int, str, str]


class RecoveryIds(Protocol):
    """Where a stateful window keeps its recovery ids (a ``KeyValueState`` is one)."""

    def get(self, key: Any, default: Any = None) -> Any:
        """The ids saved under ``key``, or ``default``."""
        ...

    def put(self, key: Any, value: Any) -> None:
        """Save ``value`` under ``key``."""

    def prepare_commit(self, txid: int) -> None:
        """Prepare the changes for the commit of ``txid``."""

    def commit(self, txid: int | None = None) -> None:
        """Commit what ``txid`` prepared."""

    def rollback(self) -> None:
        """Forget what was not committed."""


class StatefulWindowedBoltExecutor(AsyncWindowedBoltExecutor, StatefulBolt):
    """Runs a ``BaseStatefulWindowedBolt``; itself run by the stateful bolt executor."""

    per_partition: Callable[[Any], Any] | None = None
    """The executor that runs this bolt with a window per input partition, given the
    partitions' input (set by the wiring: ``engine.windowing.partitioned``)."""

    def __init__(self, inner: BaseStatefulWindowedBolt, component_id: str) -> None:
        super().__init__(inner, component_id)
        if self.spec.message_id_field is None:
            raise TopologyError(f"bolt {component_id!r}: a stateful windowed bolt needs "
                                f"with_message_id_field(...)")

    @property
    def _stateful(self) -> BaseStatefulWindowedBolt:
        assert isinstance(self.bolt, BaseStatefulWindowedBolt)
        return self.bolt

    async def prepare(self, conf: dict[str, Any], context: TopologyContext,
                      collector: Any) -> None:
        self.context = context
        self.initialized = False
        self.recovery: dict[_Key, tuple[int | None, int | None]] = {}
        self.held: list[Tuple] = []
        self.pre_prepared = False
        self.stream_state = self.open_ids(conf, context)
        await super().prepare(conf, context, collector)

    def open_ids(self, conf: dict[str, Any], context: TopologyContext) -> RecoveryIds:
        """Where the recovery ids live: the task's own namespace in the store,
        ``<topology>/<component>-<task>-window``, prepared and committed by the hooks."""
        self.store: SqliteStateStore | None = open_store(conf)
        ns = f"{context.topology_name}/{context.component_id}-{context.task_id}-window"
        return KeyValueState(self.store, ns)

    def source_key(self, tup: Tuple) -> _Key:
        """The recovery ids' key of ``tup``'s source: its task, component and stream."""
        return (tup.source_task, tup.source_component, tup.source_stream)

    def source_keys(self) -> list[_Key]:
        """The keys of every source this task reads (the checkpoint stream aside)."""
        return [(task, component, stream)
                for component, stream in self.context.this_sources()
                if stream != CHECKPOINT_STREAM
                for task in self.context.component_tasks(component)]

    def start(self) -> None:
        if self.initialized and not self.recovery:
            super().start()

    async def execute(self, tup: Tuple) -> None:
        if self.recovery and not tup.is_tick():
            async with self._lock:
                await self._recover(tup)
        else:
            await super().execute(tup)

    def _msg_id(self, tup: Tuple) -> int:
        msg_id = tup[self.spec.message_id_field]  # type: ignore[index]
        if not isinstance(msg_id, int) or isinstance(msg_id, bool):
            raise TypeError(f"{self.name}: message id {msg_id!r} of {tup!r} is not an int")
        return msg_id

    async def _recover(self, tup: Tuple) -> None:
        key = self.source_key(tup)
        saved = self.recovery.get(key)
        if saved is None:
            self.held.append(tup)
            return
        msg_id = self._msg_id(tup)
        last_expired, last_evaluated = saved
        if last_expired is not None and msg_id <= last_expired:
            self.out.ack(tup)  # its windows are done with it
        elif last_evaluated is not None and msg_id <= last_evaluated:
            self.add(tup)  # refills the window; triggers are not started yet
        else:
            self.held.append(tup)
            del self.recovery[key]
            if not self.recovery:
                super().start()
                held, self.held = self.held, []
                for t in held:
                    self.add(t)
                    await self.drain()

    def evaluated(self, act: Activation) -> None:
        """Record the highest expired and evaluated message ids per source."""
        updates: dict[Hashable, list[int | None]] = {}
        key_of = self.source_key
        for tuples, slot in ((act.expired, 0), (act.new, 1)):
            for tup in tuples:
                entry = updates.setdefault(key_of(tup), [None, None])
                msg_id = self._msg_id(tup)
                if entry[slot] is None or msg_id > entry[slot]:  # type: ignore[operator]
                    entry[slot] = msg_id
        for task_stream, (expired, evaluated) in updates.items():
            cur = self.stream_state.get(task_stream) or [None, None]
            self.stream_state.put(task_stream,
                                  [_max(cur[0], expired), _max(cur[1], evaluated)])

    async def init_state(self, state: KeyValueState) -> None:
        """The user's ``init_state``, then what to skip or refill from the saved ids."""
        if self.initialized:
            return
        await awaitable(self._stateful, "init_state")(state)
        for key in self.source_keys():
            saved = self.stream_state.get(key)
            if saved is not None:
                self.recovery[key] = (saved[0], saved[1])
        self.initialized = True
        self.start()

    # The checkpoint hooks take the window's lock: a timer-driven evaluation finishes before
    # the state is prepared, and the stateful executor prepares right after, without awaiting.

    async def pre_prepare(self, txid: int) -> None:
        async with self._lock:
            if self.initialized and not self.recovery:
                self.stream_state.prepare_commit(txid)
                self.pre_prepared = True
            await awaitable(self._stateful, "pre_prepare")(txid)

    async def pre_commit(self, txid: int) -> None:
        async with self._lock:
            if not self.initialized or (not self.recovery and self.pre_prepared):
                self.stream_state.commit(txid)
            await awaitable(self._stateful, "pre_commit")(txid)

    async def pre_rollback(self) -> None:
        async with self._lock:
            self.stream_state.rollback()
            await awaitable(self._stateful, "pre_rollback")()

    async def cleanup(self) -> None:
        await super().cleanup()
        store = getattr(self, "store", None)
        if store is not None:
            release_store(store)
            self.store = None


def _max(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else max(a, b)
