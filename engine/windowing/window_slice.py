"""An evaluation's window, taken from the manager's queue only when someone asks for it.

In the ordered form the window is a range of the queue. A bolt that keeps its aggregate
from what entered and what left never asks for the whole window, so an evaluation does not
copy it: ``WindowSlice`` remembers the range and copies it at the first ``list()``
(``window.get()``, or an emit anchored to the window). The manager makes every slice still
held copy its range before it drops any queued item (``WindowManager._keep_slices``), so a
slice gives the same list whenever it is asked, as a copy made at the evaluation would.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

__all__ = ["SliceSource", "WindowSlice"]


class SliceSource(Protocol):
    """Where a slice's items are: the queue of a window manager."""

    def slice(self, first: int, end: int) -> list[Any]:
        """The items queued ``first``-th to before ``end``-th since the start."""
        ...


class WindowSlice:
    """The items ``first`` to before ``end`` (counted since the queue's start) of
    ``source``, copied at the first ``list()``."""

    __slots__ = ("__weakref__", "_end", "_first", "_items", "_source")

    def __init__(self, source: SliceSource, first: int, end: int) -> None:
        self._source: SliceSource | None = source
        self._first = first
        self._end = end
        self._items: list[Any] | None = None

    def list(self) -> list[Any]:
        """The items, in arrival order (the same list at every call)."""
        items = self._items
        if items is None:
            assert self._source is not None
            items = self._items = self._source.slice(self._first, self._end)
            self._source = None
        return items

    def __iter__(self) -> Iterator[Any]:
        return iter(self.list())

    def __len__(self) -> int:
        return self._end - self._first
