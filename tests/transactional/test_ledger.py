"""The coordinator's status machine, without a loop: windows, ordered commits, replays."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from engine.transactional.attempt import AttemptIds, TransactionAttempt
from engine.transactional.ledger import AckOutcome, Status, TransactionLedger


def ledger(next_txid: int = 1, max_active: int = 3) -> TransactionLedger:
    return TransactionLedger(next_txid, max_active, itertools.count(100).__next__)


def test_window_starts_in_order_and_is_bounded() -> None:
    led = ledger(max_active=3)
    assert led.startable() == [1, 2, 3]
    attempts = [led.start(t) for t in led.startable()]
    assert [a.transaction_id for a in attempts] == [1, 2, 3]
    assert led.startable() == []
    assert led.live() == {1: Status.PROCESSING, 2: Status.PROCESSING, 3: Status.PROCESSING}


def test_commit_only_for_the_oldest_processed() -> None:
    led = ledger(max_active=2)
    a1, a2 = led.start(1), led.start(2)
    assert led.ack(a2) is AckOutcome.PROCESSED
    assert led.commit_due() is None  # 1 is not processed yet
    assert led.ack(a1) is AckOutcome.PROCESSED
    assert led.commit_due() == a1
    assert led.commit_due() is None  # already committing
    assert led.status(1) is Status.COMMITTING
    assert led.ack(a1) is AckOutcome.COMMITTED
    assert led.next_txid == 2
    assert led.commit_due() == a2
    assert led.startable() == [3]


def test_fail_drops_it_and_every_later_one() -> None:
    led = ledger(max_active=4)
    a = [led.start(t) for t in led.startable()]
    led.ack(a[0])
    assert led.fail(a[1]) == [2, 3, 4]
    assert led.live() == {1: Status.PROCESSED}
    assert led.startable() == [2, 3, 4]
    again = led.start(2)
    assert again.transaction_id == 2 and again.attempt_id != a[1].attempt_id


def test_stale_attempts_change_nothing() -> None:
    led = ledger()
    old = led.start(1)
    led.fail(old)
    new = led.start(1)
    assert led.ack(old) is AckOutcome.STALE
    assert led.fail(old) == []
    assert led.status(1) is Status.PROCESSING
    assert led.ack(new) is AckOutcome.PROCESSED


def test_commit_failure_replays_from_processing() -> None:
    led = ledger(max_active=1)
    a = led.start(1)
    led.ack(a)
    assert led.commit_due() == a
    assert led.fail(a) == [1]
    assert led.next_txid == 1 and led.startable() == [1]


def test_resumes_at_a_persisted_txid() -> None:
    led = ledger(next_txid=42, max_active=2)
    assert led.startable() == [42, 43]


@pytest.mark.parametrize("bad", [(0, 1), (1, 0)])
def test_rejects_bad_arguments(bad: tuple[int, int]) -> None:
    with pytest.raises(ValueError):
        TransactionLedger(bad[0], bad[1], lambda: 1)


def test_attempt_ids_increase() -> None:
    ids = AttemptIds()
    seen = [ids.next() for _ in range(1000)]
    assert seen == sorted(set(seen))
    assert TransactionAttempt(3, 7) == TransactionAttempt(3, 7)
    assert TransactionAttempt(3, 7) != TransactionAttempt(3, 8)


class LedgerMachine(RuleBasedStateMachine):
    """Random acks and fails: commits stay in order, once each; the window stays bounded."""

    def __init__(self) -> None:
        super().__init__()
        self.led = ledger(max_active=3)
        self.committed: list[int] = []
        self.trees: list[TransactionAttempt] = []  # attempts with a pending tree

    @rule()
    def sync(self) -> None:
        due = self.led.commit_due()
        if due is not None:
            self.trees.append(due)
        for txid in self.led.startable():
            self.trees.append(self.led.start(txid))

    @precondition(lambda self: self.trees)
    @rule(i=st.integers(0, 100))
    def ack(self, i: int) -> None:
        attempt = self.trees.pop(i % len(self.trees))
        if self.led.ack(attempt) is AckOutcome.COMMITTED:
            self.committed.append(attempt.transaction_id)

    @precondition(lambda self: self.trees)
    @rule(i=st.integers(0, 100))
    def fail(self, i: int) -> None:
        self.led.fail(self.trees.pop(i % len(self.trees)))

    @invariant()
    def commits_in_order_once(self) -> None:
        assert self.committed == list(range(1, len(self.committed) + 1))
        assert self.led.next_txid == len(self.committed) + 1

    @invariant()
    def bounded_window(self) -> None:
        live = self.led.live()
        assert len(live) <= 3
        assert all(self.led.next_txid <= t < self.led.next_txid + 3 for t in live)
        committing = [t for t, s in live.items() if s is Status.COMMITTING]
        assert committing in ([], [self.led.next_txid])


TestLedgerMachine = LedgerMachine.TestCase
TestLedgerMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
