"""Window lengths and slides: ``Count(n)`` and ``Duration(seconds)``, and their checks.

What Storm's ``BaseWindowedBolt`` builders record, checked the way Storm's
``WindowedBoltExecutor.validate`` checks them, so that a window cannot outlive the tuples it
holds: a duration window must fit in ``topology.message.timeout.secs`` (otherwise the spout
replays tuples still waiting in the window), and a count window in
``topology.max.spout.pending`` (otherwise the spout stops before the window fills).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.config import TOPOLOGY_MAX_SPOUT_PENDING, TOPOLOGY_MESSAGE_TIMEOUT_SECS
from engine.errors import TopologyError

__all__ = ["Count", "Duration", "WindowSpec", "check_limits"]

CLOSING_TICK_MS = 1000
"""With the watermark moving per batch: how often a window checks whether its input ended
or has been quiet (more often if its idle timeout is shorter)."""


@dataclass(frozen=True, slots=True)
class Count:
    """A window length or slide counted in tuples (an int >= 1)."""

    value: int

    def __post_init__(self) -> None:
        if not isinstance(self.value, int) or isinstance(self.value, bool) or self.value < 1:
            raise ValueError(f"Count must be an int >= 1, got {self.value!r}")


@dataclass(frozen=True, slots=True)
class Duration:
    """A window length, slide, lag or interval in seconds; kept as whole milliseconds."""

    seconds: float

    def __post_init__(self) -> None:
        ok = isinstance(self.seconds, int | float) and not isinstance(self.seconds, bool)
        if not ok or self.seconds < 0:
            raise ValueError(f"Duration must be a number of seconds >= 0, got {self.seconds!r}")

    @property
    def millis(self) -> int:
        """The duration in whole milliseconds."""
        return round(self.seconds * 1000)

    @classmethod
    def of_millis(cls, ms: int) -> Duration:
        """``Duration`` from milliseconds."""
        return cls(ms / 1000)


@dataclass(slots=True)
class WindowSpec:
    """What the chained ``with_*`` methods of a windowed bolt set."""

    length: Count | Duration | None = None
    slide: Count | Duration = Count(1)
    timestamp_field: str | None = None
    timestamp_extractor: Callable[[Any], int] | None = None
    lag_ms: int = 0
    watermark_interval_ms: int | None = None
    """Event time: the period of Storm's periodic watermark; None (the default): the
    watermark moves after each batch of tuples that arrives."""
    idle_timeout_ms: int | None = None
    """Event time: how long the input may be quiet, while the window holds tuples, before
    event time goes on with the clock; None (the default): the watermark waits for tuples."""
    late_tuple_stream: str | None = None
    message_id_field: str | None = None
    incremental: bool = False

    @property
    def event_time(self) -> bool:
        """True when tuples carry their own timestamps (a field or an extractor)."""
        return self.timestamp_field is not None or self.timestamp_extractor is not None

    @property
    def watermark_tick_ms(self) -> int:
        """Event time: the period of the watermark timer: the periodic watermark's interval
        when one is set, else ``CLOSING_TICK_MS`` or the idle timeout, the shorter."""
        if self.watermark_interval_ms is not None:
            return self.watermark_interval_ms
        return min(CLOSING_TICK_MS, self.idle_timeout_ms or CLOSING_TICK_MS)

    def check(self, name: str) -> None:
        """Raise ``TopologyError`` naming ``name`` for a configuration Storm rejects."""
        if self.length is None:
            raise TopologyError(f"{name}: no window length; call with_window(...) or "
                                f"with_tumbling_window(...)")
        if self.late_tuple_stream is not None and not self.event_time:
            raise TopologyError(f"{name}: with_late_tuple_stream needs event time; call "
                                f"with_timestamp_field(...) or with_timestamp_extractor(...)")
        if self.idle_timeout_ms is not None and not self.event_time:
            raise TopologyError(f"{name}: with_idle_timeout needs event time; call "
                                f"with_timestamp_field(...) or with_timestamp_extractor(...)")
        if isinstance(self.slide, Duration) and self.slide.millis < 1:
            raise TopologyError(f"{name}: the slide duration must be at least 1 ms")
        interval = self.watermark_interval_ms
        if self.event_time and interval is not None and interval < 1:
            raise TopologyError(f"{name}: the watermark interval must be at least 1 ms")


def check_limits(name: str, spec: WindowSpec, conf: Mapping[str, Any]) -> None:
    """Raise ``TopologyError`` when the window outlives the message timeout or max pending.

    Storm's rule: duration parts (length + slide, or whichever is a duration) must not exceed
    ``topology.message.timeout.secs``; count parts must not exceed
    ``topology.max.spout.pending`` (when it is set).
    """
    durations = [p.millis for p in (spec.length, spec.slide) if isinstance(p, Duration)]
    counts = [p.value for p in (spec.length, spec.slide) if isinstance(p, Count)]
    timeout_ms = round(float(conf[TOPOLOGY_MESSAGE_TIMEOUT_SECS]) * 1000)
    if durations and sum(durations) > timeout_ms:
        raise TopologyError(
            f"{name}: window {_parts(spec, Duration)} is {sum(durations) / 1000:g} s, more "
            f"than {TOPOLOGY_MESSAGE_TIMEOUT_SECS} = {timeout_ms / 1000:g} s; tuples would "
            f"time out while still in the window")
    pending = conf.get(TOPOLOGY_MAX_SPOUT_PENDING)
    if counts and pending is not None and sum(counts) > pending:
        raise TopologyError(
            f"{name}: window {_parts(spec, Count)} is {sum(counts)} tuples, more than "
            f"{TOPOLOGY_MAX_SPOUT_PENDING} = {pending}; the spout would stop before the "
            f"window fills")


def _parts(spec: WindowSpec, kind: type) -> str:
    """Which of length and slide are of ``kind``, as the error names them."""
    length, slide = isinstance(spec.length, kind), isinstance(spec.slide, kind)
    return "length + slide" if length and slide else ("length" if length else "slide")
