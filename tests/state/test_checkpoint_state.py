"""The checkpoint state machine: every transition, and the barrier rule."""

from __future__ import annotations

import pytest

from engine.state.barrier import CheckpointBarrier
from engine.state.checkpoint import (
    COMMIT,
    COMMITTED,
    COMMITTING,
    INITSTATE,
    PREPARE,
    PREPARING,
    ROLLBACK,
    CheckpointState,
)


@pytest.mark.parametrize(("state", "recovering", "action", "after_ack"), [
    (CheckpointState(4, COMMITTED), False, PREPARE, CheckpointState(5, PREPARING)),
    (CheckpointState(5, PREPARING), False, PREPARE, CheckpointState(5, COMMITTING)),
    (CheckpointState(5, COMMITTING), False, COMMIT, CheckpointState(5, COMMITTED)),
    (CheckpointState(5, PREPARING), True, ROLLBACK, CheckpointState(4, COMMITTED)),
    (CheckpointState(5, COMMITTING), True, COMMIT, CheckpointState(5, COMMITTED)),
    (CheckpointState(5, COMMITTED), True, INITSTATE, CheckpointState(5, COMMITTED)),
])
def test_transitions(state: CheckpointState, recovering: bool, action: str,
                     after_ack: CheckpointState) -> None:
    assert state.next_action(recovering) == action
    assert state.next_state(recovering) == after_ack


def test_the_barrier_waits_for_every_upstream_task() -> None:
    barrier = CheckpointBarrier(3)
    assert not barrier.arrive(PREPARE, 1)
    assert not barrier.arrive(PREPARE, 1)
    assert not barrier.arrive(COMMIT, 0)  # another request is counted apart
    assert barrier.arrive(PREPARE, 1)
    assert barrier.counts == {(COMMIT, 0): 1}
    assert not barrier.arrive(PREPARE, 1)  # a new round starts from zero


def test_the_barrier_ignores_older_transactions() -> None:
    barrier = CheckpointBarrier(1)
    assert barrier.accept(-1)
    barrier.done(INITSTATE, -1)
    barrier.done(PREPARE, 3)
    assert barrier.accept(3) and barrier.accept(4)
    assert not barrier.accept(2)
    barrier.done(ROLLBACK, 3)  # then INITSTATE comes for 2, the last committed txid
    assert barrier.accept(2) and not barrier.accept(1)
