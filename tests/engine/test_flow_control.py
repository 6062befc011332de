"""The flow-control core: AIMD on complete latency, as plain data (time is an argument)."""

from __future__ import annotations

import pytest

from engine.flow_control import BETA, INITIAL_LIMIT, MIN_LIMIT, TARGET_FRACTION, FlowLimit


def test_starts_at_the_initial_limit_never_above_the_cap() -> None:
    assert FlowLimit(30).limit == INITIAL_LIMIT
    assert FlowLimit(30, cap=10).limit == 10
    with pytest.raises(ValueError, match="timeout"):
        FlowLimit(0)


def test_grows_only_while_it_holds_the_spout_back() -> None:
    flow = FlowLimit(30)
    flow.acked(50)
    assert flow.limit == INITIAL_LIMIT  # the spout emitted less than allowed
    flow.limited = True
    flow.acked(50)
    assert flow.limit == INITIAL_LIMIT + 50  # slow start: one per acked tree


def test_growth_stops_at_the_cap() -> None:
    flow = FlowLimit(30, cap=100)
    flow.limited = True
    flow.acked(1000)
    assert flow.limit == 100


def test_target_is_a_tenth_of_the_timeout_raised_for_slow_work_capped_at_half() -> None:
    flow = FlowLimit(30)
    flow.latency(0.0, 0.05, 10)  # fast work: the floor is 50 ms
    assert flow.target() == pytest.approx(30 * TARGET_FRACTION)
    slow = FlowLimit(30)
    slow.latency(0.0, 4.0, 10)  # every call takes 4 s: not a queue
    assert slow.target() == pytest.approx(8.0)
    slower = FlowLimit(30)
    slower.latency(0.0, 12.0, 10)
    assert slower.target() == pytest.approx(15.0)


def test_a_latency_over_the_target_cuts_to_beta_times_what_is_in_flight() -> None:
    flow = FlowLimit(2)
    flow.latency(0.0, 0.01, 5)
    assert not flow.latency(1.0, 1.1, 64)  # 0.1 s: under the 0.2 s target
    assert flow.latency(1.0, 1.5, 64)
    assert flow.limit == int(64 * BETA)
    assert flow.cuts == 1


def test_the_cut_uses_the_trees_in_flight_when_fewer_than_the_limit() -> None:
    flow = FlowLimit(2, initial=1000)
    flow.latency(0.0, 0.01, 5)
    assert flow.latency(1.0, 1.5, 100)
    assert flow.limit == int(100 * BETA)


def test_one_cut_per_round_trip() -> None:
    flow = FlowLimit(2)
    flow.latency(0.0, 0.01, 5)
    assert flow.latency(1.0, 1.5, 64)  # cut at 1.5
    assert not flow.latency(1.2, 1.9, 60)  # emitted before the cut: ignored
    assert flow.limit == int(64 * BETA)
    assert flow.latency(1.6, 2.2, 44)  # emitted after it: a fresh signal
    assert flow.limit == int(int(64 * BETA) * BETA)


def test_after_a_cut_growth_is_one_per_round_trip() -> None:
    flow = FlowLimit(2, initial=1000)
    flow.latency(0.0, 0.01, 5)
    flow.latency(1.0, 1.5, 100)
    assert flow.limit == 70
    flow.limited = True
    for _ in range(70):
        flow.acked(1)
    assert flow.limit == 70  # 70 acks: a little under one
    for _ in range(71 * 5):
        flow.acked(1)
    assert 74 <= flow.limit <= 76


def test_slow_start_ends_half_way_to_the_target() -> None:
    flow = FlowLimit(2)
    flow.latency(0.0, 0.01, 5)
    flow.limited = True
    assert not flow.latency(1.0, 1.15, 64)  # 0.15 s: over half the 0.2 s target
    assert flow.cuts == 0
    flow.acked(64)
    assert flow.limit == INITIAL_LIMIT + 1  # one per round trip now, not 64


def test_a_timeout_cuts_unless_the_tree_was_emitted_before_the_last_cut() -> None:
    flow = FlowLimit(2)
    assert flow.timed_out(10.0, 64)
    assert flow.limit == int(64 * BETA)
    assert not flow.timed_out(11.0, 64)  # emitted at about 9.0, before the cut at 10.0
    assert flow.timed_out(12.5, 40)
    assert flow.cuts == 2


def test_never_below_the_minimum() -> None:
    flow = FlowLimit(2)
    for i in range(50):
        flow.timed_out(10.0 + 3 * i, 0)
    assert flow.limit == MIN_LIMIT


def test_a_tree_kept_alive_past_the_timeout_is_not_a_queue() -> None:
    flow = FlowLimit(30)
    assert not flow.latency(0.0, 54.0, 10)  # reset_timeout kept it going for 54 s
    assert flow.cuts == 0 and flow.limit == INITIAL_LIMIT
