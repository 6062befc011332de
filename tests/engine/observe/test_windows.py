"""Window rings: deltas over 10 minutes, 3 hours and all time, from cumulative samples."""

from __future__ import annotations

import pytest

from engine.observe.windows import (
    ALL_TIME,
    RATE_WINDOW,
    WindowRings,
    parse_window,
    window_label,
)


def test_a_young_topology_windows_span_its_whole_life() -> None:
    rings = WindowRings(started=100.0)
    d = rings.delta("600", 160.0, {"acked": 50})
    assert (d["acked"], d.elapsed) == (50, 60.0)
    assert rings.delta(ALL_TIME, 160.0, {"acked": 50}).elapsed == 60.0


def test_the_ten_minute_window_forgets_what_is_older() -> None:
    rings = WindowRings(started=0.0)
    # 10 acks a second, sampled every 5 s for 30 minutes.
    for t in range(0, 1800, 5):
        rings.offer(float(t), {"acked": 10 * t})
    now = 1800.0
    figures = {"acked": 18000}
    ten = rings.delta("600", now, figures)
    assert 600 <= ten.elapsed <= 630  # a whole window, one bucket (30 s) of slack
    assert ten["acked"] == 10 * ten.elapsed
    three = rings.delta("10800", now, figures)
    assert three["acked"] == 18000 and three.elapsed == 1800
    assert rings.delta(ALL_TIME, now, figures)["acked"] == 18000


def test_rings_keep_one_sample_per_bucket_not_per_offer() -> None:
    rings = WindowRings(started=0.0)
    for i in range(10_000):
        rings.offer(i * 0.01, {"acked": i})
    ring = rings._rings["600"]
    assert len(ring.samples) <= 22
    assert all(b[0] - a[0] >= 30 for a, b in zip(ring.samples, list(ring.samples)[1:],
                                                    strict=False))


def test_ratio_is_unknown_when_nothing_moved() -> None:
    rings = WindowRings(started=0.0)
    rings.offer(40.0, {"sum": 1.0, "count": 10})
    d = rings.delta("600", 700.0, {"sum": 1.0, "count": 10})
    assert d.ratio("sum", "count") is None
    d = rings.delta("600", 700.0, {"sum": 3.0, "count": 20})
    assert d.ratio("sum", "count") == pytest.approx(0.2)


def test_window_names() -> None:
    assert parse_window(None) == ALL_TIME
    assert parse_window("600") == "600"
    assert parse_window(":all-time") == ALL_TIME
    with pytest.raises(ValueError, match="window '5'"):
        parse_window("5")
    assert [window_label(w) for w in ("600", "10800", ALL_TIME)] == [
        "10m 0s", "3h 0m 0s", "All time"]


def test_rates_come_from_the_last_minute() -> None:
    rings = WindowRings(started=0.0)
    assert rings.delta(RATE_WINDOW, 0.5, {"acked": 5}).per_sec("acked") is None  # < 1 s
    # 100 acks a second for five minutes, then 10 a second for two.
    for t in range(0, 420, 5):
        rings.offer(float(t), {"acked": 100 * min(t, 300) + 10 * max(t - 300, 0)})
    rate = rings.delta(RATE_WINDOW, 420.0, {"acked": 30000 + 1200})
    assert 60 <= rate.elapsed <= 65  # one 5 s bucket of slack
    assert rate.per_sec("acked") == 10.0
    assert rings.delta("600", 420.0, {"acked": 31200}).per_sec("acked") < 100
