"""The checkpoint spout through every transition, and its recovery after a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.errors import ConfigError
from engine.state.checkpoint import (
    CHECKPOINT_STREAM,
    COMMIT,
    COMMITTED,
    COMMITTING,
    INITSTATE,
    PREPARE,
    PREPARING,
    ROLLBACK,
    CheckpointSpout,
    CheckpointState,
)
from tests.state.helpers import SpoutRecorder, context


class Driven:
    """A checkpoint spout on a state dir, with a clock the test moves."""

    def __init__(self, state_dir: Path, interval_ms: int = 1000) -> None:
        conf = {"topology.state.dir": str(state_dir), "topology.message.timeout.secs": 30,
                "topology.acker.executors": 1,
                "topology.state.checkpoint.interval.ms": interval_ms}
        self.now = 0.0
        self.out = SpoutRecorder()
        self.spout = CheckpointSpout()
        self.spout.open(conf, context("$checkpointspout", 1, {"$checkpointspout": [1]}, [],
                                      conf), self.out)
        self.spout._time = lambda: self.now

    def step(self) -> tuple[int, str] | None:
        """Call ``next_tuple``; the ``(txid, action)`` it emitted, if any."""
        before = len(self.out.emits)
        self.spout.next_tuple()
        if len(self.out.emits) == before:
            return None
        values, msg_id, stream = self.out.emits[-1]
        assert stream == CHECKPOINT_STREAM and msg_id == values[0]
        return values[0], values[1]

    def saved(self) -> CheckpointState:
        return self.spout.current

    def close(self) -> None:
        self.spout.close()


@pytest.fixture
async def spout(tmp_path: Path) -> Any:
    driven = Driven(tmp_path)
    yield driven
    driven.close()


async def test_cold_start_initialises_then_checkpoints_on_the_interval(spout: Driven) -> None:
    assert spout.step() == (-1, INITSTATE)
    assert spout.step() is None  # one step in flight at a time
    spout.spout.ack(-1)
    assert spout.step() == (0, PREPARE)
    assert spout.saved() == CheckpointState(0, PREPARING)
    spout.spout.ack(0)
    assert spout.saved() == CheckpointState(0, COMMITTING)
    assert spout.step() == (0, COMMIT)
    spout.spout.ack(0)
    assert spout.saved() == CheckpointState(0, COMMITTED)
    assert spout.step() is None  # the interval has not passed
    spout.now += 1.0
    assert spout.step() == (1, PREPARE)


async def test_a_failed_prepare_rolls_back_then_reinitialises(spout: Driven) -> None:
    spout.step()
    spout.spout.ack(-1)
    assert spout.step() == (0, PREPARE)
    spout.spout.fail(0)
    assert spout.step() == (0, ROLLBACK)
    spout.spout.ack(0)
    assert spout.saved() == CheckpointState(-1, COMMITTED)
    assert spout.step() == (-1, INITSTATE)
    spout.spout.ack(-1)
    assert spout.step() is None  # the interval counts from the failed checkpoint
    spout.now += 1.0
    assert spout.step() == (0, PREPARE)


async def test_a_failed_commit_is_committed_again(spout: Driven) -> None:
    spout.step()
    spout.spout.ack(-1)
    spout.step()
    spout.spout.ack(0)
    assert spout.step() == (0, COMMIT)
    spout.spout.fail(0)
    assert spout.step() == (0, COMMIT)
    spout.spout.ack(0)
    assert spout.saved() == CheckpointState(0, COMMITTED)
    assert spout.step() == (0, INITSTATE)
    spout.spout.ack(0)
    spout.now += 1.0
    assert spout.step() == (1, PREPARE)


async def test_a_failed_recovery_step_is_retried(spout: Driven) -> None:
    assert spout.step() == (-1, INITSTATE)
    spout.spout.fail(-1)
    assert spout.step() == (-1, INITSTATE)


async def test_restart_in_preparing_rolls_back(tmp_path: Path) -> None:
    first = Driven(tmp_path)
    first.step()
    first.spout.ack(-1)
    first.step()
    first.spout.ack(0)
    first.step()
    first.spout.ack(0)
    first.now += 5
    assert first.step() == (1, PREPARE)
    first.close()  # killed with PREPARE 1 in flight
    second = Driven(tmp_path)
    assert second.saved() == CheckpointState(1, PREPARING)
    assert second.step() == (1, ROLLBACK)
    second.spout.ack(1)
    assert second.step() == (0, INITSTATE)
    second.spout.ack(0)
    assert second.step() == (1, PREPARE)
    second.close()


async def test_restart_in_committing_commits(tmp_path: Path) -> None:
    first = Driven(tmp_path)
    first.step()
    first.spout.ack(-1)
    first.step()
    first.spout.ack(0)
    assert first.step() == (0, COMMIT)
    first.close()  # killed with COMMIT 0 in flight
    second = Driven(tmp_path)
    assert second.saved() == CheckpointState(0, COMMITTING)
    assert second.step() == (0, COMMIT)
    second.spout.ack(0)
    assert second.saved() == CheckpointState(0, COMMITTED)
    assert second.step() == (0, INITSTATE)
    second.spout.ack(0)
    assert second.step() == (1, PREPARE)
    second.close()


async def test_the_interval_must_be_below_the_message_timeout(tmp_path: Path) -> None:
    conf = {"topology.state.dir": str(tmp_path), "topology.message.timeout.secs": 1,
            "topology.state.checkpoint.interval.ms": 1000, "topology.acker.executors": 1}
    with pytest.raises(ConfigError, match=r"'topology\.state\.checkpoint\.interval\.ms' = 1000 "
                                          r"must be below 'topology\.message\.timeout\.secs'"):
        CheckpointSpout().open(conf, context("$checkpointspout", 1, {}, [], conf),
                               SpoutRecorder())


async def test_stateful_bolts_need_ackers(tmp_path: Path) -> None:
    conf = {"topology.state.dir": str(tmp_path), "topology.message.timeout.secs": 30,
            "topology.acker.executors": 0}
    with pytest.raises(ConfigError, match=r"'topology\.acker\.executors' is 0; stateful "
                                          r"bolts need ackers"):
        CheckpointSpout().open(conf, context("$checkpointspout", 1, {}, [], conf),
                               SpoutRecorder())
