"""Event-time windows: watermarks, lag, out-of-order and late tuples (pure cores)."""

from __future__ import annotations

from datetime import UTC, datetime

from engine.windowing.spec import Count, Duration
from engine.windowing.watermark import WatermarkGenerator
from tests.windowing.helpers import Driver


def ms(hour: int, minute: int, second: int) -> int:
    """Epoch ms of ``hour:minute:second`` on a fixed day."""
    return int(datetime(2016, 1, 1, hour, minute, second, tzinfo=UTC).timestamp() * 1000)


def names(items: list[tuple[str, int]]) -> list[str]:
    return [name for name, _ in items]


def test_the_watermark_example_of_storms_windowing_page() -> None:
    """Length 20 s, slide 10 s, lag 5 s: two bursts, the windows the page lists, gap skipped."""
    d = Driver(Duration(20), Duration(10), event_time=True, lag_ms=5000)
    first = [("e1", ms(6, 0, 3)), ("e2", ms(6, 0, 5)), ("e3", ms(6, 0, 7)),
             ("e4", ms(6, 0, 18)), ("e5", ms(6, 0, 26)), ("e6", ms(6, 0, 36))]
    for ev in first:
        d.add(ev, ev[1])
    assert d.watermark() == ms(6, 0, 31)
    acts = d.activations
    assert [names(a.items) for a in acts] == [["e1", "e2", "e3"], ["e1", "e2", "e3", "e4"],
                                             ["e4", "e5"]]
    assert [a.reference_time for a in acts] == [ms(6, 0, 10), ms(6, 0, 20), ms(6, 0, 30)]
    assert names(acts[2].expired) == ["e1", "e2", "e3"]
    assert names(acts[1].new) == ["e4"]

    second = [("e7", ms(8, 0, 25)), ("e8", ms(8, 0, 26)), ("e9", ms(8, 0, 27)),
              ("e10", ms(8, 0, 39))]
    for ev in second:
        d.add(ev, ev[1])
    assert d.watermark() == ms(8, 0, 34)
    later = d.activations[3:]
    assert [names(a.items) for a in later] == [["e5", "e6"], ["e6"], ["e7", "e8", "e9"]]
    # The empty windows of the two-hour gap are skipped: the next end is aligned past it.
    assert [a.reference_time for a in later] == [ms(6, 0, 40), ms(6, 0, 50), ms(8, 0, 30)]
    assert names(d.expired) == ["e1", "e2", "e3", "e4", "e5", "e6"]
    assert d.windows()[-1] == later[-1].items


def test_out_of_order_tuples_within_the_lag_land_in_their_window() -> None:
    d = Driver(Duration(10), Duration(10), event_time=True, lag_ms=3000)
    for name, ts in [("a", 1000), ("c", 12_000), ("b", 9_000), ("d", 14_000)]:
        d.add((name, ts), ts)
    d.watermark()  # 14 s - 3 s = 11 s: the window ending at 10 s is complete
    assert [names(a.items) for a in d.activations] == [["a", "b"]]
    for name, ts in [("e", 25_000)]:
        d.add((name, ts), ts)
    d.watermark()  # 22 s
    assert [names(a.items) for a in d.activations] == [["a", "b"], ["c", "d"]]
    assert names(d.activations[1].expired) == ["a", "b"]


def test_a_tuple_stamped_before_the_watermark_is_late() -> None:
    d = Driver(Duration(10), Duration(5), event_time=True, lag_ms=1000)
    d.add(("a", 10_000), 10_000)
    d.watermark()  # 9 s
    d.add(("late", 8_999), 8_999)
    d.add(("edge", 9_000), 9_000)  # at the watermark: not late
    assert names(d.late) == ["late"]
    d.add(("b", 20_000), 20_000)
    d.watermark()
    assert "late" not in [n for a in d.activations for n in names(a.items)]
    assert "edge" in [n for a in d.activations for n in names(a.items)]


def test_no_watermark_until_every_input_stream_has_data() -> None:
    gen = WatermarkGenerator(["a", "b"], lag_ms=0)
    gen.track("a", 5000)
    assert gen.advance() is None
    gen.track("b", 3000)
    assert gen.advance() == 3000  # the slower stream holds the watermark back
    gen.track("b", 9000)
    assert gen.advance() == 5000
    assert gen.advance() is None  # only ever forward
    assert not gen.track("a", 4999)
    assert gen.track("a", 5000)


def test_event_time_count_window_fires_every_slide_count_up_to_the_watermark() -> None:
    d = Driver(Count(3), Count(2), event_time=True)
    for i, ts in enumerate([10, 20, 30, 40, 50, 60, 70]):
        d.add(i, ts)
    d.watermark()  # 70
    assert d.windows() == [[0, 1], [1, 2, 3], [3, 4, 5]]
    assert d.expired == [0, 1, 2]


def test_event_time_count_window_counts_arrivals_up_to_the_watermark() -> None:
    """Count windows in event time count tuples in arrival order (Storm's rule): the window
    fired at the 2nd arrival stamped <= the watermark holds the first two such arrivals;
    tuples beyond the watermark wait."""
    d = Driver(Count(2), Count(2), event_time=True, lag_ms=15)
    for i, ts in enumerate([10, 30, 20, 40, 50]):
        d.add(i, ts)
    d.watermark()  # 50 - 15 = 35: arrivals 0 (10), 1 (30), 2 (20) are complete
    assert d.windows() == [[0, 1]]
    assert d.activations[0].reference_time == 30
    d.add(5, 70)
    d.watermark()  # 55: 2 (20), 3 (40) make the next pair; 4 (50) waits for its partner
    assert d.windows() == [[0, 1], [2, 3]]
    assert d.expired == [0, 1]


def test_a_quiet_input_lets_event_time_go_on_with_the_clock() -> None:
    gen = WatermarkGenerator(["a", "b"], lag_ms=2000)
    assert gen.idle(5000) is None  # nothing seen: nothing to go on from
    gen.track("a", 10_000)  # "b" never delivered: no watermark from advance()
    assert gen.advance() is None
    assert gen.idle(3000) == 11_000  # 10 s - 2 s lag + 3 s quiet
    assert gen.idle(3000) is None  # it never goes back
    assert gen.track("a", 11_500)  # stamped by a clock that went on: not late
    assert gen.idle(15_000) == 24_500
