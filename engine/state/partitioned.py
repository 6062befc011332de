"""``PartitionedState``: a ``KeyValueState`` kept per input partition, behind the same API.

A stateful bolt whose input is split across processes by partition keeps one map per
input partition it holds, each in its own namespace (``<topology>/<component>/p<N>``), so
that a partition's state can move with the partition. Before each tuple the executor
selects the tuple's partition; ``get``, ``put`` and ``delete`` then go to that
partition's map. Iteration, ``len`` and ``in`` cover every partition this process holds.
With no partition selected (a tick tuple), ``get``, ``delete`` and ``in`` look a key up
in every held partition, and ``put`` of a key no partition has is refused.

``prepare_commit``, ``commit`` and ``rollback`` act on every held partition. What each
partition's commit changed is kept until ``take_committed`` (its changelog records).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from engine.state.changelog import partition_namespace
from engine.state.kv import KeyValueState
from engine.state.store import SqliteStateStore

__all__ = ["PartitionedState"]


class PartitionedState(KeyValueState):
    """One ``KeyValueState`` per held input partition (see the module docstring)."""

    def __init__(self, store: SqliteStateStore, prefix: str) -> None:
        # No super().__init__: this front loads nothing until a partition is opened.
        self.store = store
        self.namespace = prefix
        self.committed_txid = None
        self.partitions: dict[int, KeyValueState] = {}
        self.current: KeyValueState | None = None
        self.selected: int | None = None  # the partition of ``current``
        self._prepared: dict[int, dict[Any, Any]] = {}
        self._committed: dict[int, dict[Any, Any]] = {}

    def open(self, partition: int) -> KeyValueState:
        """Hold ``partition``: its map as the store has it (restore it first)."""
        state = KeyValueState(self.store, partition_namespace(self.namespace, partition))
        self.partitions[partition] = state
        return state

    def close(self, partition: int) -> None:
        """Stop holding ``partition`` (revoked): its map leaves memory."""
        state = self.partitions.pop(partition, None)
        if state is not None and self.current is state:
            self.current = self.selected = None
        self._prepared.pop(partition, None)
        self._committed.pop(partition, None)

    def select(self, partition: int | None) -> None:
        """The partition the next calls act on (None: none; see the module docstring)."""
        self.current = None if partition is None else self.partitions[partition]
        self.selected = partition

    def _owner(self, key: Any) -> KeyValueState | None:
        if self.current is not None:
            return self.current
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
            self._prepared.setdefault(partition, {}).update(state._changes)
            state.prepare_commit(txid)

    def commit(self, txid: int | None = None) -> None:
        for state in self.partitions.values():
            state.commit(txid)
        for partition, changes in self._prepared.items():
            self._committed.setdefault(partition, {}).update(changes)
        self._prepared = {}

    def rollback(self) -> None:
        for state in self.partitions.values():
            state.rollback()
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
