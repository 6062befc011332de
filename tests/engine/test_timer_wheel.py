"""The hashed timer wheel: never early, at most three ticks late, O(1) per key."""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import strategies as st

from engine.timer_wheel import TimerWheel


@given(st.lists(st.floats(0, 20, allow_nan=False), min_size=1, max_size=50),
       st.floats(0.3, 5.0), st.floats(0.05, 0.5))
def test_keys_expire_in_bounds(adds: list[float], timeout: float, tick: float) -> None:
    wheel: TimerWheel[int] = TimerWheel(timeout, now=0.0, tick=tick)
    added = sorted(adds)
    seen: dict[int, float] = {}
    t, i = 0.0, 0
    while len(seen) < len(added):
        while i < len(added) and added[i] <= t:
            wheel.add(i, added[i])
            i += 1
        for key in wheel.advance(t):
            assert key not in seen
            seen[key] = t
        t += tick / 3
    for key, at in seen.items():
        assert at >= added[key] + timeout, "expired early"
        assert at < added[key] + timeout + 3 * tick + tick / 3, "expired late"


def test_long_pause_delivers_everything_once() -> None:
    wheel: TimerWheel[int] = TimerWheel(1.0, now=0.0, tick=0.1)
    for k in range(100):
        wheel.add(k, k / 100)
    assert sorted(wheel.advance(100.0)) == list(range(100))
    assert wheel.advance(200.0) == []


def test_a_million_keys_expire_quickly() -> None:
    wheel: TimerWheel[int] = TimerWheel(30.0, now=0.0)
    for k in range(1_000_000):
        wheel.add(k, k * 1e-5)
    start = time.process_time()
    count = sum(len(wheel.advance(t / 10)) for t in range(0, 500))
    assert count == 1_000_000
    assert time.process_time() - start < 2.0
