"""``WindowManager``: the queue of a window's events and the evaluation that the trigger asks.

Storm's ``WindowManager`` without threads or clock: ``add`` takes the event's timestamp and
``now`` (ms), triggers fire synchronously inside ``add``/``add_watermark``/``fire``, and what
happened is appended to ``outputs`` in order (``Expired`` batches, ``Activation``\\ s) for
the executor to act on after the call: ack the expired tuples, run ``execute(window)``.

Two forms of the queue:

- *ordered*: while timestamps arrive in order and the window is by duration (the eviction
  policy answers by ``thresholds``), the queue is two deques, of items and of their stamps:
  two pointers per queued tuple, queued a batch at a time at C speed. The window is a
  prefix of the queue that only grows at its end and shrinks at its head; an evaluation
  costs what expired and what is new (found by bisection of the stamps), not the window's
  size: the window itself is a ``WindowSlice`` of the queue, copied (at C speed) only if
  the bolt asks for it.
- *scan*: out-of-order timestamps, or count windows, fall back for good to one ``Event``
  (three slots) per queued tuple and a scan of the queue per evaluation, as Storm's manager
  does. Which events are new since the previous evaluation is marked on the events
  themselves (the evaluation's generation), not kept in a second set.

Either way, expired tuples leave the queue at the next evaluation or, between evaluations,
once ``EXPIRE_EVENTS_THRESHOLD`` tuples were added since the last look (checked per ``add``
and per ``add_all`` batch). Before the first evaluation that compaction expires only the
run of events at the head that were older than the window when they arrived (the eviction
policy's ``stale_before``): what arrived inside the window waits for the first evaluation.
"""

from __future__ import annotations

import weakref
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import islice, repeat, takewhile
from operator import attrgetter
from typing import Any

from engine.windowing.policies import EXPIRE, PROCESS, STOP, Event, EvictionPolicy, TriggerPolicy
from engine.windowing.window_slice import WindowSlice

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
    """One evaluation: the items in the window (a list, or a slice of the queue copied when
    asked), those new since the last evaluation, those expired since then, the reference
    time (the window's end, ms) and how many items the window holds."""

    window: list[Any] | WindowSlice
    new: list[Any]
    expired: list[Any]
    reference_time: int
    size: int

    @property
    def items(self) -> list[Any]:
        """The items in the window, in arrival order."""
        window = self.window
        return window if isinstance(window, list) else window.list()


class WindowManager:
    """Holds a window's events; evaluates them when its trigger policy fires."""

    def __init__(self, eviction: EvictionPolicy,
                 trigger: Callable[[WindowManager, EvictionPolicy], TriggerPolicy]) -> None:
        self.queue: deque[Event] = deque()
        """The scan form's events (empty while the queue is ordered)."""
        self._items: deque[Any] = deque()  # the ordered form: items and their stamps
        self._stamps: deque[int] = deque()
        self.eviction = eviction
        self.trigger = trigger(self, eviction)
        self.outputs: list[Expired | Activation] = []
        self._expired: list[Any] = []
        self._since_expiry = 0
        self._generation = 0
        self._now = 0
        # While timestamps arrive in order: the window is the first ``_evaluated`` events.
        self._ordered = getattr(eviction, "thresholds", None) is not None
        self._last_ts = self._last_end = -(1 << 62)
        self._evaluated = 0
        self.started = False
        """Whether ``start`` was called (the trigger may fire)."""
        self._popped = 0  # items taken from the ordered form's head since the start
        self._slices: list[weakref.ref[WindowSlice]] = []  # windows not copied yet
        # Before the first evaluation: the first ``_stale_head`` queued events were older
        # than the window when they arrived (a count kept only while every queued one was).
        self._before_first = True
        self._stale_head = 0
        # Time policies do nothing per event: ``add_all`` then queues a batch in one loop.
        self._per_event = self.eviction.tracks_events or self.trigger.tracks_events

    def start(self) -> None:
        """Let the trigger fire from now on."""
        self.started = True
        self.trigger.start()

    def __len__(self) -> int:
        """Items queued: in the window, or waiting for it, or expired and not yet taken."""
        return len(self._stamps) + len(self.queue)

    def held(self) -> list[Any]:
        """The queued items, in arrival order."""
        return list(self._items) if self._ordered else list(map(_ITEM, self.queue))

    def clear(self) -> None:
        """Drop every queued item (their tuples are the caller's to fail or ack)."""
        self._keep_slices()
        self._popped += len(self._items)
        self._items.clear()
        self._stamps.clear()
        self.queue.clear()
        self._evaluated = 0
        self._stale_head = 0

    def add(self, item: Any, ts: int, now: int) -> None:
        """Queue ``item`` stamped ``ts``; the trigger may evaluate the window right away."""
        self._now = now
        if self._before_first:
            self._note_stale((ts,), now)
        self._queue(item, ts)
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
        if self._before_first:
            self._note_stale(stamps, now)
        if stamps[0] >= self._last_ts and sorted(stamps) == stamps:  # in order: C speed
            if self._ordered:
                self._items.extend(items)
                self._stamps.extend(stamps)
            else:
                self.queue.extend(map(Event, items, stamps))
            self._last_ts = stamps[-1]
        else:
            for item, ts in zip(items, stamps, strict=True):
                self._queue(item, ts)
        self._since_expiry += len(items)
        if self._since_expiry >= EXPIRE_EVENTS_THRESHOLD:
            self._scan(full=False)

    def _note_stale(self, stamps: Iterable[int], now: int) -> None:
        """Events stamped ``stamps`` arrive at ``now``, before the first evaluation: while
        every queued event was older than the window on arrival, count those of them that
        are too (up to the first that is not)."""
        if self._stale_head != len(self):
            return
        limit = self.eviction.stale_before(now)
        if limit is not None:
            self._stale_head += sum(1 for _ in takewhile(limit.__ge__, stamps))

    def _queue(self, item: Any, ts: int) -> None:
        """Queue one item: in the ordered form while stamps keep in order, else (from the
        first stamp out of order on) as an event."""
        if ts >= self._last_ts:
            self._last_ts = ts
        elif self._ordered:
            self._unordered()
        if self._ordered:
            self._items.append(item)
            self._stamps.append(ts)
        else:
            self.queue.append(Event(item, ts))

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
        self._before_first = False  # from now on the policy decides by the reference time
        self._stale_head = 0
        thresholds = getattr(self.eviction, "thresholds", None)
        if self._ordered and (thresholds is None or thresholds(self._now)[1] < self._last_end):
            self._unordered()  # a count window, or an end before the last: scan
        window: list[Any] | WindowSlice
        if self._ordered:
            size, new = self._evaluate_ordered()
            window = self._slice_of(size)
        else:
            window, new = self._evaluate_scan()
            size = len(window)
        self._generation += 1
        expired, self._expired = self._expired, []
        if size:
            ctx = self.eviction.context
            ref = ctx.reference_time if ctx is not None else self._now
            self.outputs.append(Activation(window, new, expired, ref, size))
        self.trigger.reset()
        return bool(size)

    def _slice_of(self, size: int) -> list[Any] | WindowSlice:
        """The first ``size`` queued items (the ordered form's window), copied when asked."""
        if not size:
            return []
        window = WindowSlice(self, self._popped, self._popped + size)
        slices = self._slices
        if len(slices) >= 64:  # a window that rarely expires: forget the slices let go
            slices[:] = [ref for ref in slices if ref() is not None]
        slices.append(weakref.ref(window))
        return window

    def slice(self, first: int, end: int) -> list[Any]:
        """The ordered form's items ``first`` to before ``end``, counted since the start
        (``WindowSlice``: none of them has left the queue yet)."""
        start = first - self._popped
        assert self._ordered and start >= 0, "a window slice outlived its items"
        return list(islice(self._items, start, end - self._popped))

    def _keep_slices(self) -> None:
        """Queued items are about to leave or move: the windows still held copy theirs."""
        for ref in self._slices:
            window = ref()
            if window is not None:
                window.list()
        self._slices.clear()

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
        stamps, start = self._stamps, self._evaluated
        size = len(stamps)
        end = bisect_right(stamps, keep_after, start, size)
        # From the tail: the new events are the window's last, few events come after them.
        new = list(islice(reversed(self._items), size - end, size - start))
        new.reverse()
        self._evaluated = end
        return end, new

    def _unordered(self) -> None:
        """A timestamp or a window end went backwards: scan from now on, the queue as
        events, marking what the ordered form counted as evaluated (the scan tells new
        events by their marks)."""
        self._keep_slices()
        self._ordered = False
        self.queue.extend(map(Event, self._items, self._stamps))
        self._items.clear()
        self._stamps.clear()
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
        window: list[Event] = []
        if self._stale_head:  # before the first evaluation (not full): stale on arrival
            expired = self._pop_head(self._stale_head)
            self._stale_head = 0
        elif thresholds is not None:
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
        if self._ordered:
            stamps = self._stamps
            if not stamps or stamps[0] > expire_to:
                return []  # the common case between evaluations: nothing to expire
            return self._pop_head(bisect_right(stamps, expire_to))
        queue = self.queue
        expired = []
        while queue and queue[0].ts <= expire_to:
            expired.append(queue.popleft().item)
        return expired

    def _pop_head(self, n: int) -> list[Any]:
        """Take the first ``n`` queued items out of the queue."""
        if self._ordered:
            if self._slices:
                self._keep_slices()
            self._popped += n
            deque(map(deque.popleft, repeat(self._stamps, n)), 0)
            return list(map(deque.popleft, repeat(self._items, n)))
        queue = self.queue
        return [queue.popleft().item for _ in range(n)]

    # -- queries of the watermark triggers -----------------------------------------------

    def _all_stamps(self) -> Iterable[int]:
        return self._stamps if self._ordered else map(_TS, self.queue)

    def event_count(self, reference_time: int) -> int:
        """How many queued events are stamped at or before ``reference_time``."""
        return sum(1 for ts in self._all_stamps() if ts <= reference_time)

    def earliest_event_ts(self, start: int, end: int) -> int | None:
        """The earliest timestamp in ``(start, end]``, or None."""
        found = [ts for ts in self._all_stamps() if start < ts <= end]
        return min(found) if found else None

    def sliding_count_timestamps(self, start: int, end: int, count: int) -> list[int]:
        """At every ``count``-th event stamped in ``(start, end]``, the latest stamp so far."""
        out: list[int] = []
        if end > start:
            n, latest = 0, start
            for ts in self._all_stamps():
                if start < ts <= end:
                    latest = max(latest, ts)
                    n += 1
                    if n % count == 0:
                        out.append(latest)
        return out
