"""Before the first evaluation of a processing-time window, the compaction every
``EXPIRE_EVENTS_THRESHOLD`` adds expires the tuples that were already older than the window
when they arrived (Storm's ``WindowManagerTest.testTimeBasedWindow``), and only those: a
tuple that arrived inside the window is evaluated at least once, however late the first
evaluation comes (``test_manager.test_nothing_expires_before_the_first_evaluation_...``)."""

from __future__ import annotations

from typing import Any

from engine.windowing.manager import EXPIRE_EVENTS_THRESHOLD, Activation, Expired, WindowManager
from engine.windowing.policies import EvictionContext, TimeEviction, TimeTrigger

DAY_MS = 86_400_000
NOW = 1_700_000_000_000


class Listener:
    """Storm's test listener: the last expiry and activation, as the manager reports them."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.on_expiry: list[Any] = []
        self.on_activation: list[Any] = []
        self.on_activation_new: list[Any] = []
        self.on_activation_expired: list[Any] = []

    def collect(self, manager: WindowManager) -> None:
        for out in manager.take_outputs():
            if isinstance(out, Expired):
                self.on_expiry = out.items
            else:
                assert isinstance(out, Activation) and out.items is not None
                self.on_activation, self.on_activation_new = out.items, out.new
                self.on_activation_expired = out.expired


def seq(start: int, stop: int) -> list[int]:
    return list(range(start, stop + 1))


def test_time_based_window() -> None:
    """Storm's testTimeBasedWindow: a 1 s window whose trigger (a day) never fires by
    itself; the test sets the reference time and evaluates by hand."""
    eviction = TimeEviction(1000)
    manager = WindowManager(eviction, lambda m, e: TimeTrigger(DAY_MS, m, e))
    manager.start()
    listener = Listener()
    threshold = EXPIRE_EVENTS_THRESHOLD

    def add(i: int, ts: int) -> None:
        manager.add(i, ts, NOW)
        listener.collect(manager)

    for i in seq(1, 50):  # stamped a window's length in the past
        add(i, NOW - 1000)
    for i in seq(51, threshold):
        add(i, NOW)
    # the first 50 expired at the threshold
    assert len(listener.on_expiry) == 50

    for i in seq(threshold + 1, threshold + 100):  # more in the past
        add(i, NOW - 1000)
    eviction.set_context(EvictionContext(NOW + 100))
    manager.on_trigger()
    listener.collect(manager)
    # the 100 stamped in the past expire at the evaluation
    assert listener.on_expiry == seq(threshold + 1, threshold + 100)
    activations = seq(51, threshold)
    assert listener.on_activation == activations
    assert listener.on_activation_new == activations
    # the evaluation's expired list holds those the threshold expired too
    assert listener.on_activation_expired == seq(1, 50) + seq(threshold + 1, threshold + 100)

    listener.clear()
    new = seq(threshold + 101, threshold + 200)
    for i in new:
        add(i, NOW)
    eviction.set_context(EvictionContext(NOW + 200))
    manager.on_trigger()
    listener.collect(manager)
    assert listener.on_expiry == []
    assert listener.on_activation == activations + new
    assert listener.on_activation_new == new


def test_a_batch_expires_its_stale_head_but_not_what_arrived_inside_the_window() -> None:
    """The same rule for a batch (``add_all``) and for a queue that arrived in order:
    stamps older than the window on arrival leave at the threshold; a tuple that arrived
    fresh stays, and so do the stale ones queued behind it (a compaction takes from the
    head only), until the first evaluation decides by its reference time."""
    eviction = TimeEviction(1000)
    manager = WindowManager(eviction, lambda m, e: TimeTrigger(DAY_MS, m, e))
    manager.start()
    stale = list(range(60))
    manager.add_all(stale, [NOW - 2000 + i for i in stale], NOW)
    fresh = list(range(60, 120))
    manager.add_all(fresh, [NOW] * 60, NOW)
    (out,) = manager.take_outputs()
    assert isinstance(out, Expired) and out.items == stale
    later = NOW + 5000  # the loop was busy: ``fresh`` is old now, but arrived inside
    behind = list(range(120, 220))
    manager.add_all(behind, [later - 1500] * 100, later)
    assert manager.take_outputs() == [] and len(manager) == 160
    eviction.set_context(EvictionContext(later, sliding_interval=DAY_MS))  # first: delta inf
    manager.on_trigger()
    (act,) = manager.take_outputs()
    assert isinstance(act, Activation) and act.items == fresh + behind
