"""PartitionOffsets: commit the first offset not yet done; gaps never stall; no re-emits."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from connectors.kafka.offsets import PartitionOffsets


def test_commits_up_to_first_not_done() -> None:
    offsets = PartitionOffsets(0)
    for o in range(5):
        assert offsets.track(o)
    offsets.done(1)
    offsets.done(2)
    assert offsets.committable == 0
    offsets.done(0)
    assert offsets.committable == 3
    offsets.done(4)
    assert offsets.committable == 3
    offsets.done(3)
    assert offsets.committable == 5
    assert offsets.uncommitted == 0


def test_gaps_from_missing_offsets_never_stall() -> None:
    offsets = PartitionOffsets(10)
    for o in (12, 13, 17):  # 10, 11, 14-16 compacted away
        offsets.track(o)
    offsets.done(12)
    offsets.done(13)
    assert offsets.committable == 17
    offsets.done(17)
    assert offsets.committable == 18


def test_trailing_gap_committed_through_fetch_position() -> None:
    offsets = PartitionOffsets(0)
    offsets.track(0)
    offsets.done(0)
    offsets.fetched_upto(3)  # 1, 2 are transaction markers
    assert offsets.committable == 3
    offsets.fetched_upto(2)
    assert offsets.fetch_position == 3


def test_committed_and_duplicate_offsets_are_refused() -> None:
    offsets = PartitionOffsets(5)
    assert not offsets.track(4)
    assert offsets.track(5)
    assert not offsets.track(5)
    offsets.done(5)
    assert not offsets.track(5)
    assert not offsets.done(5)
    assert not offsets.done(99)


def test_commit_bookkeeping() -> None:
    offsets = PartitionOffsets(0)
    offsets.track(0)
    assert not offsets.needs_commit()
    offsets.done(0)
    assert offsets.needs_commit()
    offsets.mark_committed(1)
    offsets.mark_committed(0)
    assert offsets.committed == 1
    assert not offsets.needs_commit()


def test_negative_start_rejected() -> None:
    with pytest.raises(ValueError, match=r"^start offset must be >= 0, got -1$"):
        PartitionOffsets(-1)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[int, list[int], list[int]]:
    start = draw(st.integers(0, 1000))
    steps = draw(st.lists(st.integers(1, 4), min_size=0, max_size=60))
    fetched, o = [], start + draw(st.integers(0, 3))
    for step in steps:
        fetched.append(o)
        o += step
    done = draw(st.permutations(fetched))
    cut = draw(st.integers(0, len(done)))
    return start, fetched, list(done[:cut])


@given(scenarios())
def test_committable_is_lowest_outstanding(scenario: tuple[int, list[int], list[int]]) -> None:
    start, fetched, done = scenario
    offsets = PartitionOffsets(start)
    for o in fetched:
        assert offsets.track(o)
    last = offsets.committable
    for o in done:
        assert offsets.done(o)
        assert offsets.committable >= last  # never backwards
        last = offsets.committable
    outstanding = sorted(set(fetched) - set(done))
    expected = outstanding[0] if outstanding else (fetched[-1] + 1 if fetched else start)
    assert offsets.committable == expected
    assert offsets.inflight == len(outstanding)
    # nothing below the commit point can be tracked (hence emitted) again
    assert all(not offsets.track(o) for o in fetched)


class OffsetsMachine(RuleBasedStateMachine):
    """Random fetches (with gaps), acks, trailing gaps and commits against a plain model."""

    def __init__(self) -> None:
        super().__init__()
        self.offsets = PartitionOffsets(5)
        self.next_offset = 5
        self.fetched: set[int] = set()
        self.done: set[int] = set()
        self.last_committable = 5

    @rule(gap=st.integers(0, 3))
    def fetch(self, gap: int) -> None:
        offset = self.next_offset + gap
        assert self.offsets.track(offset)
        self.fetched.add(offset)
        self.next_offset = offset + 1

    @rule(gap=st.integers(1, 3))
    def trailing_gap(self, gap: int) -> None:
        self.next_offset += gap
        self.offsets.fetched_upto(self.next_offset)

    @rule(data=st.data())
    def finish(self, data: st.DataObject) -> None:
        outstanding = sorted(self.fetched - self.done)
        if outstanding:
            offset = data.draw(st.sampled_from(outstanding))
            assert self.offsets.done(offset)
            self.done.add(offset)

    @rule(offset=st.integers(0, 200))
    def refetch_is_refused(self, offset: int) -> None:
        if offset < self.next_offset:
            assert not self.offsets.track(offset)

    @rule()
    def commit(self) -> None:
        self.offsets.mark_committed(self.offsets.committable)
        assert not self.offsets.needs_commit()

    @invariant()
    def commit_point_is_first_outstanding(self) -> None:
        committable = self.offsets.committable
        outstanding = self.fetched - self.done
        assert committable == (min(outstanding) if outstanding else self.next_offset)
        assert committable >= self.last_committable
        self.last_committable = committable
        # everything below the commit point is done or was never in the log
        assert not {o for o in self.fetched if o < committable} - self.done


TestOffsetsMachine = OffsetsMachine.TestCase


@given(st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=40),
       st.lists(st.integers(min_value=1, max_value=3), min_size=1, max_size=40))
def test_track_many_is_track_per_offset(gaps: list[int], done_every: list[int]) -> None:
    offsets, at = [], 7
    for gap in gaps:
        at += gap
        offsets.append(at)
        at += 1
    one, many = PartitionOffsets(7), PartitionOffsets(7)
    for offset in offsets:
        assert one.track(offset)
    many.track_many(offsets)
    for i, offset in enumerate(offsets):
        if i % done_every[i % len(done_every)] == 0:
            assert one.done(offset) == many.done(offset)
    assert (one.committable, one.uncommitted, one.inflight, one.fetch_position) == (
        many.committable, many.uncommitted, many.inflight, many.fetch_position)


def test_track_many_refuses_offsets_below_the_fetch_position() -> None:
    tracker = PartitionOffsets(10)
    tracker.track_many([10, 11])
    with pytest.raises(ValueError, match="ascending offsets from 12"):
        tracker.track_many([11, 12])


@given(st.lists(st.integers(min_value=0, max_value=30), max_size=60))
def test_done_unordered_then_trim_is_done_per_offset(done: list[int]) -> None:
    one, many = PartitionOffsets(0), PartitionOffsets(0)
    one.track_many(list(range(25)))
    many.track_many(list(range(25)))
    answers = [one.done(offset) for offset in done]
    assert [many.done_unordered(offset) for offset in done] == answers
    many.trim()
    assert (one.committable, one.uncommitted, one.inflight) == (
        many.committable, many.uncommitted, many.inflight)
