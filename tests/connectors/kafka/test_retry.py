"""Backoff and RetryQueue: exponential delays, capped, refused after max_retries."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connectors.kafka.retry import Backoff, RetryQueue


def test_default_schedule() -> None:
    backoff = Backoff()
    assert [backoff.delay(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, None]


def test_delay_is_capped() -> None:
    backoff = Backoff(1.0, 5.0, max_retries=100)
    assert [backoff.delay(n) for n in (1, 2, 3, 4, 99)] == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_zero_retries_refuses_first_failure() -> None:
    assert Backoff(max_retries=0).delay(1) is None


@pytest.mark.parametrize(("args", "message"), [
    ((2.0, 1.0, 3), r"^retry_backoff_secs must be \(initial, maximum\) with 0 <= initial "
                    r"<= maximum, got \(2.0, 1.0\)$"),
    ((-1.0, 1.0, 3), r"^retry_backoff_secs must be"),
    ((0.5, 1.0, -1), r"^max_retries must be >= 0, got -1$"),
])
def test_bad_arguments(args: tuple[float, float, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Backoff(*args)


@given(st.floats(0, 10), st.floats(0, 100), st.integers(0, 50), st.integers(1, 200))
def test_delay_monotonic_and_bounded(initial: float, extra: float, retries: int,
                                     n: int) -> None:
    backoff = Backoff(initial, initial + extra, retries)
    delay = backoff.delay(n)
    if n > retries:
        assert delay is None
    else:
        assert delay is not None
        assert initial <= delay <= initial + extra
        if n > 1:
            previous = backoff.delay(n - 1)
            assert previous is not None and previous <= delay


def test_queue_pops_due_keys_in_order() -> None:
    queue: RetryQueue[str] = RetryQueue()
    queue.schedule("b", 2.0)
    queue.schedule("a", 1.0)
    queue.schedule("c", 3.0)
    assert queue.next_due() == 1.0
    assert queue.pop_ready(0.5) == []
    assert queue.pop_ready(2.0) == ["a", "b"]
    assert len(queue) == 1 and "c" in queue


def test_queue_discard_and_reschedule() -> None:
    queue: RetryQueue[str] = RetryQueue()
    queue.schedule("a", 1.0)
    queue.schedule("b", 1.0)
    queue.discard("a")
    queue.schedule("b", 5.0)
    assert queue.next_due() == 5.0
    assert queue.pop_ready(4.0) == []
    assert queue.pop_ready(5.0) == ["b"]
    assert queue.next_due() is None and len(queue) == 0


@given(st.lists(st.tuples(st.integers(0, 20), st.floats(0, 100)), max_size=50),
       st.floats(0, 100))
def test_queue_returns_each_due_key_once(items: list[tuple[int, float]], now: float) -> None:
    queue: RetryQueue[int] = RetryQueue()
    latest: dict[int, float] = {}
    for key, at in items:
        queue.schedule(key, at)
        latest[key] = at
    ready = queue.pop_ready(now)
    assert sorted(ready) == sorted(k for k, at in latest.items() if at <= now)
    assert [latest[k] for k in ready] == sorted(latest[k] for k in ready)
    assert queue.pop_ready(now) == []
