"""The in-flight limit of a spout paced by checkpoints: trees acked per round times the
round, with headroom, between a floor and a memory bound (time is an argument)."""

from __future__ import annotations

import pytest

from engine.flow_control import HEADROOM, HOLD_MAX_LIMIT, HOLD_MIN_LIMIT, HoldLimit


class Source:
    """A clock and an acked-tree counter the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0
        self.acks = 0

    def limit(self, round_secs: float = 2.0, cap: int | None = None) -> HoldLimit:
        return HoldLimit(30, round_secs, lambda: self.acks, lambda: self.now, cap)

    def run(self, flow: HoldLimit, rate: float, secs: float, step: float = 0.1) -> None:
        """``rate`` acks per second for ``secs``, the limit looking on every step."""
        for _ in range(round(secs / step)):
            self.now += step
            self.acks += round(rate * step)
            flow.latency(self.now - 1.0, self.now, 0)


def test_starts_at_the_memory_bound_or_the_cap() -> None:
    src = Source()
    assert src.limit().limit == HOLD_MAX_LIMIT
    assert src.limit(cap=5000).limit == 5000
    with pytest.raises(ValueError, match="round_secs"):
        src.limit(round_secs=0)


def test_follows_throughput_times_the_round() -> None:
    src = Source()
    flow = src.limit(round_secs=2.0)
    src.run(flow, rate=8000, secs=4.1)
    assert flow.limit == pytest.approx(HEADROOM * 8000 * 2.0, rel=0.05)
    src.run(flow, rate=3000, secs=8.1)  # slower now: down with it, two rounds on
    assert flow.limit == pytest.approx(HEADROOM * 3000 * 2.0, rel=0.05)


def test_stays_within_the_floor_and_the_cap() -> None:
    src = Source()
    slow = src.limit()
    src.run(slow, rate=100, secs=4.1)
    assert slow.limit == HOLD_MIN_LIMIT
    capped = src.limit(cap=7000)
    src.run(capped, rate=100_000, secs=4.1)
    assert capped.limit == 7000
    small_cap = src.limit(cap=500)  # a cap below the floor is still the cap
    src.run(small_cap, rate=10, secs=4.1)
    assert small_cap.limit == 500


def test_grows_while_it_holds_the_spout_back() -> None:
    src = Source()
    flow = src.limit(round_secs=2.0)
    src.run(flow, rate=10_000, secs=4.1)
    held = flow.limit
    # Held back at `held` trees with acks in one burst per 1 s checkpoint: the rate is
    # held per second, so the next limit is HEADROOM x held x 2 s.
    flow.limited = True
    for _ in range(3):
        src.now += 1.0
        src.acks += held
        flow.acked(held)
    assert flow.limit >= 2 * held


def test_a_stall_leaves_the_limit_where_it_was() -> None:
    src = Source()
    flow = src.limit(round_secs=2.0)
    src.run(flow, rate=20_000, secs=4.1)
    before = flow.limit
    src.now += 30.0  # no ack for 30 s: nothing looks at the limit meanwhile
    src.acks += 5
    flow.timed_out(src.now, 0)
    assert flow.limit == before  # a gap is no measurement
    assert not flow.timed_out(src.now, 0) and not flow.latency(0.0, src.now, 0)  # never cuts


def test_a_hung_call_counts_as_stuck_after_half_the_timeout() -> None:
    assert Source().limit().target() == 15.0  # timeout 30 s


def test_the_first_burst_of_acks_counts_though_it_came_after_a_wait() -> None:
    """No ack for more than a round after the start (a consumer group's join, the first
    checkpoint round), then the first commit acks a whole limit's worth, the executor
    counting each ack before telling the limit: the limit must not fall to the floor as if
    the spout had completed one tree in all that time."""
    src = Source()
    flow = src.limit(round_secs=2.0)
    flow.limited = True
    for burst in range(3):  # a commit every 1.1 s acks everything in flight
        src.now = 2.3 + 1.1 * burst
        for _ in range(HOLD_MAX_LIMIT):
            src.acks += 1
            flow.acked(1)
        assert flow.limit == HOLD_MAX_LIMIT
