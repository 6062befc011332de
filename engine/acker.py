"""The XOR ledger of an acker task (pure: no queue, no clock, no logging).

Per pending spout tuple it keeps one dict entry ``root -> packed`` where ``packed`` holds
``ack_val << 13 | failed << 12 | spout_task`` (spout task 0 = not yet known): an int and
a dict slot, about 80 bytes per pending tree in CPython (Storm: about 20 in Java), and
nothing once the tree is decided. ``ack_val`` is the XOR of every edge id created and acked
in the tree; zero means fully processed. Trees are never stored. A tree not complete
``timeout`` after the acker first saw it fails: the same dict, in insertion order, is the
timer queue (``Deadlines``).

Prior art: Storm's ``Acker.java``. As there, any message may arrive before the INIT
(it is created on first sight), a tree is only decided once its spout task is known, and
a RESET restarts the timeout. Unlike there, expiry sends a FAIL (Storm's spout executor
keeps a second timer for that).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from engine.deadlines import Deadlines

__all__ = ["ACK", "FAIL", "INIT", "RESET", "TIMEOUT", "AckLedger"]

# Messages into the acker: (INIT, root, val, spout_task), (FAIL, root), (RESET, root), and
# acks as {root: XOR of ack vals}. Outcomes out of it: (ACK | FAIL, spout_task, root); the
# acker executor sends expired trees on as (TIMEOUT, spout_task, root), so a timeout needs
# no stored reason however many trees expire at once.
INIT: Final = 0
ACK: Final = 1
FAIL: Final = 2
RESET: Final = 3
TIMEOUT: Final = 4

_VAL_SHIFT: Final = 13
_FAILED: Final = 1 << 12
_TASK_MASK: Final = (1 << 12) - 1


class AckLedger:
    """Tracks pending trees by XOR; every tree is decided at most once."""

    __slots__ = ("_deadlines", "_pending", "_unknown", "acked", "failed", "timed_out")

    def __init__(self, timeout_secs: float, now: float, tick: float | None = None) -> None:
        # ``now`` is accepted for symmetry with the other entry points; nothing is due yet.
        self._pending: dict[Any, Any] = {}
        self._deadlines = Deadlines(timeout_secs, tick)
        # Entries whose spout task is unknown: messages that outlived their tree (or, in
        # principle, came before its INIT). Kept as Storm does, but not counted as pending.
        self._unknown = 0
        self.acked = 0
        self.failed = 0
        self.timed_out = 0

    @property
    def tick(self) -> float:
        """How often ``expire`` should be called (seconds)."""
        return self._deadlines.tick

    def __len__(self) -> int:
        """Trees pending now (entries whose spout task is known)."""
        return len(self._pending) - self._unknown - self._deadlines.marks

    def __contains__(self, root: int) -> bool:
        return root in self._pending

    # Root ids are typed Any here and in ``apply``: compiled, an int-typed id that fits a
    # machine word would be unboxed and boxed again, and the ledger would hold a copy of
    # an object the spout's pending map already holds.

    def init(self, root: Any, val: int, spout_task: int, now: float) -> tuple[int, int] | None:
        """The spout emitted ``root`` with edges XOR-ing to ``val``; maybe the tree is decided."""
        return self._one(self.apply([(INIT, root, val, spout_task)], {}, now))

    def ack(self, root: Any, val: int, now: float) -> tuple[int, int] | None:
        """A tuple of the tree was acked; ``val`` is its edge id XOR its children's."""
        return self._one(self.apply([], {root: val}, now))

    def fail(self, root: Any, now: float) -> tuple[int, int] | None:
        """A tuple of the tree failed: the tree fails as soon as its spout task is known."""
        return self._one(self.apply([(FAIL, root)], {}, now))

    def reset(self, root: Any, now: float) -> None:
        """Restart the tree's timeout at ``now``."""
        self.apply([(RESET, root)], {}, now)

    @staticmethod
    def _one(out: list[tuple[int, int, int]]) -> tuple[int, int] | None:
        return (out[0][0], out[0][1]) if out else None

    def apply(self, ops: Iterable[tuple], acks: dict[Any, Any],
              now: float) -> list[tuple[int, int, int]]:
        """Apply INIT/FAIL/RESET ``ops`` in order, then ``acks`` (root -> XOR of ack vals).

        Returns ``(ACK|FAIL, spout_task, root)`` for each tree decided.
        """
        out: list[tuple[int, int, int]] = []
        self._deadlines.arrive(self._pending, now)  # roots first seen now time out from now
        if ops:
            self._apply_ops(ops, out)
        if acks:
            self._apply_acks(acks, out)
        return out

    # Ids and packed values are mostly wider than a machine word: typed Any, compiled
    # code applies Python's int operations to them without first trying to unbox them.

    def _apply_ops(self, ops: Iterable[tuple], out: list[tuple[int, int, int]]) -> None:
        pending: dict[Any, Any] = self._pending
        for op in ops:
            kind, root = op[0], op[1]
            found = pending.get(root)
            new = found is None
            # First sight of a root may come before its INIT (an ack raced it).
            packed = found or 0
            if kind == INIT:
                if not new:
                    self._unknown -= 1  # it was waiting for this INIT
                packed ^= (op[2] << _VAL_SHIFT) | op[3]
                if new and not 0 < packed < _FAILED:
                    pending[root] = packed  # the common case: a new tree, not yet complete
                    continue
            elif kind == FAIL:
                self._unknown += new
                packed |= _FAILED
            else:
                self._unknown += new
                pending.pop(root, None)  # out and in again: the timeout restarts now
                pending[root] = packed
                continue
            self._decide(root, packed, out)

    def _apply_acks(self, acks: dict[Any, Any], out: list[tuple[int, int, int]]) -> None:
        pending: dict[Any, Any] = self._pending
        for root, val in acks.items():
            found = pending.get(root)
            if found is None:
                pending[root] = val << _VAL_SHIFT  # acked before its INIT: keep the XOR
                self._unknown += 1
                continue
            packed = found ^ (val << _VAL_SHIFT)
            if 0 < packed < _FAILED:  # ack_val zero, spout task known, not failed
                del pending[root]
                self.acked += 1
                out.append((ACK, packed, root))
            elif packed & _FAILED and packed & _TASK_MASK:
                self._decide(root, packed, out)
            else:
                pending[root] = packed

    def _decide(self, root: Any, packed: Any, out: list[tuple[int, int, int]]) -> None:
        task: int = packed & _TASK_MASK
        if task and (packed >> _VAL_SHIFT == 0 or packed & _FAILED):
            self._pending.pop(root, None)
            if packed & _FAILED:
                self.failed += 1
                out.append((FAIL, task, root))
            else:
                self.acked += 1
                out.append((ACK, task, root))
        else:
            self._pending[root] = packed

    def expire(self, now: float) -> list[tuple[int, int, int]]:
        """Fail every tree whose timeout passed; ``(FAIL, spout_task, root)`` for each.

        A tree whose spout task never became known (acks that outlived their tree) is
        dropped silently.
        """
        pending = self._pending
        out: list[tuple[int, int, int]] = []
        for root in self._deadlines.due_keys(pending, now):
            packed: Any = pending.pop(root)
            task: int = packed & _TASK_MASK
            if not task:
                self._unknown -= 1
            else:
                self.timed_out += 1
                self.failed += 1
                out.append((FAIL, task, root))
        self._pending = self._deadlines.trimmed(pending)
        return out
