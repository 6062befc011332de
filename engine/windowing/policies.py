"""Eviction and trigger policies: when a tuple leaves the window, when the window fires.

Storm's ``windowing/*Policy.java``, as pure classes: no clock, no thread, no timer. Time
arrives as an argument (``now`` in ms) from the executor, which reads it from the running
event loop, so a test drives every policy by passing numbers.

Eviction answers, per event of the queue in arrival order, one of ``EXPIRE`` (leave the
window for good; it is acked), ``PROCESS`` (in this window), ``KEEP`` (stays queued, not in
this window: it is from the future) or ``STOP`` (stop scanning). Triggers decide when the
manager evaluates the window and set the eviction context (the reference time) first.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "EXPIRE",
    "KEEP",
    "PROCESS",
    "STOP",
    "CountEviction",
    "CountTrigger",
    "Event",
    "EvictionContext",
    "EvictionPolicy",
    "TimeEviction",
    "TimeTrigger",
    "TriggerPolicy",
    "WatermarkCountEviction",
    "WatermarkCountTrigger",
    "WatermarkTimeEviction",
    "WatermarkTimeTrigger",
    "WindowHost",
]

log = logging.getLogger("engine.windowing")

EXPIRE, PROCESS, KEEP, STOP = 0, 1, 2, 3
DRIFT_WARN_MS = 100
_FAR = 1 << 62  # "no bound": larger than any millisecond timestamp


class Event:
    """One queued item with its timestamp (ms) and the last evaluation that included it."""

    __slots__ = ("item", "mark", "ts")

    def __init__(self, item: Any, ts: int) -> None:
        self.item = item
        self.ts = ts
        self.mark = -1  # no evaluation yet


class WindowHost(Protocol):
    """What a trigger calls back on: the window manager that holds the events."""

    def on_trigger(self) -> bool:
        """Evaluate the window; True if it held any event."""
        ...

    def event_count(self, reference_time: int) -> int:
        """How many queued events are stamped at or before ``reference_time``."""
        ...

    def earliest_event_ts(self, start: int, end: int) -> int | None:
        """The earliest timestamp in ``(start, end]``, if any."""
        ...

    def sliding_count_timestamps(self, start: int, end: int, count: int) -> list[int]:
        """At every ``count``-th event stamped in ``(start, end]``, the latest stamp so far."""
        ...


@dataclass(frozen=True, slots=True)
class EvictionContext:
    """What a trigger tells the eviction policy before a window is evaluated."""

    reference_time: int
    """The window's end (ms); events after it are not in the window."""
    current_count: int | None = None
    """Watermark count windows: the number of events at or before ``reference_time``."""
    sliding_count: int | None = None
    sliding_interval: int | None = None
    """Processing-time windows: the timer period (ms), used to correct drift."""


class EvictionPolicy(Protocol):
    """Decides, per event, whether it expires, is in the window, stays, or stops the scan."""

    context: EvictionContext | None
    tracks_events: bool
    """Whether ``track(False)`` does anything (the manager skips it per event if not)."""

    def track(self, watermark: bool) -> None:
        """An event (or a watermark) was added."""

    def evict(self, event: Event, now: int) -> int:
        """``EXPIRE``, ``PROCESS``, ``KEEP`` or ``STOP`` for ``event``."""
        ...

    def set_context(self, context: EvictionContext) -> None:
        """The trigger's reference for the next evaluation."""

    def reset(self) -> None:
        """Called after every evaluation."""

    def stale_before(self, now: int) -> int | None:
        """Before the first evaluation: an event stamped at or before this, arriving at
        ``now``, was older than the window when it arrived (it expires at the next
        compaction). None when the policy expires nothing on arrival."""
        ...


class TriggerPolicy(Protocol):
    """Decides when the window is evaluated."""

    tracks_events: bool
    """Whether ``track(None, now)`` does anything (the manager skips it per event if not)."""

    def track(self, watermark_ts: int | None, now: int) -> None:
        """An event was added (``watermark_ts`` None) or a watermark arrived."""

    def reset(self) -> None:
        """Called after every evaluation."""

    def start(self) -> None:
        """From now on the policy may fire."""


class _Eviction:
    """What eviction policies share: no context until a trigger sets one; nothing to do on
    ``track`` or ``reset`` unless a policy says otherwise."""

    tracks_events = False

    def __init__(self) -> None:
        self.context: EvictionContext | None = None

    def track(self, watermark: bool) -> None:
        pass

    def set_context(self, context: EvictionContext) -> None:
        self.context = context

    def reset(self) -> None:
        pass

    def stale_before(self, now: int) -> int | None:
        return None


class CountEviction(_Eviction):
    """The last ``threshold`` events: older ones expire, one per excess event."""

    tracks_events = True
    current = 0

    def __init__(self, threshold: int) -> None:
        super().__init__()
        self.threshold = threshold

    def track(self, watermark: bool) -> None:
        if not watermark:
            self.current += 1

    def evict(self, event: Event, now: int) -> int:
        if self.current > self.threshold:
            self.current -= 1
            return EXPIRE
        return PROCESS


class TimeEviction(_Eviction):
    """Events younger than ``length`` ms at the reference time; drift-corrected.

    An event of timestamp ``ts`` expires once ``ref - ts >= length + delta``, where ``delta``
    is how late this evaluation runs against the previous one plus the slide (unbounded for
    the first window, so that every event so far counts in it). Before the first evaluation
    only events that were older than the window when they arrived expire (Storm expires
    them at the compaction every 100 adds); one that arrived inside the window stays for the
    first, however late its timer fires (a loop busy with a burst of tuples): expired then,
    it would be acked without any window having held it.
    """

    delta = 0
    drifts = 0  # evaluations off by more than DRIFT_WARN_MS, for the throttled warning

    def __init__(self, length: int) -> None:
        super().__init__()
        self.length = length

    def evict(self, event: Event, now: int) -> int:
        if self.context is None:
            return KEEP if event.ts > now else PROCESS
        diff = self.context.reference_time - event.ts
        if diff >= self.length + self.delta:
            return EXPIRE
        if diff < 0:
            return KEEP
        return PROCESS

    def stale_before(self, now: int) -> int | None:
        return now - self.length if self.context is None else None

    def thresholds(self, now: int) -> tuple[int, int, int]:
        """The same rule as ``evict``, as timestamps: events stamped at or before the first
        expire, after the third stop the scan, after the second stay; others are in."""
        if self.context is None:
            return -_FAR, now, _FAR
        ref = self.context.reference_time
        return ref - self.length - self.delta, ref, _FAR

    def set_context(self, context: EvictionContext) -> None:
        prev, self.context = self.context, context
        if context.sliding_interval is not None:
            if prev is None:
                self.delta = _FAR
            else:
                self.delta = context.reference_time - prev.reference_time - context.sliding_interval
                if abs(self.delta) > DRIFT_WARN_MS:
                    self._drifted(prev.reference_time, context.reference_time)

    def _drifted(self, prev_end: int, end: int) -> None:
        self.drifts += 1
        if self.drifts & (self.drifts - 1) == 0:  # 1st, 2nd, 4th, 8th, ...: throttled
            log.warning("window evaluated %d ms off its slide (previous end %d, this end %d; "
                        "%d such so far): a long execute(window) or a stalled event loop",
                        self.delta, prev_end, end, self.drifts)


class WatermarkTimeEviction(TimeEviction):
    """Event-time windows: as ``TimeEviction`` against the watermark's window end.

    Holds everything until the first watermark; stops the scan at events more than ``lag``
    beyond the reference (later events arrived after them only by being out of order).
    """

    def __init__(self, length: int, lag: int) -> None:
        super().__init__(length)
        self.lag = lag

    def evict(self, event: Event, now: int) -> int:
        if self.context is None:
            return STOP
        diff = self.context.reference_time - event.ts
        if diff < -self.lag:
            return STOP
        if diff < 0:
            return KEEP
        return super().evict(event, now)

    def stale_before(self, now: int) -> int | None:
        return None  # nothing expires before the first watermark

    def thresholds(self, now: int) -> tuple[int, int, int]:
        if self.context is None:
            return -_FAR, -_FAR, -_FAR  # hold everything until the first watermark
        ref = self.context.reference_time
        # Here an event from the future stays even when a negative drift would expire it.
        return min(ref - self.length - self.delta, ref), ref, ref + self.lag


class WatermarkCountEviction(_Eviction):
    """Event-time count windows: the last ``threshold`` events at or before the reference."""

    counts_events = True  # its trigger must pass the count of events up to the reference
    current = 0
    processed = 0

    def __init__(self, threshold: int) -> None:
        super().__init__()
        self.threshold = threshold

    def evict(self, event: Event, now: int) -> int:
        if self.context is None:
            return STOP
        if event.ts <= self.context.reference_time and self.processed < self.current:
            if self.current > self.threshold:
                self.current -= 1
                return EXPIRE
            self.processed += 1
            return PROCESS
        return KEEP

    def set_context(self, context: EvictionContext) -> None:
        self.context = context
        if context.current_count is not None:
            self.current = context.current_count
        else:
            self.current = self.processed + (context.sliding_count or 0)
        self.processed = 0

    def reset(self) -> None:
        self.processed = 0


class _Trigger:
    """What every trigger holds: its period (events or ms), the manager, the eviction."""

    tracks_events = False

    def __init__(self, every: int, manager: WindowHost, eviction: EvictionPolicy) -> None:
        self.every = every
        self.manager = manager
        self.eviction = eviction
        self.started = False

    def reset(self) -> None:
        pass

    def start(self) -> None:
        self.started = True


class CountTrigger(_Trigger):
    """Fires every ``every`` events, with the reference time ``now``."""

    tracks_events = True
    current = 0

    def track(self, watermark_ts: int | None, now: int) -> None:
        if self.started and watermark_ts is None:
            self.current += 1
            if self.current >= self.every:
                self.eviction.set_context(EvictionContext(now))
                self.manager.on_trigger()

    def reset(self) -> None:
        self.current = 0


class TimeTrigger(_Trigger):
    """Fires when the executor's timer calls ``fire(now)``, every ``every`` ms.

    The reference is ``now - 1``: a tuple stamped ``now`` may still be on its way in.
    """

    def track(self, watermark_ts: int | None, now: int) -> None:
        pass

    def fire(self, now: int) -> None:
        """Evaluate the window ending at ``now - 1``."""
        if self.started:
            self.eviction.set_context(EvictionContext(now - 1, sliding_interval=self.every))
            self.manager.on_trigger()


class WatermarkTimeTrigger(_Trigger):
    """Event-time sliding windows: on a watermark ``W`` evaluate every window ending <= W.

    Window ends are aligned to the slide (``every`` ms). An empty window does not advance by
    one slide but jumps to the first aligned end after the next event, so that a gap in the
    data costs nothing (the doc's 6:00 → 8:00 example).
    """

    next_window_end = 0

    def track(self, watermark_ts: int | None, now: int) -> None:
        if not self.started or watermark_ts is None:
            return
        end, slide = self.next_window_end, self.every
        counts = getattr(self.eviction, "counts_events", False)
        while end <= watermark_ts:
            count = self.manager.event_count(end) if counts else None
            self.eviction.set_context(EvictionContext(end, current_count=count))
            if self.manager.on_trigger():
                end += slide
            else:
                nxt = self.manager.earliest_event_ts(end, watermark_ts)
                if nxt is None:
                    break
                end = nxt if nxt % slide == 0 else nxt + slide - nxt % slide
        self.next_window_end = end


class WatermarkCountTrigger(_Trigger):
    """Event-time count slides: on a watermark, fire at every ``every``-th event up to it."""

    last_processed = 0

    def track(self, watermark_ts: int | None, now: int) -> None:
        if not self.started or watermark_ts is None:
            return
        for ts in self.manager.sliding_count_timestamps(self.last_processed, watermark_ts,
                                                        self.every):
            self.eviction.set_context(EvictionContext(ts, sliding_count=self.every))
            self.manager.on_trigger()
            self.last_processed = ts
