"""Timeouts for one fixed duration, kept inside the owner's own dict (pure: time is an argument).

Every key gets the same timeout, so deadline order is arrival order, and a ``dict`` (which
keeps insertion order) is already the timer queue: no wheel, heap or second container holds
the keys. Keys arrive in groups, one group per ``tick``; each group starts with a *mark*,
an entry of the owner's dict whose key is a private object and whose value is the group's
deadline, ``latest arrival + timeout``, updated in place as the group grows. Consequences:

- insert is the owner's ``d[key] = value`` after one ``arrive(d, now)`` per batch: O(1),
  nothing per key beyond the owner's entry;
- cancel is the owner's ``del d[key]``: a decided key leaves at once and costs no memory;
- restart (reset a timeout) is ``d.pop(key)`` then ``arrive`` and insert again: O(1);
- ``due_keys`` walks from the front and stops at the first mark not yet due: its work is
  what expires (plus, in C, skipping the slots of keys deleted since the dict last
  compacted), and, polled every tick, at most ``timeout / tick + 3`` marks live in the dict.

Guarantee: a key inserted after ``arrive(d, t)`` is returned by no ``due_keys(d, now)``
with ``now < t + timeout``, whatever order the arrival times come in (a group's deadline
only ever grows). While ``arrive`` sees non-decreasing times (a loop's clock), it is among
the keys returned by the first ``due_keys(d, now)`` with ``now >= t + timeout + tick``;
polled every ``tick``, it comes out in ``[t + timeout, t + timeout + 2 * tick)``. A key
inserted with an earlier time than the one before it can only come out late.

Prior art: Storm's ``RotatingMap`` (buckets rotated each timeout; a key expires between
T and 2T), Varghese & Lauck's hashed wheel (needed when timeouts differ per key).
"""

from __future__ import annotations

import sys
from collections import deque
from math import floor
from typing import Any, Final

__all__ = ["DEFAULT_TICK_SECS", "Deadlines"]

DEFAULT_TICK_SECS: Final = 0.2

# A dict keeps its table after deletions until an insert makes it resize; ``trimmed``
# copies one whose allocation exceeds this many bytes per entry plus ``_TRIM_FLOOR``.
_TRIM_BYTES_PER_ENTRY: Final = 256
_TRIM_FLOOR: Final = 1 << 18
_NO_GROUP: Final = -(1 << 62)


class _Mark:
    """The key of a group's mark: unique, and equal to no root id."""

    __slots__ = ()


class Deadlines:
    """Group marks for one timeout inside an owner's insertion-ordered dict."""

    __slots__ = ("_end", "_group", "_marks", "tick", "timeout")

    def __init__(self, timeout: float, tick: float | None = None) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0, got {timeout!r}")
        if tick is not None and tick <= 0:
            raise ValueError(f"tick must be > 0, got {tick!r}")
        self.timeout = timeout
        self.tick: float = tick if tick is not None else DEFAULT_TICK_SECS
        """How often the owner should call ``due_keys`` (seconds)."""
        self._marks: deque[_Mark] = deque()  # the marks in ``entries``, oldest first
        self._group: int = _NO_GROUP  # the tick index of the newest mark's group
        self._end: float = 0.0  # the newest mark's deadline

    @property
    def marks(self) -> int:
        """Marks in the owner's dict now (entries that are not the owner's)."""
        return len(self._marks)

    def arrive(self, entries: dict[Any, Any], now: float) -> None:
        """Call before inserting keys that arrive at ``now`` into ``entries``."""
        group = floor(now / self.tick)
        end = now + self.timeout
        if group > self._group:
            self._group = group
            self._marks.append(_Mark())
        elif end <= self._end:
            return  # an earlier time (or the same): the group's later deadline covers it
        self._end = end
        # In place: the mark keeps its position, its group now ends later.
        entries[self._marks[-1]] = end

    def due_keys(self, entries: dict[Any, Any], now: float) -> list[Any]:
        """The owner's keys due at ``now``, oldest first; the owner removes them itself.

        Removes the due marks from ``entries``. Call again only after removing these keys.
        """
        out: list[Any] = []
        marks = self._marks
        if not marks:
            return out
        # The front entry is the oldest mark; each group's keys run up to the next mark.
        passed = 0
        following: Any = marks[0]
        for key, value in entries.items():
            if key is following:
                if value > now:
                    break  # this group and every later one are not due yet
                passed += 1
                following = marks[passed] if passed < len(marks) else None
            else:
                out.append(key)
        for _ in range(passed):
            del entries[marks.popleft()]
        if not marks:
            self._group = _NO_GROUP  # the next arrival starts a new group
        return out

    @staticmethod
    def trimmed(entries: dict[Any, Any]) -> dict[Any, Any]:
        """``entries``, or a compact copy (same order) when its table is mostly empty.

        Keeps the owner's memory proportional to what it holds now, not to its peak.
        """
        if sys.getsizeof(entries) > _TRIM_FLOOR + _TRIM_BYTES_PER_ENTRY * len(entries):
            return dict(entries)
        return entries
