"""Throttled logs: at most five errors per ten seconds, one warning per interval per key."""

from __future__ import annotations

import asyncio
import logging

import pytest

from engine.log_throttle import ErrorThrottle, IntervalWarning

LOG = logging.getLogger("test.throttle")


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records]


def test_errors_beyond_five_per_window_are_counted_not_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    throttle = ErrorThrottle(LOG)
    for i in range(100):
        throttle.error("bolt 'b': execute raised %s", i, now=i / 100)  # 100 in one second
    assert _lines(caplog) == [f"bolt 'b': execute raised {i}" for i in range(5)]
    assert throttle.suppressed == 95
    assert throttle.error("bolt 'b': execute raised %s", "late", now=10.5)
    assert _lines(caplog)[-1] == ("bolt 'b': execute raised late "
                                  "(95 similar errors suppressed in the last 10 s)")
    assert all(r.levelno == logging.ERROR for r in caplog.records)


def test_a_steady_error_rate_logs_a_bounded_number_of_lines(
        caplog: pytest.LogCaptureFixture) -> None:
    throttle = ErrorThrottle(LOG, limit=5, window=10.0)
    for i in range(60_000):  # 1,000 errors/s for 60 s
        throttle.error("spout 's': next_tuple raised", now=i / 1000)
    assert len(caplog.records) == 30


def test_allow_reports_what_was_dropped() -> None:
    throttle = ErrorThrottle(LOG, limit=1, window=1.0)
    assert throttle.allow(0.0) == (True, 0)
    assert throttle.allow(0.5) == (False, 0)
    assert throttle.allow(0.9) == (False, 0)
    assert throttle.allow(1.0) == (True, 2)


def test_one_warning_per_interval_per_key(caplog: pytest.LogCaptureFixture) -> None:
    warn = IntervalWarning(LOG, interval=10.0)
    for i in range(200):  # every 0.1 s for 20 s, two components
        warn.warn("spout 's'", "%d trees timed out", 3, n=3, now=i / 10)
        warn.warn("bolt 'b' task 2", "queue full", now=i / 10)
    assert _lines(caplog) == [
        "spout 's': 3 trees timed out", "bolt 'b' task 2: queue full",
        "spout 's': 3 trees timed out (300 times since the last report)",
        "bolt 'b' task 2: queue full (100 times since the last report)"]
    assert all(r.levelno == logging.WARNING for r in caplog.records)
    warn.forget("spout 's'")
    assert warn.warn("spout 's'", "again", now=20.5)


def test_time_comes_from_the_running_loop(caplog: pytest.LogCaptureFixture) -> None:
    throttle = ErrorThrottle(LOG, limit=1)

    async def two() -> list[bool]:
        return [throttle.error("e"), throttle.error("e")]

    assert asyncio.run(two()) == [True, False]
    with pytest.raises(RuntimeError):
        throttle.error("no loop, no now")


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match=r"^ErrorThrottle needs limit >= 1 and window > 0"):
        ErrorThrottle(LOG, limit=0)
    with pytest.raises(ValueError, match=r"^IntervalWarning needs interval > 0, got 0$"):
        IntervalWarning(LOG, interval=0)
