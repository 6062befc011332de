"""The dead-letter breaker trips on a share in a window or on a run, once, with figures."""

from __future__ import annotations

import pytest

from connectors.kafka.breaker import DeadLetterBreaker, DeadLetterLimit


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="set max_share, max_consecutive or both"):
        DeadLetterLimit()
    with pytest.raises(ValueError, match="max_share"):
        DeadLetterLimit(max_share=1.5)
    with pytest.raises(ValueError, match="max_consecutive"):
        DeadLetterLimit(max_consecutive=0)


def test_a_run_of_given_up_records_trips_and_a_completed_one_breaks_the_run() -> None:
    b = DeadLetterBreaker(DeadLetterLimit(max_consecutive=3))
    assert b.give_up(0.0) is None and b.give_up(0.1) is None
    b.done()  # the run restarts
    assert b.give_up(0.2) is None and b.give_up(0.3) is None
    assert b.give_up(0.4) == "3 records in a row given up (limit 3 in a row)"
    assert b.tripped is not None
    assert b.give_up(0.5) is None  # trips once
    assert b.given_up == 6


def test_share_counts_only_after_min_records() -> None:
    b = DeadLetterBreaker(DeadLetterLimit(max_share=0.5, window_secs=60, min_records=10))
    b.tick(0.0)
    for i in range(9):
        assert b.give_up(float(i)) is None  # 9 of 9 given up, but fewer than 10 records
    tripped = b.give_up(9.0)
    assert tripped == ("10 of 10 records (100 %) given up in the last 60 s "
                       "(limit 50 % of at least 10)")


def test_share_below_the_limit_never_trips() -> None:
    b = DeadLetterBreaker(DeadLetterLimit(max_share=0.5, window_secs=10, min_records=10))
    now = 0.0
    for _ in range(1000):
        now += 0.01
        b.tick(now)
        b.done()
        assert b.give_up(now) is None  # exactly half given up: not more than the limit
    assert b.tripped is None


def test_the_window_forgets_old_successes() -> None:
    b = DeadLetterBreaker(DeadLetterLimit(max_share=0.5, window_secs=10, min_records=10))
    b.tick(0.0)
    for _ in range(100_000):
        b.done()  # a long healthy run...
    now = 0.0
    for _ in range(30):
        now += 1.0
        b.tick(now)
    # ...then every record fails: the successes are older than the window.
    results = []
    for i in range(12):
        results.append(b.give_up(now + i * 0.1))
    assert results[:9] == [None] * 9
    assert any(r is not None and r.startswith(("10 of 10", "11 of 11", "12 of 12"))
               for r in results)


def test_successes_inside_the_window_keep_it_closed() -> None:
    b = DeadLetterBreaker(DeadLetterLimit(max_share=0.2, window_secs=10, min_records=10))
    b.tick(0.0)
    for _ in range(100):
        b.done()
    assert all(b.give_up(1.0 + i * 0.01) is None for i in range(25))  # 25 of 125: 20 %
    assert b.give_up(2.0) is not None  # 26 of 126: over 20 %
