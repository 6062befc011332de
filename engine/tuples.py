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

SYSTEM_COMPONENT: Final = "__system"
TICK_STREAM: Final = "__tick"


ID_BATCH: Final = 1024
# Compiled (a mypyc extension), this module mixes ids from a counter with native 64-bit
# arithmetic that wraps around (CPython's own build flags, -fwrapv, which extensions
# inherit); interpreted, the ints of an ``array`` of random bytes are cheaper than that.
_COMPILED: Final = not __file__.endswith(".py")

# SplitMix64's constants as signed 64-bit ints: the counter's step (the golden ratio) and
# the two multipliers of its finalizer. Compiled code keeps ints this wide boxed, so each
# source copies them into native fields once.
_GOLDEN: Final = -7046029254386353131
_MIX1: Final = -4658895280553007687
_MIX2: Final = -7723592293110705685


class IdSource:
    """Random, non-zero, signed 64-bit ids (a zero would vanish from an XOR ledger).

    Compiled, each id is SplitMix64's output for the next value of a counter that starts
    at 64 random bits from the OS: a bijective, non-linear mix (no subset of a few ids
    XORs to zero by construction, as a linear generator's would), a few machine
    instructions and no allocation per id. Interpreted, random bytes come ``ID_BATCH`` ids
    at a time. Either way the source is seeded by the OS, never by ``random``'s shared
    generator: a user's ``random.seed`` cannot make two sources repeat each other's ids.
    """

    __slots__ = ("_golden", "_ints", "_mix1", "_mix2", "_random", "_root", "_state")

    def __init__(self) -> None:
        self._random = Random()
        self._ints: list[int] = []
        self._state: i64 = self._random.getrandbits(64) - (1 << 63)
        self._golden: i64 = _GOLDEN
        self._mix1: i64 = _MIX1
        self._mix2: i64 = _MIX2
        # Roots count up from a random start, 2^61 away from wrapping around.
        self._root: i64 = self._random.getrandbits(62) - (1 << 61)

    def root(self) -> i64:
        """The next root id: one more than the last (never 0). A root needs to be unique
        among the trees in flight, not random (edges carry the XOR's randomness), and
        consecutive keys keep the dicts keyed by them (the spout's pending trees, the
        acker's ledger) touching their memory in order: with 100,000 trees in flight a
        random key misses the CPU cache at every lookup. Each source starts at its own
        random point of a 2^62 range, so two sources' roots in flight coincide with a
        chance of about (trees in flight) / 2^61, as for random roots.
        """
        r: i64 = self._root + 1
        if r == 0:
            r = 1
        self._root = r
        return r

    def take(self) -> i64:
        """The next id."""
        if not _COMPILED:
            ints = self._ints
            if not ints:
                ints = self._ints = array("q", self._random.randbytes(8 * ID_BATCH)).tolist()
            got: i64 = ints.pop()
            return got or 1
        z: i64 = self._state + self._golden
        self._state = z
        # ``>>`` is arithmetic on i64: the mask makes each a logical shift.
        z = (z ^ ((z >> 30) & 0x3FFFFFFFF)) * self._mix1
        z = (z ^ ((z >> 27) & 0x1FFFFFFFFF)) * self._mix2
        z ^= (z >> 31) & 0x1FFFFFFFF
        if z == 0:
            return 1
        return z


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
            values = self.values
            if type(values) is list:  # compiled: a native list read, no generic lookup
                row: list[Any] = values
                return row[key]
            return values[key]
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
