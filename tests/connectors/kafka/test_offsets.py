"""PartitionOffsets: commit the first offset not yet done; gaps never stall; no re-emits."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
