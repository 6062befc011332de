"""``with_idle_timeout``: once an event-time window's input has been quiet that long while
the window holds tuples, event time goes on with the clock from the latest tuple, so the
last windows of a finite or paused input close; without it they wait for newer tuples.
The executor is driven by hand on a manual clock, with the watermark per batch (the
default) and Storm's periodic one."""

from __future__ import annotations

from typing import Any

import pytest

from engine.windowing import BaseWindowedBolt, Duration, TupleWindow
from engine.windowing.spec import WindowSpec
from tests.state.helpers import Recorder, make_tuple
from tests.windowing.test_executor_virtual_time import prepared

PER_BATCH, PERIODIC = None, Duration(0.5)


class Counts(BaseWindowedBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n", "end"])

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, window: TupleWindow) -> None:
        self.collector.emit([len(window.get()), window.end_timestamp])


def stamped(ts: int) -> Any:
    return make_tuple([ts], ["ts"], "numbers", 1)


async def one_shot(bolt: Counts, interval: Duration | None,
                   stamps: tuple[int, ...] = (500, 1500, 2500),
                   ) -> tuple[Any, Recorder, list[Any], list[float]]:
    """Tuples with ``stamps`` (ms) at clock 0, then a quiet input: the window (4 s, sliding
    every 1 s, lag 1 s) ticked every 0.5 s of the clock for 20 s."""
    bolt.with_window(Duration(4), Duration(1)).with_timestamp_field("ts")
    bolt.with_lag(Duration(1))
    if interval is not None:
        bolt.with_watermark_interval(interval)
    ex, out, clock = await prepared(bolt)
    tuples = [stamped(ms) for ms in stamps]
    for tup in tuples:
        ex.execute(tup)
    for step in range(1, 41):
        clock[0] = step / 2
        await ex._tick(ex._on_watermark_tick)
    return ex, out, tuples, clock


@pytest.mark.parametrize("interval", [PER_BATCH, PERIODIC])
async def test_without_an_idle_timeout_the_last_windows_of_a_quiet_input_wait(
        interval: Duration | None) -> None:
    ex, out, _, _ = await one_shot(Counts(), interval)
    assert [e[1] for e in out.emits] == [[1, 1000]]  # only what the 1.5 s watermark closed
    assert out.acks == []
    await ex.cleanup()


@pytest.mark.parametrize("interval", [PER_BATCH, PERIODIC])
async def test_an_idle_timeout_closes_every_window_of_a_quiet_input(
        interval: Duration | None) -> None:
    bolt = Counts()
    bolt.with_idle_timeout(Duration(2))
    ex, out, tuples, _ = await one_shot(bolt, interval)
    assert [e[1] for e in out.emits] == [
        [1, 1000], [2, 2000], [3, 3000], [3, 4000], [2, 5000], [1, 6000]]
    assert out.acks == tuples  # each acked as it left its last window
    # An empty window holds event time: 20 s of quiet did not carry it 20 s on.
    assert ex.event_time.watermarks.last_watermark < 8000
    await ex.cleanup()


async def test_the_quiet_counts_from_the_tick_that_saw_the_last_tuple() -> None:
    """The tuple came at clock 0, the first tick saw it at 0.5 s: event time goes on from
    there, 2 s later, never ahead of the clock."""
    bolt = Counts()
    bolt.with_window(Duration(4), Duration(1)).with_timestamp_field("ts")
    bolt.with_lag(Duration(1)).with_idle_timeout(Duration(2))
    ex, _, clock = await prepared(bolt)
    ex.execute(stamped(500))
    marks = []
    for step in range(1, 7):
        clock[0] = step / 2
        await ex._tick(ex._on_watermark_tick)
        marks.append(ex.event_time.watermarks.last_watermark)
    # 500 - 1000 lag + 2000 quiet at 2.5 s, + 500 at 3 s
    assert marks == [0, 0, 0, 0, 1500, 2000]
    await ex.cleanup()


def test_the_watermark_timer_ticks_often_enough_for_the_idle_timeout() -> None:
    assert WindowSpec().watermark_tick_ms == 1000  # per batch: checks for the end or quiet
    assert WindowSpec(idle_timeout_ms=300).watermark_tick_ms == 300
    assert WindowSpec(idle_timeout_ms=5000).watermark_tick_ms == 1000
    assert WindowSpec(watermark_interval_ms=500, idle_timeout_ms=300).watermark_tick_ms == 500
