"""What a bolt's collector offers (``Collector``), and the one wrapper that anchors for it.

The engine puts adapters around some bolts (windowed, stateful, checkpoint-forwarding);
each hands the user's bolt an ``AnchoringCollector`` over the task's own collector. It
passes every verb through and adds at most two things to ``emit``: anchors given by the
adapter (``anchors``: the current window's tuples) for emits that name none, and, in a
stateful topology, the refusal of an emit that ends up with no anchor at all (an
unanchored tuple would let its spout tuple complete before the state downstream of it
is committed). ``HeldAckCollector`` also holds acks until the adapter releases them.

The API's other shape, ``emit(values, stream)`` with the anchor implied (``BasicBolt``s,
transactional emitters and batch bolts), is ``engine.collector.BasicOutputCollector``
over a ``Collector``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, SupportsIndex

from engine.failure import FailReason
from engine.tuples import Tuple

__all__ = ["AnchoringCollector", "Collector", "HeldAckCollector", "has_anchor"]

Anchors = Tuple | Iterable[Tuple] | None


class Collector(Protocol):
    """A bolt task's collector: ``OutputCollector`` and the wrappers around it."""

    @property
    def component(self) -> str:
        """The id of the component whose task this collector serves."""
        ...

    def emit(self, values: Sequence[Any], anchors: Anchors = None,
             stream: str = "default") -> list[int]:
        """Emit ``values`` anchored to ``anchors``; returns the task ids it went to."""
        ...

    def emit_direct(self, task_id: SupportsIndex, values: Sequence[Any],
                    anchors: Anchors = None, stream: str = "default") -> None:
        """Emit ``values`` to ``task_id`` on a direct stream."""
        ...

    def ack(self, tup: Tuple) -> None:
        """``tup`` is processed."""
        ...

    def fail(self, tup: Tuple, reason: str | None = None) -> None:
        """Fail every tree ``tup`` belongs to (kind ``"explicit"``)."""
        ...

    def fail_with(self, tup: Tuple, reason: FailReason) -> None:
        """Fail every tree ``tup`` belongs to, recording ``reason``."""
        ...

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the timeout of every tree ``tup`` belongs to."""
        ...

    def report_error(self, exc: BaseException) -> None:
        """Count and log ``exc`` as an error of this component."""
        ...


def has_anchor(anchors: Anchors) -> bool:
    """Whether ``anchors`` names at least one tuple (an iterable other than a list or
    tuple is taken to, as it must not be consumed here)."""
    if anchors is None:
        return False
    if isinstance(anchors, Tuple) or not isinstance(anchors, list | tuple):
        return True
    return len(anchors) > 0


class AnchoringCollector:
    """A ``Collector`` over ``out``: emits naming no anchors get ``anchors`` (None: none);
    with ``required`` (the component's name for the message), an emit left without any
    anchor raises ``ValueError``."""

    __slots__ = ("_out", "_required", "anchors")

    def __init__(self, out: Collector, required: str | None = None) -> None:
        self._out = out
        self._required = required
        self.anchors: Anchors = None

    @property
    def component(self) -> str:
        """The id of the component whose task this collector serves."""
        return self._out.component

    def _anchors(self, anchors: Anchors) -> Anchors:
        if anchors is None:
            anchors = self.anchors
        if self._required is not None and not has_anchor(anchors):
            raise ValueError(f"{self._required}: bolts in a stateful topology must emit "
                             f"anchored tuples; pass anchors=<the input tuple>")
        return anchors

    def emit(self, values: Sequence[Any], anchors: Anchors = None,
             stream: str = "default") -> list[int]:
        """Emit ``values`` anchored to ``anchors``, or else to the wrapper's."""
        return self._out.emit(values, self._anchors(anchors), stream)

    def emit_direct(self, task_id: SupportsIndex, values: Sequence[Any],
                    anchors: Anchors = None, stream: str = "default") -> None:
        """``emit`` to one task on a direct stream."""
        self._out.emit_direct(task_id, values, self._anchors(anchors), stream)

    def ack(self, tup: Tuple) -> None:
        """``tup`` is processed."""
        self._out.ack(tup)

    def fail(self, tup: Tuple, reason: str | None = None) -> None:
        """Fail every tree ``tup`` belongs to (kind ``"explicit"``)."""
        self._out.fail(tup, reason)

    def fail_with(self, tup: Tuple, reason: FailReason) -> None:
        """Fail every tree ``tup`` belongs to, recording ``reason``."""
        self._out.fail_with(tup, reason)

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the timeout of every tree ``tup`` belongs to."""
        self._out.reset_timeout(tup)

    def report_error(self, exc: BaseException) -> None:
        """Count and log ``exc`` as an error of this component."""
        self._out.report_error(exc)


class HeldAckCollector(AnchoringCollector):
    """An ``AnchoringCollector`` that holds acks until ``take_acked`` hands them out."""

    __slots__ = ("acked",)

    def __init__(self, out: Collector, required: str | None = None) -> None:
        super().__init__(out, required)
        self.acked: list[Tuple] = []

    def ack(self, tup: Tuple) -> None:
        """Hold the ack (until the checkpoint covering it commits)."""
        self.acked.append(tup)

    def take_acked(self) -> list[Tuple]:
        """The acks held since the last call."""
        acked, self.acked = self.acked, []
        return acked
