"""``KeyValueState``: a stateful bolt's map, checkpointed through a ``StateStore``.

Storm's ``KeyValueState`` with the semantics of its in-memory implementation, persisted:
reads and writes go to a live map in memory; ``prepare_commit(txid)`` saves what changed
since the previous prepare; ``commit(txid)`` makes it the committed state; ``rollback()``
forgets everything not committed and reloads the committed map. After a restart the live
map is what the last commit left. Keys and values must be JSON-serialisable (a list key
comes back as a tuple).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from engine.state.store import DELETED, StateStore

__all__ = ["KeyValueState"]


class KeyValueState:
    """A checkpointed key-value map; iterate it for ``(key, value)`` pairs."""

    def __init__(self, store: StateStore, namespace: str) -> None:
        self.store = store
        self.namespace = namespace
        self._changes: dict[Any, Any] = {}
        self._prepared_txid: int | None = None
        self.committed_txid, self._live = store.load(namespace)

    def get(self, key: Any, default: Any = None) -> Any:
        """The value of ``key``, or ``default``."""
        return self._live.get(key, default)

    def put(self, key: Any, value: Any) -> None:
        """Set ``key`` to ``value`` (saved at the next checkpoint)."""
        self._live[key] = value
        self._changes[key] = value

    def delete(self, key: Any) -> Any:
        """Remove ``key``; return the value it had, or ``None`` when absent (as Storm's)."""
        value = self._live.pop(key, DELETED)
        if value is DELETED:
            return None
        self._changes[key] = DELETED
        return value

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        return iter(list(self._live.items()))

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, key: object) -> bool:
        return key in self._live

    def prepare_commit(self, txid: int) -> None:
        """Save the changes since the last prepare, for the commit of ``txid``."""
        self.store.prepare(self.namespace, txid, self._changes)
        self._changes = {}
        self._prepared_txid = txid

    def commit(self, txid: int | None = None) -> None:
        """Commit ``txid``'s prepared changes; with no txid, write every change at once."""
        if txid is None:
            self.store.write(self.namespace, self._changes)
            self._changes = {}
            return
        self.store.commit(self.namespace, txid)
        if self._prepared_txid != txid:
            # Prepared before a restart: the committed map changed under this live map.
            _, self._live = self.store.load(self.namespace)
            for key, value in self._changes.items():
                if value is DELETED:
                    self._live.pop(key, None)
                else:
                    self._live[key] = value
        self._prepared_txid = None
        self.committed_txid = txid if self.committed_txid is None else max(
            txid, self.committed_txid)

    def rollback(self) -> None:
        """Forget what was not committed: the live map becomes the committed one."""
        self.store.rollback(self.namespace)
        self._changes = {}
        self._prepared_txid = None
        self.committed_txid, self._live = self.store.load(self.namespace)

    def __repr__(self) -> str:
        return f"KeyValueState({self.namespace!r}, {len(self._live)} keys)"
