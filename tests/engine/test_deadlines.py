"""Timeouts in the owner's dict: never early, at most a tick late when polled, nothing kept
for keys the owner deleted, work proportional to what expires."""

from __future__ import annotations

import sys
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.deadlines import Deadlines


def _insert(deadlines: Deadlines, entries: dict[Any, Any], key: int, now: float) -> None:
    deadlines.arrive(entries, now)
    entries[key] = key


def _pop(deadlines: Deadlines, entries: dict[Any, Any], now: float) -> list[int]:
    keys = deadlines.due_keys(entries, now)
    for key in keys:
        del entries[key]
    return keys


@given(st.lists(st.floats(0, 20, allow_nan=False), min_size=1, max_size=50),
       st.floats(0.05, 5.0), st.floats(0.05, 0.5))
def test_keys_expire_in_bounds(adds: list[float], timeout: float, tick: float) -> None:
    deadlines = Deadlines(timeout, tick=tick)
    entries: dict[Any, Any] = {}
    added = sorted(adds)
    seen: dict[int, float] = {}
    poll = tick / 3
    t, i = 0.0, 0
    while len(seen) < len(added):
        while i < len(added) and added[i] <= t:
            _insert(deadlines, entries, i, added[i])
            i += 1
        for key in _pop(deadlines, entries, t):
            assert key not in seen
            seen[key] = t
        t += poll
    for key, at in seen.items():
        assert at >= added[key] + timeout, "expired early"
        assert at < added[key] + timeout + tick + poll + 1e-9, "expired late"
    assert entries == {} and deadlines.marks == 0


@given(st.lists(st.tuples(st.floats(0, 0.5, allow_nan=False), st.floats(0, 0.5)),
                min_size=1, max_size=50),
       st.floats(0.05, 2.0), st.floats(0.05, 0.5))
def test_keys_never_expire_early_whatever_order_times_come_in(
        steps: list[tuple[float, float]], timeout: float, tick: float) -> None:
    """Arrival times may go back (a caller counting from an earlier time): a later key's
    deadline is never pulled in by them."""
    deadlines = Deadlines(timeout, tick=tick)
    entries: dict[Any, Any] = {}
    added: dict[int, float] = {}
    t = 0.0
    for key, (forward, back) in enumerate(steps):
        t += forward
        added[key] = max(0.0, t - back)
        _insert(deadlines, entries, key, added[key])
        for due in _pop(deadlines, entries, t):
            assert t >= added[due] + timeout, "expired early"
    for due in _pop(deadlines, entries, t + timeout + tick):
        assert t + timeout + tick >= added[due] + timeout
    assert entries == {} and deadlines.marks == 0


def test_an_earlier_arrival_does_not_pull_in_its_group_deadline() -> None:
    deadlines = Deadlines(1.0, tick=0.2)
    entries: dict[Any, Any] = {}
    _insert(deadlines, entries, 1, 0.19)
    _insert(deadlines, entries, 2, 0.0)  # same group, an earlier time
    assert _pop(deadlines, entries, 1.1) == []
    assert _pop(deadlines, entries, 1.19) == [1, 2]


def test_deleted_keys_leave_nothing_behind() -> None:
    deadlines = Deadlines(30.0, tick=0.2)
    entries: dict[Any, Any] = {}
    for k in range(100_000):
        now = k * 1e-3
        _insert(deadlines, entries, k, now)
        del entries[k]  # decided at once
        if k % 200 == 0:
            assert _pop(deadlines, entries, now) == []
            entries = Deadlines.trimmed(entries)
    assert deadlines.marks <= 30.0 / 0.2 + 3
    assert len(entries) == deadlines.marks
    assert sys.getsizeof(entries) < 64 * 1024


def test_restart_moves_a_key_behind_later_arrivals() -> None:
    deadlines = Deadlines(1.0, tick=0.1)
    entries: dict[Any, Any] = {}
    _insert(deadlines, entries, 1, 0.0)
    _insert(deadlines, entries, 2, 0.0)
    entries.pop(1)  # a reset at 0.5: out, and in again
    _insert(deadlines, entries, 1, 0.5)
    assert _pop(deadlines, entries, 1.2) == [2]
    assert _pop(deadlines, entries, 1.45) == []
    assert _pop(deadlines, entries, 1.6) == [1]


def test_long_pause_delivers_everything_once() -> None:
    deadlines = Deadlines(1.0, tick=0.1)
    entries: dict[Any, Any] = {}
    for k in range(100):
        _insert(deadlines, entries, k, k / 100)
    assert _pop(deadlines, entries, 100.0) == list(range(100))
    assert _pop(deadlines, entries, 200.0) == []
    assert entries == {}


def test_trimmed_copies_only_a_mostly_empty_dict() -> None:
    entries: dict[Any, Any] = {k: k for k in range(100_000)}
    assert Deadlines.trimmed(entries) is entries
    for k in range(99_990):
        del entries[k]
    small = Deadlines.trimmed(entries)
    assert small is not entries and list(small) == list(entries)
    assert sys.getsizeof(small) < sys.getsizeof(entries) // 100


def test_a_million_keys_expire_quickly() -> None:
    deadlines = Deadlines(30.0)
    entries: dict[Any, Any] = {}
    for k in range(0, 1_000_000, 1000):
        deadlines.arrive(entries, k * 1e-5)
        entries.update((j, j) for j in range(k, k + 1000))
    start = time.process_time()
    count = sum(len(_pop(deadlines, entries, t / 10)) for t in range(0, 500))
    assert count == 1_000_000
    assert time.process_time() - start < 2.0


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match=r"^timeout must be > 0, got 0(\.0)?$"):
        Deadlines(0)
    with pytest.raises(ValueError, match=r"^tick must be > 0, got -1(\.0)?$"):
        Deadlines(1.0, tick=-1)
