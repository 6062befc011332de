"""Groupings: turn an emitted tuple's values into target task ids.

One small class per grouping, built once per (emitting task, subscription); ``choose``
returns a list that callers must not mutate (singleton lists are shared to keep the hot
path allocation-free). Fields hashing is stable across processes and runs: CRC-32 of the
values' bytes, never Python's salted ``hash()``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Final
from zlib import adler32, crc32

from engine.queue_watch import QueueWatch

__all__ = ["SHUFFLE_CYCLE", "Grouper", "make_grouper", "stable_hash"]

# A load-aware shuffle's choices between two looks at the queues (at least; a multiple of
# the number of targets).
SHUFFLE_CYCLE: Final = 64


def _hash_one(value: Any) -> int:
    kind = type(value)
    if kind is str:
        return crc32(value.encode())
    if kind is int:
        number: int = value
        return number & 0xFFFFFFFF
    if kind is bytes:
        return crc32(value)
    return crc32(repr(value).encode())


def stable_hash(values: Sequence[Any]) -> int:
    """A 32-bit hash of ``values`` that is the same in every process and every run."""
    h = 0
    for value in values:
        h = (h * 31 + _hash_one(value)) & 0xFFFFFFFF
    return h


class Grouper:
    """Chooses target tasks for one subscription, seen from one emitting task."""

    def __init__(self, targets: list[int]) -> None:
        self.targets = sorted(targets)
        self._singletons = [[t] for t in self.targets]

    def choose(self, values: Sequence[Any]) -> list[int]:
        """The target task ids for a tuple with ``values``."""
        raise NotImplementedError


class ShuffleGrouper(Grouper):
    """Round-robin over a shuffled order of the targets: even load, no per-call randomness.

    Load-aware when given the targets' queues (``watch``), as Storm's load-aware shuffle:
    a target whose queue is full, or whose task has been on one call for ``watch.secs``, is
    left out of the rotation until it has room again (or returns), so one stuck task does
    not stall the others. When every queue is full, the stuck ones
    (``QueueWatch``) are left out (if all are, the rotation stays as it was). The
    rotation is the shuffled targets repeated to at least ``SHUFFLE_CYCLE`` entries, and queues
    are looked at only when it wraps: ``choose`` costs the same as a plain round-robin.
    """

    def __init__(self, targets: list[int]) -> None:
        super().__init__(targets)
        random.shuffle(self._singletons)
        self._all = self._singletons
        self._watch: QueueWatch | None = None
        self._executors: list[int] = []
        self._cycle = self._singletons
        self._next = 0

    def watch(self, watch: QueueWatch, executors: list[int]) -> None:
        """Route around full queues; ``executors[i]`` (an index into ``watch.queues``)
        runs ``targets[i]``."""
        by_task = dict(zip(self.targets, executors, strict=True))
        self._watch = watch
        self._executors = [by_task[s[0]] for s in self._all]
        self._cycle = self._all * -(-SHUFFLE_CYCLE // len(self._all))

    def _refresh(self, watch: QueueWatch) -> None:
        queues = watch.queues
        pairs = list(zip(self._all, self._executors, strict=True))
        room = [s for s, ex in pairs
                if not queues[ex].full() and not watch.hung(ex, watch.secs)]
        if not room:
            room = [s for s, ex in pairs if not watch.stuck(ex)]
        if room:
            self._cycle = room * -(-SHUFFLE_CYCLE // len(room))

    def choose(self, values: Sequence[Any]) -> list[int]:
        i = self._next
        if i + 1 == len(self._cycle):
            self._next = 0
            chosen = self._cycle[i]
            if self._watch is not None:
                self._refresh(self._watch)
            return chosen
        self._next = i + 1
        return self._cycle[i]


class FieldsGrouper(Grouper):
    """Equal values of the grouping fields go to the same task."""

    # Keys remembered per grouper; past this many the memo starts over (bounded memory).
    MEMO_SIZE = 65536

    def __init__(self, targets: list[int], indexes: list[int]) -> None:
        super().__init__(targets)
        self._indexes = indexes
        self._single = indexes[0] if len(indexes) == 1 else None
        self._n = len(self._singletons)
        # One grouping field of type str: hashing is the cost, and keys repeat.
        self._memo: dict[str, list[int]] = {}

    def choose(self, values: Sequence[Any]) -> list[int]:
        if self._single is not None:
            value = values[self._single]
            if type(value) is str:
                hit = self._memo.get(value)
                if hit is not None:
                    return hit
                hit = self._singletons[crc32(value.encode()) % self._n]
                if len(self._memo) >= self.MEMO_SIZE:
                    self._memo.clear()
                self._memo[value] = hit
                return hit
            h = stable_hash((value,))
        else:
            h = stable_hash([values[i] for i in self._indexes])
        return self._singletons[h % self._n]


class PartialKeyGrouper(Grouper):
    """Two candidate tasks per key (two independent hashes); the less loaded one wins."""

    def __init__(self, targets: list[int], indexes: list[int]) -> None:
        super().__init__(targets)
        self._indexes = indexes
        self._load = [0] * len(self.targets)

    def choose(self, values: Sequence[Any]) -> list[int]:
        key = repr([values[i] for i in self._indexes]).encode()
        n = len(self._load)
        first, second = crc32(key) % n, adler32(key) % n
        pick = first if self._load[first] <= self._load[second] else second
        self._load[pick] += 1
        return self._singletons[pick]


class AllGrouper(Grouper):
    """Every target task."""

    def choose(self, values: Sequence[Any]) -> list[int]:
        return self.targets


class GlobalGrouper(Grouper):
    """The target task with the lowest id."""

    def choose(self, values: Sequence[Any]) -> list[int]:
        return self._singletons[0]


class CustomGrouper(Grouper):
    """Delegates to the user's ``choose_tasks(task_id, values)``."""

    def __init__(self, targets: list[int], custom: Any, source_task: int) -> None:
        super().__init__(targets)
        self._custom = custom
        self._task = source_task

    def choose(self, values: Sequence[Any]) -> list[int]:
        # int(): a user's grouping may answer numpy ints, which compiled code refuses.
        return [int(t) for t in self._custom.choose_tasks(self._task, list(values))]


def make_grouper(kind: str, targets: list[int], indexes: list[int], custom: Any,
                 source_task: int) -> Grouper:
    """The grouper for a subscription of ``kind`` (``"direct"`` never reaches here)."""
    if kind in ("shuffle", "none", "local_or_shuffle"):
        return ShuffleGrouper(targets)
    if kind == "fields":
        return FieldsGrouper(targets, indexes)
    if kind == "partial_key":
        return PartialKeyGrouper(targets, indexes)
    if kind == "all":
        return AllGrouper(targets)
    if kind == "global":
        return GlobalGrouper(targets)
    if kind == "custom":
        return CustomGrouper(targets, custom, source_task)
    raise ValueError(f"unknown grouping {kind!r}")
