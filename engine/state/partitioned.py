"""``PartitionedState``: a ``KeyValueState`` kept per input partition, behind the same API.

A stateful bolt whose input is split across processes by partition keeps one map per
input partition it holds, each in its own namespace (``<topology>/<component>/p<N>``), so
that a partition's state can move with the partition. Before each tuple the executor
selects the tuple's partition; ``get``, ``put`` and ``delete`` then go to that
partition's map. The selection belongs to the task that made it (a context variable): a
tuple whose ``execute`` awaits keeps its partition while another task runs another
partition's tuples. Iteration, ``len`` and ``in`` cover every partition this process
holds. With no partition selected (a tick tuple), ``get``, ``delete`` and ``in`` look a
key up in every held partition, and ``put`` of a key no partition has is refused.

A checkpoint never writes a partition's changes to the local store itself: PREPARE sets
them aside, COMMIT makes them owed to the changelog (``take_committed``), and the
executor hands them to ``PartitionStore.commit`` only once the changelog confirmed them.
``rollback`` returns each map to its local state plus what is still owed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from engine.state.changelog import partition_namespace
from engine.state.kv import KeyValueState
from engine.state.partition_store import PartitionStore
from engine.state.store import DELETED

__all__ = ["PartitionMap", "PartitionedState"]


class PartitionMap(KeyValueState):
    """One input partition's live map, loaded from its ``PartitionStore`` namespace; its
    changes leave through ``take_changes`` (to the changelog first), never through the
    store's prepare and commit."""

    def __init__(self, store: PartitionStore, namespace: str) -> None:
        # No super().__init__: the map comes from the partition store.
        self.partition_store = store
        self.namespace = namespace
        self._changes: dict[Any, Any] = {}
        self._prepared_txid = None
        self.committed_txid = None
        self._live = store.load(namespace)

    def take_changes(self) -> dict[Any, Any]:
        """The changes since the last call (``DELETED`` for a removed key)."""
        changes, self._changes = self._changes, {}
        return changes

    def reload(self, owed: dict[Any, Any]) -> None:
        """Forget what was not committed: the local state, with ``owed`` on top."""
        self._changes = {}
        live = self._live = self.partition_store.load(self.namespace)
        for key, value in owed.items():
            if value is DELETED:
                live.pop(key, None)
            else:
                live[key] = value


class PartitionedState(KeyValueState):
    """One ``PartitionMap`` per held input partition (see the module docstring)."""

    def __init__(self, store: PartitionStore, prefix: str) -> None:
        # No super().__init__: this front loads nothing until a partition is opened.
        self.partition_store = store
        self.namespace = prefix
        self.committed_txid = None
        self.partitions: dict[int, PartitionMap] = {}
        self._current: ContextVar[tuple[int, PartitionMap] | None] = ContextVar(
            f"partition of {prefix}", default=None)
        self._prepared: dict[int, dict[Any, Any]] = {}
        self._committed: dict[int, dict[Any, Any]] = {}

    def open(self, partition: int) -> PartitionMap:
        """Hold ``partition``: its map as the store has it (restore it first)."""
        state = PartitionMap(self.partition_store,
                             partition_namespace(self.namespace, partition))
        self.partitions[partition] = state
        return state

    def close(self, partition: int) -> None:
        """Stop holding ``partition`` (revoked): its map leaves memory (the local store
        keeps what the changelog confirmed)."""
        self.partitions.pop(partition, None)
        self._prepared.pop(partition, None)
        self._committed.pop(partition, None)

    def select(self, partition: int | None) -> None:
        """The partition the calls of the running task act on from now (None: none)."""
        current = self._current.get()
        if partition is None:
            if current is not None:
                self._current.set(None)
            return
        state = self.partitions[partition]
        if current is None or current[1] is not state:  # a set allocates: only on a change
            self._current.set((partition, state))

    @property
    def selected(self) -> int | None:
        """The partition the running task selected, or None."""
        current = self._current.get()
        return None if current is None else current[0]

    @property
    def current(self) -> PartitionMap | None:
        """The map of the partition the running task selected, or None."""
        current = self._current.get()
        return None if current is None else current[1]

    def _owner(self, key: Any) -> KeyValueState | None:
        current = self._current.get()
        if current is not None:
            return current[1]
        return next((s for s in self.partitions.values() if key in s), None)

    def get(self, key: Any, default: Any = None) -> Any:
        owner = self._owner(key)
        return default if owner is None else owner.get(key, default)

    def put(self, key: Any, value: Any) -> None:
        owner = self._owner(key)
        if owner is None:
            raise KeyError(f"state {self.namespace!r}: put of {key!r} outside a tuple of an "
                           f"input partition, and no held partition has that key")
        owner.put(key, value)

    def delete(self, key: Any) -> Any:
        owner = self._owner(key)
        return None if owner is None else owner.delete(key)

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        return iter([kv for s in self.partitions.values() for kv in s])

    def __len__(self) -> int:
        return sum(len(s) for s in self.partitions.values())

    def __contains__(self, key: object) -> bool:
        owner = self._owner(key)
        return owner is not None and key in owner

    def prepare_commit(self, txid: int) -> None:
        for partition, state in self.partitions.items():
            self._prepared.setdefault(partition, {}).update(state.take_changes())

    def commit(self, txid: int | None = None) -> None:
        for partition, state in self.partitions.items():
            if txid is None:  # no checkpoint: every change at once
                self._prepared.setdefault(partition, {}).update(state.take_changes())
        for partition, changes in self._prepared.items():
            self._committed.setdefault(partition, {}).update(changes)
        self._prepared = {}

    def rollback(self) -> None:
        for partition, state in self.partitions.items():
            state.reload(self._committed.get(partition, {}))
        self._prepared = {}

    def take_committed(self) -> dict[int, dict[Any, Any]]:
        """What each partition's commits changed since the last call (``DELETED`` for a
        removed key): the records its changelog is owed."""
        committed, self._committed = self._committed, {}
        return {p: c for p, c in committed.items() if c}

    def give_back(self, changes: dict[int, dict[Any, Any]]) -> None:
        """``changes`` taken by ``take_committed`` and not written: owed again (behind what
        was committed since, which is newer)."""
        for partition, changed in changes.items():
            if partition in self.partitions:
                self._committed[partition] = {**changed, **self._committed.get(partition, {})}

    def __repr__(self) -> str:
        return f"PartitionedState({self.namespace!r}, partitions {sorted(self.partitions)})"
