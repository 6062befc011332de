"""Tuples and fields: the per-tuple objects of the hot path (``__slots__``, no dict).

A ``Tuple`` carries its values, a shared ``Source`` (component, task, stream, fields) and,
when it belongs to tracked trees, the pairs of Storm's ``MessageId.anchorsToIds``: the
first as ``root`` and ``edge`` (most tuples belong to one tree, and two native fields cost
far less than a container per tuple), any further ones flattened in ``more``;
``ack_val`` accumulates the edge ids of the tuples anchored on it.

Root and edge ids are random signed 64-bit ints, as Storm's Java longs are: compiled, the
XORs on edge ids are machine instructions.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from random import Random
from typing import Any, Final

from mypy_extensions import i64

__all__ = ["Fields", "IdSource", "Source", "Tuple"]

SYSTEM_COMPONENT = "__system"
TICK_STREAM = "__tick"


ID_BATCH: Final = 1024
# Compiled (a mypyc extension), this module puts ids together from bytes in a few machine
# instructions; interpreted, the ints of an ``array`` are cheaper than that Python code.
_COMPILED: Final = not __file__.endswith(".py")


class IdSource:
    """Random, non-zero, signed 64-bit ids (a zero would vanish from an XOR ledger).

    Random bytes come ``ID_BATCH`` ids at a time (one ``getrandbits`` call per id cost
    more than the XORs the id feeds) from a generator of its own, seeded by the OS: a
    user's ``random.seed`` cannot make two sources repeat each other's ids.
    """

    __slots__ = ("_at", "_bytes", "_ints", "_random")

    def __init__(self) -> None:
        self._random = Random()
        self._bytes = b""
        self._at: i64 = 0
        self._ints: list[int] = []

    def take(self) -> i64:
        """The next id."""
        if not _COMPILED:
            ints = self._ints
            if not ints:
                ints = self._ints = array("q", self._random.randbytes(8 * ID_BATCH)).tolist()
            got: i64 = ints.pop()
            return got or 1
        b, at = self._bytes, self._at
        if at == len(b):
            b = self._bytes = self._random.randbytes(8 * ID_BATCH)
            at = 0
        self._at = at + 8
        top: i64 = b[at + 7]
        if top > 127:
            top -= 256
        new: i64 = (top << 56 | b[at + 6] << 48 | b[at + 5] << 40 | b[at + 4] << 32
                    | b[at + 3] << 24 | b[at + 2] << 16 | b[at + 1] << 8 | b[at])
        return new or 1


class Fields(Sequence[str]):
    """An ordered list of field names with O(1) name → index lookup."""

    __slots__ = ("_index", "_names")

    def __init__(self, names: Iterable[str]) -> None:
        self._names = tuple(names)
        self._index = {name: i for i, name in enumerate(self._names)}
        if len(self._index) != len(self._names):
            raise ValueError(f"duplicate field names in {list(self._names)}")

    def index(self, name: str, *_: Any) -> int:
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

    __slots__ = ("_src", "ack_val", "dest", "edge", "more", "root", "values")

    def __init__(self, values: Sequence[Any], src: Source, dest: int, root: Any = 0,
                 edge: i64 = 0, more: tuple[int, ...] | None = None) -> None:
        self.values = values
        self._src = src
        self.dest = dest
        # An int, typed Any so that compiled code keeps the boxed object: the root is only
        # ever a dict key, and one object shared by a tree's tuples is never boxed again.
        self.root = root
        self.edge = edge
        self.more = more
        self.ack_val: i64 = 0

    @property
    def roots(self) -> tuple[int, ...] | None:
        """Every ``(root id, edge id)`` pair of the trees it belongs to, flattened; None if
        untracked."""
        if not self.root:
            return None
        first = (self.root, int(self.edge))
        return first if self.more is None else first + self.more

    # One typed property per ``Source`` field: mypyc compiles each to a native getter,
    # which a shared lookup by name would turn back into a dynamic call.
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
