"""Tuples and fields: the per-tuple objects of the hot path (``__slots__``, no dict).

A ``Tuple`` carries its values, a shared ``Source`` (component, task, stream, fields) and,
when it belongs to tracked trees, ``roots``: the pairs of Storm's ``MessageId.anchorsToIds``
flattened as ``(root_id, edge_id, root_id, edge_id, ...)``; ``ack_val`` accumulates the edge
ids of the tuples anchored on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from random import getrandbits
from typing import Any

__all__ = ["Fields", "Source", "Tuple", "new_id"]

SYSTEM_COMPONENT = "__system"
TICK_STREAM = "__tick"


def new_id() -> int:
    """A random, non-zero 64-bit id (a zero edge would vanish from an XOR ledger)."""
    return getrandbits(64) or 1


class Fields(Sequence[str]):
    """An ordered list of field names with O(1) name → index lookup."""

    __slots__ = ("_index", "_names")

    def __init__(self, names: Iterable[str]) -> None:
        self._names = tuple(names)
        self._index = {name: i for i, name in enumerate(self._names)}
        if len(self._index) != len(self._names):
            raise ValueError(f"duplicate field names in {list(self._names)}")

    def index(self, name: str, *_: Any) -> int:  # type: ignore[override]
        """The position of ``name``; raises ``KeyError`` naming the known fields."""
        try:
            return self._index[name]
        except KeyError:
            raise KeyError(f"no field {name!r}; fields are {list(self._names)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        return self._names[i]

    def __len__(self) -> int:
        return len(self._names)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Fields):
            return self._names == other._names
        if isinstance(other, list | tuple):
            return list(self._names) == list(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._names)

    def __repr__(self) -> str:
        return f"Fields({list(self._names)!r})"


class Source:
    """Where a tuple came from; one shared instance per (task, stream)."""

    __slots__ = ("component", "fields", "stream", "task")

    def __init__(self, component: str, task: int, stream: str, fields: Fields) -> None:
        self.component = component
        self.task = task
        self.stream = stream
        self.fields = fields


class Tuple:
    """A tuple as a bolt sees it: ``tup.values``, ``tup[0]``, ``tup["word"]``, ``len(tup)``."""

    __slots__ = ("_src", "ack_val", "dest", "roots", "values")

    def __init__(self, values: Sequence[Any], src: Source, dest: int,
                 roots: tuple[int, ...] | None) -> None:
        self.values = values
        self._src = src
        self.dest = dest
        self.roots = roots
        self.ack_val = 0

    @property
    def fields(self) -> Fields:
        """The fields declared for this tuple's stream."""
        return self._src.fields

    @property
    def source_component(self) -> str:
        """The component id that emitted the tuple (``"__system"`` for ticks)."""
        return self._src.component

    @property
    def source_task(self) -> int:
        """The task id that emitted the tuple (-1 for ticks)."""
        return self._src.task

    @property
    def source_stream(self) -> str:
        """The stream the tuple was emitted on."""
        return self._src.stream

    def is_tick(self) -> bool:
        """True for the engine's tick tuples, which need no ack."""
        return self._src.stream == TICK_STREAM and self._src.component == SYSTEM_COMPONENT

    def __getitem__(self, key: int | str) -> Any:
        if type(key) is int:
            return self.values[key]
        if isinstance(key, str):
            index = self._src.fields._index.get(key)
            if index is None:
                self._src.fields.index(key)  # raises the KeyError naming the fields
            return self.values[index]  # type: ignore[index]
        return self.values[key]

    def get(self, name: str, default: Any = None) -> Any:
        """The value of field ``name``, or ``default`` if the stream has no such field."""
        fields = self._src.fields
        return self.values[fields.index(name)] if name in fields else default

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.values)

    def __repr__(self) -> str:
        src = self._src
        return (f"Tuple({list(self.values)!r}, source={src.component}:{src.task}, "
                f"stream={src.stream!r})")
