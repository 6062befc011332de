"""The windowing executor driven by hand on a manual clock: anchoring and acking on expiry
in processing time, with no timer and no waiting."""

from __future__ import annotations

from typing import Any

from engine.windowing import BaseWindowedBolt, Count, Duration
from engine.windowing.wiring import windowed_executor
from tests.state.helpers import Recorder, context, make_tuple
from tests.windowing.bolts import SumWindow


async def prepared(bolt: BaseWindowedBolt) -> tuple[Any, Recorder, list[float]]:
    """The executor for ``bolt`` with its clock in the test's hands (seconds)."""
    conf = {"topology.message.timeout.secs": 30, "topology.max.spout.pending": None}
    ex = windowed_executor("sum", bolt)
    out = Recorder()
    await ex.prepare(conf, context("sum", 2, {"numbers": [1], "sum": [2]},
                                   [("numbers", "default")], conf), out)
    await ex.timers.cancel()  # the test plays the timer
    clock = [0.0]
    ex._loop_time = lambda: clock[0]
    ex._epoch = 1000.0
    return ex, out, clock


def emits(out: Recorder) -> list[tuple[str, list[Any], Any]]:
    """``out``'s emits, with anchors given as an iterable (the window) listed."""
    return [(stream, values, anchors if anchors is None else list(anchors))
            for stream, values, anchors in out.emits]


def number(n: int) -> Any:
    return make_tuple([n], ["n"], "numbers", 1)


async def test_sliding_duration_window_on_a_manual_clock() -> None:
    bolt = SumWindow()
    ex, out, clock = await prepared(bolt.with_window(Duration(1), Duration(0.5)))
    a, b, c = number(1), number(2), number(3)
    clock[0] = 0.1
    ex.execute(a)
    clock[0] = 0.4
    ex.execute(b)
    clock[0] = 0.5
    await ex._tick(ex._on_slide_tick)
    assert emits(out) == [("default", [3], [a, b])]  # anchored to every tuple of the window
    window = bolt.windows[0]
    assert window.end_timestamp == 1_000_499 and window.start_timestamp == 999_499
    clock[0] = 0.9
    ex.execute(c)
    clock[0] = 1.0
    await ex._tick(ex._on_slide_tick)
    assert emits(out)[-1] == ("default", [6], [a, b, c]) and out.acks == []
    clock[0] = 1.5  # the window ends at 1.499 s: a (0.1 s) and b (0.4 s) are 1 s old or more
    await ex._tick(ex._on_slide_tick)
    assert out.acks == [a, b]  # acked as they leave the window, not before
    assert emits(out)[-1] == ("default", [3], [c])
    assert bolt.windows[-1].get_expired() == [a, b]
    clock[0] = 2.0
    await ex._tick(ex._on_slide_tick)
    assert out.acks == [a, b, c]
    await ex.cleanup()


async def test_emits_outside_execute_window_are_not_anchored() -> None:
    bolt = SumWindow()
    ex, out, _ = await prepared(bolt.with_tumbling_window(Count(2)))
    ex.execute(number(1))
    ex.execute(number(2))
    assert out.emits[-1][2] is not None
    ex.bolt.collector.emit([0])
    assert out.emits[-1] == ("default", [0], None)
    await ex.cleanup()


async def test_a_queue_batch_fails_only_its_tuple_with_a_bad_timestamp() -> None:
    """The bolt executor hands a sync windowed bolt whole batches: a tuple whose event time
    is not an int fails alone, the others of its batch are windowed."""
    bolt = SumWindow()
    ex, out, _ = await prepared(bolt.with_window(Count(10), Count(1))
                                .with_timestamp_field("ts"))
    good, bad, other = ([make_tuple([n, ts], ["n", "ts"], "numbers", 1) for n, ts in
                        ((1, 500), (2, "noon"), (3, 900))])
    assert ex.executes_batches
    ex.execute_batch([good, bad, other])
    assert out.fails == [bad] and "timestamps must be int" in out.reasons[0].message
    assert ex.in_windows() == 2 and out.acks == []


async def test_a_queue_batch_is_windowed_in_order_and_its_late_tuples_are_acked() -> None:
    """One source's batch: on-time tuples queue in order and tell the watermark their
    latest stamp; a tuple stamped before the watermark, or with a bool for a stamp, is
    taken out of the batch alone."""
    bolt = SumWindow()
    ex, out, _ = await prepared(bolt.with_window(Count(10), Count(1))
                                .with_timestamp_field("ts"))

    def batch(*stamps: Any) -> list[Any]:
        return [make_tuple([n, ts], ["n", "ts"], "numbers", 1) for n, ts in enumerate(stamps)]

    first = batch(100, 300, 200)
    ex.execute_batch(first)
    assert ex.manager.held() == first and out.acks == out.fails == []
    assert ex.event_time.watermarks.last_watermark == 300  # moved after the batch
    late, flag = batch(50, True)
    ex.execute_batch([late, flag])
    assert out.acks == [late] and out.fails == [flag]
    assert ex.in_windows() == 3
