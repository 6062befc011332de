"""One input partition's map shared by its window's bolt and its window's recovery ids.

Behind a repartition hop a stateful windowed bolt keeps one ``KeyValueState`` per input
partition (``PartitionedState``). The recovery ids of the partition's window live in that
same map, under the reserved keys ``("$window", partition, component, stream)``: written to
the partition's changelog at the same commits as the user's keys and restored with them,
both are as of the same checkpoint wherever the partition goes. ``UserState`` is the map as
the user's bolt sees it (iteration, ``len`` and ``in`` leave the reserved keys out);
``WindowIds`` is the window's view of its ids, whose prepare, commit and rollback are the
map's own (done by the executor for every partition), so do nothing here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from engine.state.kv import KeyValueState

__all__ = ["WINDOW_KEY", "UserState", "WindowIds", "is_window_key"]

WINDOW_KEY = "$window"
"""The first element of every reserved key: a bolt's own keys must not be tuples that start
with it."""


def is_window_key(key: Any) -> bool:
    """True for a key under which a window keeps its recovery ids."""
    return type(key) is tuple and len(key) > 0 and key[0] == WINDOW_KEY


class UserState(KeyValueState):
    """``state`` without the window's reserved keys (see the module docstring); ``sources``
    are the window's (``source_keys``), the only ones it keeps ids for."""

    def __init__(self, state: KeyValueState, sources: Iterable[tuple[Any, ...]]) -> None:
        # No super().__init__: a view over ``state``, which it loads and commits.
        self.state = state
        self.namespace = state.namespace
        self._reserved = [(WINDOW_KEY, *key) for key in sources]

    @property
    def committed_txid(self) -> int | None:
        """The checkpoint that committed the map."""
        return self.state.committed_txid

    @committed_txid.setter
    def committed_txid(self, txid: int | None) -> None:
        self.state.committed_txid = txid

    def get(self, key: Any, default: Any = None) -> Any:
        return self.state.get(key, default)

    def put(self, key: Any, value: Any) -> None:
        self.state.put(key, value)

    def delete(self, key: Any) -> Any:
        return self.state.delete(key)

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        return iter([kv for kv in self.state if not is_window_key(kv[0])])

    def __len__(self) -> int:
        state = self.state
        return len(state) - sum(1 for key in self._reserved if key in state)

    def __contains__(self, key: object) -> bool:
        return not is_window_key(key) and key in self.state

    def prepare_commit(self, txid: int) -> None:
        self.state.prepare_commit(txid)

    def commit(self, txid: int | None = None) -> None:
        self.state.commit(txid)

    def rollback(self) -> None:
        self.state.rollback()

    def __repr__(self) -> str:
        return f"UserState({self.state!r})"


class WindowIds:
    """The recovery ids of one partition's window, in the partition's map under reserved
    keys (a ``RecoveryIds``; see the module docstring)."""

    def __init__(self, state: KeyValueState) -> None:
        self.state = state

    def get(self, key: Any, default: Any = None) -> Any:
        """The ids saved for source ``key``, or ``default``."""
        return self.state.get((WINDOW_KEY, *key), default)

    def put(self, key: Any, value: Any) -> None:
        """Save the ids of source ``key``."""
        self.state.put((WINDOW_KEY, *key), value)

    def prepare_commit(self, txid: int) -> None:
        """Nothing: the executor prepares the partition's map."""

    def commit(self, txid: int | None = None) -> None:
        """Nothing: the executor commits the partition's map."""

    def rollback(self) -> None:
        """Nothing: the executor rolls the partition's map back."""
