"""``WindowManager``: the queue of a window's events and the evaluation that the trigger asks.

Storm's ``WindowManager`` without threads or clock: ``add`` takes the event's timestamp and
``now`` (ms), triggers fire synchronously inside ``add``/``add_watermark``/``fire``, and what
happened is appended to ``outputs`` in order (``Expired`` batches, ``Activation``\\ s) for
the executor to act on after the call: ack the expired tuples, run ``execute(window)``.

Memory: one ``Event`` (three slots) per queued tuple; expired events leave the queue at the
next evaluation or, between evaluations, once ``EXPIRE_EVENTS_THRESHOLD`` events were
added since the last look (checked per ``add`` and per ``add_all`` batch). Which
events are new since the previous evaluation is marked on the events themselves (the
evaluation's generation), not kept in a second set.

Cost per evaluation: while timestamps arrive in order and the window is by duration (the
eviction policy answers by ``thresholds``), the window is a prefix of the queue that only
grows at its end and shrinks at its head; an evaluation then costs what expired and what
is new, not the window's size (plus a copy of the window, at C speed, when the bolt asks
for ``get()``; none in the incremental form). Out-of-order timestamps, or count windows,
fall back for good to a scan of the queue per evaluation, as Storm's manager does.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice, repeat
from operator import attrgetter
from typing import Any

from engine.windowing.policies import EXPIRE, PROCESS, STOP, Event, EvictionPolicy, TriggerPolicy

__all__ = ["EXPIRE_EVENTS_THRESHOLD", "Activation", "Event", "Expired", "WindowManager"]

EXPIRE_EVENTS_THRESHOLD = 100
_TS = attrgetter("ts")
_ITEM = attrgetter("item")


@dataclass(frozen=True, slots=True)
class Expired:
    """Items that left the window for good, oldest first."""

    items: list[Any]


@dataclass(frozen=True, slots=True)
class Activation:
    """One evaluation: the items in the window (None in the incremental form), those new
    since the last evaluation, those expired since then, the reference time (the window's
    end, ms) and how many items the window holds."""

    items: list[Any] | None
    new: list[Any]
    expired: list[Any]
    reference_time: int
    size: int


class WindowManager:
    """Holds a window's events; evaluates them when its trigger policy fires."""

    def __init__(self, eviction: EvictionPolicy,
                 trigger: Callable[[WindowManager, EvictionPolicy], TriggerPolicy],
                 incremental: bool = False) -> None:
        self.queue: deque[Event] = deque()
        self.eviction = eviction
        self.trigger = trigger(self, eviction)
        self.incremental = incremental
        """Activations carry no list of the window's items (``Activation.items`` is None)."""
        self.outputs: list[Expired | Activation] = []
        self._expired: list[Any] = []
        self._since_expiry = 0
        self._generation = 0
        self._now = 0
        # While timestamps arrive in order: the window is the first ``_evaluated`` events.
        self._ordered = True
        self._last_ts = self._last_end = -(1 << 62)
        self._evaluated = 0
        # Time policies do nothing per event: ``add_all`` then queues a batch in one loop.
        self._per_event = self.eviction.tracks_events or self.trigger.tracks_events

    def start(self) -> None:
        """Let the trigger fire from now on."""
        self.trigger.start()

    def add(self, item: Any, ts: int, now: int) -> None:
        """Queue ``item`` stamped ``ts``; the trigger may evaluate the window right away."""
        self._now = now
        if ts >= self._last_ts:
            self._last_ts = ts
        elif self._ordered:
            self._unordered()
        self.queue.append(Event(item, ts))
        self.eviction.track(False)
        self.trigger.track(None, now)
        self._since_expiry += 1
        if self._since_expiry >= EXPIRE_EVENTS_THRESHOLD:
            self._scan(full=False)

    def add_all(self, items: list[Any], stamps: list[int], now: int) -> None:
        """``add`` each of ``items`` with its stamp, in order; one call for a batch."""
        if self._per_event:
            for item, ts in zip(items, stamps, strict=True):
                self.add(item, ts, now)
            return
        self._now = now
        if not stamps:
            return
        if stamps[0] >= self._last_ts and sorted(stamps) == stamps:  # in order: C speed
            self.queue.extend(map(Event, items, stamps))
            self._last_ts = stamps[-1]
        else:
            self._add_each(items, stamps)
        self._since_expiry += len(items)
        if self._since_expiry >= EXPIRE_EVENTS_THRESHOLD:
            self._scan(full=False)

    def _add_each(self, items: list[Any], stamps: list[int]) -> None:
        queue, last = self.queue, self._last_ts
        for item, ts in zip(items, stamps, strict=True):
            if ts >= last:
                last = ts
            elif self._ordered:
                self._unordered()
            queue.append(Event(item, ts))
        self._last_ts = last

    def add_watermark(self, ts: int, now: int) -> None:
        """Every event up to ``ts`` has arrived: event-time triggers evaluate up to it."""
        self._now = now
        self.eviction.track(True)
        self.trigger.track(ts, now)
        self._compact()

    def take_outputs(self) -> list[Expired | Activation]:
        """What happened since the last call, in order; the list is handed over."""
        out, self.outputs = self.outputs, []
        return out

    def on_trigger(self) -> bool:
        """Evaluate the window (called by the trigger); True if it held any event."""
        thresholds = getattr(self.eviction, "thresholds", None)
        if self._ordered and (thresholds is None or thresholds(self._now)[1] < self._last_end):
            self._unordered()  # a count window, or an end before the last: scan
        if self._ordered:
            size, new = self._evaluate_ordered()
            items = (None if self.incremental or not size
                     else list(map(_ITEM, islice(self.queue, size))))
        else:
            items, new = self._evaluate_scan()
            size = len(items)
            if self.incremental:
                items = None
        self._generation += 1
        expired, self._expired = self._expired, []
        if size:
            ctx = self.eviction.context
            ref = ctx.reference_time if ctx is not None else self._now
            self.outputs.append(Activation(items, new, expired, ref, size))
        self.trigger.reset()
        return bool(size)

    def _evaluate_scan(self) -> tuple[list[Any], list[Any]]:
        """The window and its new items by a scan of the whole queue (marking each event)."""
        window = self._scan(full=True)
        prev, gen = self._generation, self._generation + 1
        items, new = [], []
        for ev in window:
            items.append(ev.item)
            if ev.mark != prev:
                new.append(ev.item)
            ev.mark = gen
        return items, new

    def _evaluate_ordered(self) -> tuple[int, list[Any]]:
        """In-order timestamps: expire from the head, extend the window from where the last
        one ended (found by bisection: the queue is sorted); returns the window's size and
        its new items."""
        self._scan(full=False)
        keep_after = self.eviction.thresholds(self._now)[1]  # type: ignore[attr-defined]
        self._last_end = keep_after
        queue, start = self.queue, self._evaluated
        size = len(queue)
        end = bisect_right(queue, keep_after, start, size, key=_TS)
        # From the tail: the new events are the window's last, few events come after them.
        new = list(map(_ITEM, islice(reversed(queue), size - end, size - start)))
        new.reverse()
        self._evaluated = end
        return end, new

    def _unordered(self) -> None:
        """A timestamp or a window end went backwards: scan from now on, and mark what the
        ordered path counted as evaluated (the scan tells new events by their marks)."""
        self._ordered = False
        gen = self._generation
        for ev in islice(self.queue, self._evaluated):
            ev.mark = gen

    def _compact(self) -> None:
        self._since_expiry += 1
        if self._since_expiry >= EXPIRE_EVENTS_THRESHOLD:
            self._scan(full=False)

    def _scan(self, full: bool) -> list[Event]:
        """Expire from the queue what the policy says; with ``full``, also collect the window.

        Events are asked once each, in arrival order. A partial scan stops at the first event
        that does not expire; a full one goes on past ``KEEP`` (out-of-order events may still
        expire behind it) and stops at ``STOP``. Time policies answer by thresholds on the
        timestamp, which the loop applies without a call per event.
        """
        thresholds = getattr(self.eviction, "thresholds", None)
        if thresholds is not None:
            expired, window = self._scan_times(full, *thresholds(self._now))
        else:
            expired, window = self._scan_calls(full)
        self._since_expiry = 0
        if expired:
            # A partial scan takes from the head only: those were the window's first events.
            self._evaluated = max(0, self._evaluated - len(expired))
            self._expired.extend(expired)
            self.outputs.append(Expired(expired))
        return window

    def _scan_calls(self, full: bool) -> tuple[list[Any], list[Event]]:
        evict, now, queue = self.eviction.evict, self._now, self.queue
        expired: list[Any] = []
        window: list[Event] = []
        action = STOP
        while queue:  # the common case: expired events are at the head
            action = evict(queue[0], now)
            if action != EXPIRE:
                break
            expired.append(queue.popleft().item)
        if full and queue and action != STOP:
            kept: list[Event] = []
            removed = False
            for i, ev in enumerate(queue):
                if i:
                    action = evict(ev, now)
                if action == EXPIRE:
                    expired.append(ev.item)
                    removed = True
                    continue
                if action == STOP:
                    kept.extend(islice(queue, i, None))
                    break
                kept.append(ev)
                if action == PROCESS:
                    window.append(ev)
            if removed:
                self.queue = deque(kept)
        return expired, window

    def _scan_times(self, full: bool, expire_to: int, keep_after: int,
                    stop_after: int) -> tuple[list[Any], list[Event]]:
        queue = self.queue
        expired = self._expire_head(min(expire_to, stop_after))
        window: list[Event] = []
        if full and queue:
            kept: list[Event] = []
            removed = False
            for i, ev in enumerate(queue):
                ts = ev.ts
                if ts > stop_after:
                    kept.extend(islice(queue, i, None))
                    break
                if ts <= expire_to:
                    expired.append(ev.item)
                    removed = True
                    continue
                kept.append(ev)
                if ts <= keep_after:
                    window.append(ev)
            if removed:
                self.queue = deque(kept)
        return expired, window

    def _expire_head(self, expire_to: int) -> list[Any]:
        """Take the events stamped at or before ``expire_to`` from the head of the queue,
        up to the first that is not (all of them at once while the queue is in order)."""
        queue = self.queue
        if not queue or queue[0].ts > expire_to:
            return []  # the common case between evaluations: nothing to expire
        if not self._ordered:
            expired = []
            while queue and queue[0].ts <= expire_to:
                expired.append(queue.popleft().item)
            return expired
        n = bisect_right(queue, expire_to, key=_TS)
        return list(map(_ITEM, map(deque.popleft, repeat(queue, n))))

    # -- queries of the watermark triggers -----------------------------------------------

    def event_count(self, reference_time: int) -> int:
        """How many queued events are stamped at or before ``reference_time``."""
        return sum(1 for ev in self.queue if ev.ts <= reference_time)

    def earliest_event_ts(self, start: int, end: int) -> int | None:
        """The earliest timestamp in ``(start, end]``, or None."""
        found = [ev.ts for ev in self.queue if start < ev.ts <= end]
        return min(found) if found else None

    def sliding_count_timestamps(self, start: int, end: int, count: int) -> list[int]:
        """At every ``count``-th event stamped in ``(start, end]``, the latest stamp so far."""
        out: list[int] = []
        if end > start:
            n, latest = 0, start
            for ev in self.queue:
                if start < ev.ts <= end:
                    latest = max(latest, ev.ts)
                    n += 1
                    if n % count == 0:
                        out.append(latest)
        return out
