"""``BaseWindowedBolt``: what a user subclasses for windows, and the ``TupleWindow`` it gets.

The chained ``with_*`` methods follow Storm's ``BaseWindowedBolt`` builders and return the
bolt. The engine wraps the bolt in its windowing executor when the topology is created; the
user's ``execute`` receives a ``TupleWindow``, never a single tuple.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from engine.components import Component
from engine.windowing.spec import Count, Duration, WindowSpec

if TYPE_CHECKING:
    from engine.collector import OutputCollector
    from engine.context import TopologyContext
    from engine.tuples import Tuple

__all__ = ["BaseWindowedBolt", "TupleWindow"]


class WindowTuples(Protocol):
    """A window's tuples not listed yet: ``list()`` lists them (the same list each time)."""

    def list(self) -> list[Tuple]:
        """The tuples, in arrival order."""
        ...

    def __len__(self) -> int:
        """How many tuples."""
        ...


class TupleWindow:
    """One evaluation of a window.

    ``get()`` the tuples in it (arrival order), ``get_new()`` those added since the previous
    evaluation, ``get_expired()`` those that left it since then; ``end_timestamp`` is the
    window's end (ms) and ``start_timestamp`` its start (``end - length``) for duration
    windows, ``None`` for count windows; ``len(window)`` how many tuples it holds. The list
    ``get()`` returns is made at its first call, so a bolt that never calls it (one that
    keeps its aggregate from ``get_new()`` and ``get_expired()``) pays nothing for it.
    """

    __slots__ = ("_tuples", "end_timestamp", "expired", "new", "size", "start_timestamp")

    def __init__(self, tuples: list[Tuple] | WindowTuples, new: list[Tuple],
                 expired: list[Tuple], start_timestamp: int | None, end_timestamp: int,
                 size: int | None = None) -> None:
        self._tuples = tuples
        self.new = new
        self.expired = expired
        self.start_timestamp = start_timestamp
        self.end_timestamp = end_timestamp
        self.size = len(tuples) if size is None else size

    def get(self) -> list[Tuple]:
        """The tuples in the window."""
        tuples = self._tuples
        if not isinstance(tuples, list):
            tuples = self._tuples = tuples.list()
        return tuples

    @property
    def tuples(self) -> list[Tuple]:
        """The tuples in the window (``get()``)."""
        return self.get()

    def get_new(self) -> list[Tuple]:
        """The tuples added since the last evaluation."""
        return self.new

    def get_expired(self) -> list[Tuple]:
        """The tuples that expired since the last evaluation."""
        return self.expired

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return (f"TupleWindow(size={self.size}, new={len(self.new)}, "
                f"expired={len(self.expired)}, start_timestamp={self.start_timestamp}, "
                f"end_timestamp={self.end_timestamp})")


def _duration_ms(value: Any, what: str) -> int:
    if not isinstance(value, Duration):
        raise TypeError(f"{what} takes a Duration, got {type(value).__name__}")
    return value.millis


class BaseWindowedBolt(Component):
    """A bolt evaluated over windows of tuples (sliding or tumbling, by count or duration).

    Implement ``execute(self, window)`` (``def`` or ``async def``). Everything emitted from it
    without explicit anchors is anchored to every tuple of the window (to the new ones with
    ``with_incremental()``); a tuple is acked when it expires from the window (after length
    + slide), late tuples at once.
    """

    def _spec(self) -> WindowSpec:
        spec: WindowSpec | None = self.__dict__.get("window_spec")
        if spec is None:
            spec = self.window_spec = WindowSpec()
        return spec

    def with_window(self, length: Count | Duration,
                    slide: Count | Duration | None = None) -> BaseWindowedBolt:
        """A sliding window of ``length``, evaluated every ``slide`` (default ``Count(1)``)."""
        for what, value in (("length", length), ("slide", slide)):
            if value is not None and not isinstance(value, Count | Duration):
                raise TypeError(f"with_window {what} takes Count or Duration, "
                                f"got {type(value).__name__}")
        spec = self._spec()
        spec.length = length
        spec.slide = Count(1) if slide is None else slide
        return self

    def with_tumbling_window(self, length: Count | Duration) -> BaseWindowedBolt:
        """Consecutive, non-overlapping windows of ``length``."""
        return self.with_window(length, length)

    def with_timestamp_field(self, name: str) -> BaseWindowedBolt:
        """Event time: the tuple's field ``name`` holds its timestamp (int ms)."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"with_timestamp_field takes a field name, got {name!r}")
        self._spec().timestamp_field = name
        return self

    def with_timestamp_extractor(self, fn: Callable[[Tuple], int]) -> BaseWindowedBolt:
        """Event time: ``fn(tuple)`` returns the tuple's timestamp (int ms)."""
        if not callable(fn):
            raise TypeError(f"with_timestamp_extractor takes a callable, got {fn!r}")
        self._spec().timestamp_extractor = fn
        return self

    def with_lag(self, lag: Duration) -> BaseWindowedBolt:
        """Event time: tuples may arrive up to ``lag`` out of order (default 0)."""
        self._spec().lag_ms = _duration_ms(lag, "with_lag")
        return self

    def with_watermark_interval(self, interval: Duration) -> BaseWindowedBolt:
        """Event time: Storm's periodic watermark, computed every ``interval``. Without it
        the watermark moves after each batch of tuples that arrives."""
        self._spec().watermark_interval_ms = _duration_ms(interval, "with_watermark_interval")
        return self

    def with_idle_timeout(self, timeout: Duration) -> BaseWindowedBolt:
        """Event time: once no tuple has come for ``timeout`` (processing time) while the
        window holds tuples, event time goes on with the clock from the latest tuple: the
        watermark is its timestamp minus the lag plus the time the input has been quiet,
        so the last windows of a finite or paused input close (default: off, the
        watermark waits for newer tuples). A tuple that comes later stamped before that
        watermark is late."""
        millis = _duration_ms(timeout, "with_idle_timeout")
        if millis < 1:
            raise ValueError(f"with_idle_timeout takes at least 1 ms, got {timeout!r}")
        self._spec().idle_timeout_ms = millis
        return self

    def with_late_tuple_stream(self, stream_id: str) -> BaseWindowedBolt:
        """Event time: late tuples go to ``stream_id`` (one field, ``late_tuple``)."""
        if not isinstance(stream_id, str) or not stream_id:
            raise TypeError(f"with_late_tuple_stream takes a stream id, got {stream_id!r}")
        self._spec().late_tuple_stream = stream_id
        return self

    def with_incremental(self) -> BaseWindowedBolt:
        """For aggregations kept up to date from ``get_new()`` and ``get_expired()`` that
        emit downstream: emits without explicit anchors are anchored to the evaluation's
        new tuples (not to the whole window), so an emit costs what entered, not the
        window's size; a downstream failure replays those. Every tuple is still acked when
        it expires from its last window. (Evaluations cost what entered and left the window
        without it: ``window.get()`` is only listed when called.)"""
        self._spec().incremental = True
        return self

    def prepare(self, conf: dict[str, Any], context: TopologyContext,
                collector: OutputCollector) -> Any:
        """Called once per task before the first ``execute``."""

    def execute(self, window: TupleWindow) -> Any:
        """Process one evaluation of the window."""

    def cleanup(self) -> Any:
        """Called once per task at shutdown."""
