"""Why a tree failed: ``FailReason``, and the bounded book that carries it to the spout.

A reason is recorded only when something fails (nothing is stored on the success path):
a bolt's ``fail`` or an exception out of user code. The spout executor takes it out when
the tree's FAIL reaches it. Timeouts store nothing: they arrive as their own outcome and
share the book's one ``timeout`` reason. The first reason recorded for a
root wins. Reasons whose root never reaches a spout (the tree was decided already, or
its spout task was never known) are bounded: past ``capacity`` the oldest go first.
"""

from __future__ import annotations

import logging
import traceback
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from engine.errors import FailedException

log = logging.getLogger("engine")

__all__ = ["REASON_CAPACITY", "FailReason", "FailReasons", "error_reason"]

@dataclass(frozen=True, slots=True)
class FailReason:
    """Why a tree failed: ``kind`` is ``"explicit"``, ``"timeout"`` or ``"error"``."""

    kind: str
    """``"explicit"`` (a bolt's ``fail``, a ``FailedException``), ``"timeout"`` or ``"error"``."""
    message: str
    """The text given to ``fail``, ``"Type: message"`` of an error, or the timeout."""
    trace: str | None = None
    """The last frames of an error's traceback; ``None`` for the other kinds."""
    component: str | None = None
    """The component whose task failed the tuple; ``None`` for timeouts."""


# Reasons kept at most for failed trees whose FAIL has not reached a spout yet.
REASON_CAPACITY = 65536
_TRACE_FRAMES = 5


def error_reason(exc: BaseException, component: str | None) -> FailReason:
    """The reason for ``exc`` escaping user code: ``"Type: message"`` and a short trace.

    ``FailedException`` is the user saying "fail it": kind ``"explicit"``, with the trace
    of where it was raised (an operator reading a failed record wants that line too).
    """
    message = f"{type(exc).__name__}: {exc}"
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__,
                                               limit=-_TRACE_FRAMES))
    kind = "explicit" if isinstance(exc, FailedException) else "error"
    return FailReason(kind, message, trace, component)


class FailReasons:
    """``root -> FailReason`` for failed trees on their way to the spout; first one wins."""

    __slots__ = ("_reasons", "capacity", "dropped", "timeout")

    def __init__(self, capacity: int = REASON_CAPACITY,
                 timeout_secs: float | None = None) -> None:
        # Ordered so that dropping the oldest is O(1) (a dict's first key is not, once
        # many keys were deleted from its front).
        self._reasons: OrderedDict[Any, FailReason] = OrderedDict()
        self.capacity = capacity
        self.dropped = 0
        # The one reason every timed-out tree shares: a timeout needs no entry per root.
        self.timeout = FailReason("timeout", "timed out" if timeout_secs is None
                                  else f"timed out after {timeout_secs:g} s")

    def __len__(self) -> int:
        return len(self._reasons)

    def record(self, root: Any, reason: FailReason) -> None:
        """Remember ``reason`` for ``root`` unless one is recorded already."""
        reasons = self._reasons
        if root in reasons:
            return
        if len(reasons) >= self.capacity:
            reasons.popitem(last=False)  # the oldest: its tree is long decided
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 10000 == 0:
                log.warning("fail reasons: %d kept at most, %d dropped so far; the spout's "
                            "fail will say 'reason not kept' for those trees (many fails "
                            "of trees already decided?)", self.capacity, self.dropped)
        reasons[root] = reason

    def take(self, root: Any) -> FailReason | None:
        """The reason recorded for ``root``, forgotten as it is handed out."""
        return self._reasons.pop(root, None)
