"""Count, time and tumbling windows in processing time, driven by hand (pure cores)."""

from __future__ import annotations

import weakref
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.windowing.manager import EXPIRE_EVENTS_THRESHOLD, Activation, WindowManager
from engine.windowing.policies import (
    CountTrigger,
    EvictionContext,
    TimeEviction,
    TimeTrigger,
    WatermarkTimeEviction,
)
from engine.windowing.spec import Count, Duration
from engine.windowing.window_slice import WindowSlice
from tests.windowing.helpers import Driver


def test_sliding_count_window() -> None:
    d = Driver(Count(5), Count(2))
    for i in range(1, 11):
        d.add(i, ts=i)
    assert d.windows() == [[1, 2], [1, 2, 3, 4], [2, 3, 4, 5, 6], [4, 5, 6, 7, 8],
                           [6, 7, 8, 9, 10]]
    acts = d.activations
    assert [a.new for a in acts] == [[1, 2], [3, 4], [5, 6], [7, 8], [9, 10]]
    assert [a.expired for a in acts] == [[], [], [1], [2, 3], [4, 5]]
    assert d.expired == [1, 2, 3, 4, 5]


def test_count_window_sliding_every_tuple_by_default() -> None:
    d = Driver(Count(3))
    for i in range(1, 6):
        d.add(i, ts=i)
    assert d.windows() == [[1], [1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5]]


def test_tumbling_count_window() -> None:
    d = Driver(Count(3), Count(3))
    for i in range(1, 10):
        d.add(i, ts=i)
    assert d.windows() == [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert [a.expired for a in d.activations] == [[], [1, 2, 3], [4, 5, 6]]
    assert [a.new for a in d.activations] == d.windows()


def test_sliding_time_window_expires_after_its_length() -> None:
    """Length 1 s, slide 100 ms; the timer fires on time every 100 ms."""
    d = Driver(Duration(1), Duration(0.1))
    d.add("a", ts=1000)
    d.add("b", ts=1450)
    d.fire(1100)
    assert d.windows() == [["a"]]  # b is stamped after the window's end (1099)
    d.fire(1200)
    d.fire(1300)
    d.fire(1400)
    d.fire(1500)
    assert d.windows()[-1] == ["a", "b"]
    assert d.activations[-1].new == ["b"]
    for now in range(1600, 2001, 100):
        d.fire(now)
    assert d.expired == []  # at 2000 the end is 1999: a is 999 ms old
    d.fire(2100)
    assert d.expired == ["a"]
    assert d.activations[-1].items == ["b"]
    assert d.activations[-1].expired == ["a"]
    assert d.activations[-1].reference_time == 2099


def test_empty_time_window_does_not_activate() -> None:
    d = Driver(Duration(0.5), Duration(0.5))
    d.fire(1000)
    d.add("x", ts=1200)
    d.fire(1500)
    d.fire(2000)
    d.fire(2500)
    assert d.windows() == [["x"]]
    assert d.expired == ["x"]


def test_tumbling_time_window() -> None:
    d = Driver(Duration(1), Duration(1))
    for ts in (100, 600, 900):
        d.add(ts, ts=ts)
    d.fire(1000)
    for ts in (1200, 1999):
        d.add(ts, ts=ts)
    d.fire(2000)
    assert d.windows() == [[100, 600, 900], [1200, 1999]]
    assert d.activations[1].expired == [100, 600, 900]


def test_a_late_timer_widens_the_window_to_cover_the_drift() -> None:
    """Storm's drift correction: a timer 300 ms late keeps events the slip would drop."""
    d = Driver(Duration(1), Duration(0.5))
    d.fire(1000)
    d.add("a", ts=1100)
    d.fire(1500)
    d.fire(2000)
    d.fire(2800)  # 300 ms late: delta = 300, so a (1699 ms old at the end 2799) stays
    assert d.windows()[-1] == ["a"]
    d.fire(3000)  # on time again: delta = -300; a is 1899 ms old
    assert d.expired == ["a"]


def test_nothing_expires_before_the_first_evaluation_however_late_its_timer() -> None:
    """A loop busy with a burst of tuples delays the first slide timer: the burst stays for
    the first window instead of being expired (and acked) unevaluated every 100 adds."""
    d = Driver(Duration(0.2), Duration(0.2))
    for i in range(500):
        d.add(i, ts=1000 + i)
    assert d.expired == []
    d.fire(1500)
    assert d.windows() == [list(range(500))]


def test_duration_window_counting_slide() -> None:
    d = Driver(Duration(1), Count(2))
    d.add("a", ts=0)
    d.add("b", ts=100)
    d.add("c", ts=1500)
    d.add("d", ts=1600)
    assert d.windows() == [["a", "b"], ["c", "d"]]
    assert d.expired == ["a", "b"]


def test_queue_is_compacted_between_evaluations() -> None:
    """Memory follows the window: expired events leave every 100 adds, not at the slide."""
    d = Driver(Count(10), Count(10_000))
    for i in range(EXPIRE_EVENTS_THRESHOLD * 5):
        d.add(i, ts=i)
        assert len(d.manager) <= 10 + EXPIRE_EVENTS_THRESHOLD
    assert d.windows() == []
    assert len(d.expired) >= EXPIRE_EVENTS_THRESHOLD * 5 - 10 - EXPIRE_EVENTS_THRESHOLD
    assert d.expired == list(range(len(d.expired)))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3000), max_size=60), st.lists(st.integers(0, 4000), max_size=8),
       st.booleans())
def test_time_thresholds_agree_with_the_per_event_rule(stamps: list[int], refs: list[int],
                                                       watermark: bool) -> None:
    """The threshold scan of time policies decides exactly as their ``evict``."""
    def run(by_thresholds: bool) -> list[Any]:
        eviction: Any = (WatermarkTimeEviction(1000, 200) if watermark
                         else TimeEviction(1000))
        manager = WindowManager(eviction, lambda m, e: CountTrigger(10**9, m, e))
        if not by_thresholds:
            manager._scan_times = None  # type: ignore[assignment]
            eviction.thresholds = None
        for i, ts in enumerate(stamps):
            manager.add(i, ts, now=ts)
        seen = []
        for ref in refs:
            eviction.set_context(EvictionContext(ref, sliding_interval=500))
            manager.on_trigger()
            seen.append([(type(o).__name__, getattr(o, "items", None)) for o in
                         manager.take_outputs()])
        return seen

    assert run(True) == run(False)


def _outputs(manager: WindowManager) -> list[Any]:
    return [(type(o).__name__, getattr(o, "items", None), getattr(o, "new", None),
             getattr(o, "expired", None), getattr(o, "size", None))
            for o in manager.take_outputs()]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 300), max_size=400), st.lists(st.integers(0, 4000), max_size=12),
       st.booleans())
def test_in_order_evaluation_agrees_with_the_scan(gaps: list[int], refs: list[int],
                                                  watermark: bool) -> None:
    """With timestamps in order the window is a prefix of the queue: evaluating only what
    expired and what is new gives what the scan of the whole queue gives."""
    stamps = [sum(gaps[:i + 1]) for i in range(len(gaps))]
    refs = sorted(refs)
    assert (_evaluations(stamps, refs, watermark, scan=False)
            == _evaluations(stamps, refs, watermark, scan=True))


def _evaluations(stamps: list[int], refs: list[int], watermark: bool,
                 scan: bool) -> list[Any]:
    """Each evaluation at ``refs`` of a time window fed ``stamps`` up to 300 ms ahead of
    it: its outputs, the items queued and which (scanning from the start with ``scan``)."""
    eviction: Any = WatermarkTimeEviction(1000, 200) if watermark else TimeEviction(1000)
    manager = WindowManager(eviction, lambda m, e: CountTrigger(10**9, m, e))
    if scan:
        manager._unordered()
    seen, added = [], 0
    for ref in refs:
        while added < len(stamps) and stamps[added] <= ref + 300:
            manager.add(added, stamps[added], now=stamps[added])
            added += 1
        eviction.set_context(EvictionContext(ref, sliding_interval=500))
        manager.on_trigger()
        seen.append((_outputs(manager), len(manager), manager.held()))
    return seen


def test_an_ordered_window_is_listed_when_asked_and_a_late_stamp_falls_back_to_the_scan(
        ) -> None:
    eviction = TimeEviction(1000)
    manager = WindowManager(eviction, lambda m, e: CountTrigger(10**9, m, e))
    for ts in (100, 200, 300):
        manager.add(ts, ts, now=ts)
    eviction.set_context(EvictionContext(300, sliding_interval=500))
    manager.on_trigger()
    (act,) = manager.take_outputs()
    assert isinstance(act, Activation) and isinstance(act.window, WindowSlice)
    assert act.new == [100, 200, 300] and act.size == 3 and len(act.window) == 3
    manager.add(150, 150, now=400)  # out of order: the manager scans from now on
    manager.add(400, 400, now=400)
    assert act.items == [100, 200, 300]  # listed as the queue held it at the evaluation
    eviction.set_context(EvictionContext(800, sliding_interval=500))
    manager.on_trigger()
    (act,) = manager.take_outputs()
    assert act.new == [150, 400] and act.size == 5  # type: ignore[union-attr]


def test_a_window_held_past_later_expiries_keeps_its_tuples() -> None:
    """A window not listed yet copies its range before any of it leaves the queue: one
    evaluation's window listed after later ones expired its head, or not listed at all."""
    eviction = TimeEviction(1000)
    manager = WindowManager(eviction, lambda m, e: CountTrigger(10**9, m, e))
    for ts in range(0, 3000, 100):
        manager.add(ts, ts, now=ts)
    acts = []
    for ref in (999, 1999, 2999):
        eviction.set_context(EvictionContext(ref, sliding_interval=1000))
        manager.on_trigger()
        acts += [o for o in manager.take_outputs() if isinstance(o, Activation)]
    dropped = acts.pop(1)  # nobody holds the middle window: it is never listed
    window = dropped.window
    assert isinstance(window, WindowSlice)
    ref = weakref.ref(window)
    del dropped, window
    assert ref() is None
    assert [a.items for a in acts] == [list(range(0, 1000, 100)), list(range(2000, 3000, 100))]


def _normalized(manager: WindowManager) -> list[Any]:
    """An evaluation's outputs with expiries told apart only by what they hold (a batch
    scans for expiries once, not every hundred events, so their grouping may differ)."""
    acts, expired = [], []
    for o in manager.take_outputs():
        if isinstance(o, Activation):
            acts.append((o.items, o.new, sorted(o.expired), o.size, o.reference_time))
        else:
            expired.extend(o.items)
    return [acts, sorted(expired)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-200, 300), max_size=400), st.lists(st.integers(1, 60), max_size=12),
       st.booleans())
def test_a_batch_added_at_once_is_evaluated_as_its_events_one_by_one(
        gaps: list[int], batches: list[int], watermark: bool) -> None:
    """``add_all`` (time policies: nothing to track per event) gives the evaluations that
    ``add`` per event gives, with timestamps in order or not."""
    stamps = [max(0, 2000 + sum(gaps[:i + 1])) for i in range(len(gaps))]

    def run(batched: bool) -> list[Any]:
        eviction: Any = (WatermarkTimeEviction(1000, 200) if watermark
                         else TimeEviction(1000))
        manager = WindowManager(eviction, lambda m, e: TimeTrigger(500, m, e))
        assert manager._per_event is False
        seen, added = [], 0
        for n in batches:
            part = list(range(added, min(added + n, len(stamps))))
            if batched:
                manager.add_all(part, [stamps[i] for i in part], added)
            else:
                for i in part:
                    manager.add(i, stamps[i], added)
            added += len(part)
            eviction.set_context(EvictionContext(max(stamps[:added], default=0)))
            manager.on_trigger()
            seen.append(_normalized(manager))
        return seen

    assert run(batched=True) == run(batched=False)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-40, 60), min_size=100, max_size=300), st.integers(10, 90),
       st.booleans())
@example([10] * 100 + [-5, 20] * 50, 50, False)
def test_a_queue_that_turns_unordered_midway_agrees_with_the_scan(
        gaps: list[int], turn_percent: int, watermark: bool) -> None:
    """The ordered form (items and stamps) becomes events at the first stamp out of order,
    with what it had evaluated marked: from then on it gives what a manager that scanned
    from the start gives. Stamps are in order up to ``turn``, in any order after; the
    window is evaluated every 300 ms, so the turn comes after evaluations."""
    turn = len(gaps) * turn_percent // 100
    gaps = [abs(g) if i < turn else g for i, g in enumerate(gaps)]
    stamps = [max(0, sum(gaps[:i + 1])) for i in range(len(gaps))]
    refs = list(range(100, 6000, 300))
    assert (_evaluations(stamps, refs, watermark, scan=False)
            == _evaluations(stamps, refs, watermark, scan=True))


def test_a_window_that_never_expires_does_not_keep_a_record_per_evaluation() -> None:
    eviction = TimeEviction(10**9)
    manager = WindowManager(eviction, lambda m, e: CountTrigger(10**9, m, e))
    for ts in range(1, 1000):
        manager.add(ts, ts, now=ts)
        eviction.set_context(EvictionContext(ts, sliding_interval=1))
        manager.on_trigger()
        manager.take_outputs()
    assert len(manager._slices) <= 64
