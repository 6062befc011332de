"""The XOR ledger, without a loop: completion iff every edge was acked once, never earlier."""

from __future__ import annotations

import random
import tracemalloc

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from engine.acker import ACK, FAIL, INIT, AckLedger


def test_tree_completes_when_xor_returns_to_zero() -> None:
    ledger = AckLedger(30, now=0)
    e1, e2, e3 = 11, 22, 33
    assert ledger.init(root=1, val=e1 ^ e2, spout_task=5, now=0) is None
    assert ledger.ack(1, e1 ^ e3, now=0) is None  # e1 processed, child e3 created
    assert ledger.ack(1, e2, now=0) is None
    assert ledger.ack(1, e3, now=0) == (ACK, 5)
    assert len(ledger) == 0 and ledger.acked == 1


def test_acks_before_init_are_kept_until_the_spout_task_is_known() -> None:
    ledger = AckLedger(30, now=0)
    assert ledger.ack(9, 77, now=0) is None
    assert ledger.init(9, 77, spout_task=3, now=0) == (ACK, 3)


def test_fail_before_init_fails_on_init() -> None:
    ledger = AckLedger(30, now=0)
    assert ledger.fail(4, now=0) is None
    assert ledger.init(4, 5, spout_task=2, now=0) == (FAIL, 2)


def test_empty_emit_completes_at_once() -> None:
    assert AckLedger(30, now=0).init(1, 0, spout_task=1, now=0) == (ACK, 1)


def test_timeout_fails_within_bound_and_reset_postpones() -> None:
    ledger = AckLedger(1.0, now=0.0)
    ledger.init(1, 123, 1, now=0.05)
    ledger.init(2, 456, 1, now=0.05)
    ledger.reset(2, now=0.9)
    assert ledger.expire(1.0) == []  # never before the timeout
    expired, t = [], 1.0
    while not expired:
        t += 0.01
        expired = ledger.expire(t)
    assert expired == [(FAIL, 1, 1)]
    assert t < 0.05 + 1.0 + 2 * ledger.tick
    later = []
    while not later:
        t += 0.01
        later = ledger.expire(t)
    assert later == [(FAIL, 1, 2)] and t >= 0.9 + 1.0
    assert ledger.timed_out == 2 and len(ledger) == 0


def test_memory_per_pending_tree_is_small() -> None:
    n = 200_000
    rng = random.Random(1)
    tracemalloc.start()
    ledger = AckLedger(30, now=0)
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(n):
        ledger.init(rng.getrandbits(64), rng.getrandbits(64) | 1, 1, now=0)
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(ledger) == n
    assert used / n < 150, f"{used / n:.1f} bytes per pending tree"


def test_decided_trees_hold_no_memory() -> None:
    """Throughput x timeout costs nothing: only what is pending is held."""
    rng = random.Random(2)
    tracemalloc.start()
    ledger = AckLedger(30, now=0.0)
    before = tracemalloc.get_traced_memory()[0]
    prev: dict[int, int] = {}
    for i in range(200):  # 200 batches of 500 trees over 40 s, each acked in the next
        now = i / 5
        # signed 64-bit ids and edge vals, as the engine draws them
        batch = [(INIT, rng.getrandbits(64) - (1 << 63), (rng.getrandbits(63) | 1) - (1 << 63), 1)
                 for _ in range(500)]
        ledger.apply(batch, prev, now)
        prev = {op[1]: op[2] for op in batch}
        ledger.expire(now)
    del batch
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(ledger) == 500 and ledger.acked == 99_500
    # 500 pending trees plus their acks in ``prev``; 99,500 decided trees held none.
    assert held < 1_000_000, f"{held} bytes held"


def test_late_messages_expire_silently_and_are_not_pending() -> None:
    ledger = AckLedger(1.0, now=0.0)
    assert ledger.init(7, 5, 1, now=0.0) is None
    assert ledger.ack(7, 5, now=0.1) == (ACK, 1)
    assert ledger.ack(7, 9, now=0.2) is None  # outlived its tree
    assert ledger.fail(8, now=0.2) is None  # a fail whose INIT never comes
    assert len(ledger) == 0 and 7 in ledger and 8 in ledger
    assert ledger.expire(1.5) == []
    assert 7 not in ledger and 8 not in ledger and ledger.timed_out == 0


def test_expiry_order_follows_first_sight_and_resets() -> None:
    ledger = AckLedger(1.0, now=0.0, tick=0.1)
    for root in (1, 2, 3):
        ledger.init(root, 1, 4, now=root / 10)
    ledger.reset(1, now=0.55)
    assert ledger.expire(1.35) == [(FAIL, 4, 2), (FAIL, 4, 3)]
    assert ledger.expire(1.5) == []
    assert ledger.expire(1.56) == [(FAIL, 4, 1)]


class LedgerMachine(RuleBasedStateMachine):
    """Random emits, anchors, acks and fails against a model of the trees."""

    def __init__(self) -> None:
        super().__init__()
        self.ledger = AckLedger(30, now=0)
        self.rng = random.Random(0)
        self.trees: dict[int, set[int]] = {}  # root -> edges not yet acked
        self.failed: set[int] = set()
        self.decided: dict[int, int] = {}

    def _record(self, out: tuple[int, int] | None, root: int) -> None:
        if out is not None:
            assert root not in self.decided, "a tree was decided twice"
            self.decided[root] = out[0]

    @rule(fanout=st.integers(0, 4))
    def emit(self, fanout: int) -> None:
        root = self.rng.getrandbits(64)
        edges = {self.rng.getrandbits(64) | 1 for _ in range(fanout)}
        val = 0
        for e in edges:
            val ^= e
        self.trees[root] = edges
        self._record(self.ledger.init(root, val, 1, now=0), root)
        if not edges:
            assert self.decided.get(root) == ACK

    @precondition(lambda self: any(self.trees[r] for r in self.trees if r not in self.decided))
    @rule(data=st.data(), children=st.integers(0, 3))
    def ack_one(self, data: st.DataObject, children: int) -> None:
        open_roots = sorted(r for r in self.trees if self.trees[r] and r not in self.decided)
        root = data.draw(st.sampled_from(open_roots))
        edge = data.draw(st.sampled_from(sorted(self.trees[root])))
        new = {self.rng.getrandbits(64) | 1 for _ in range(children)}
        val = edge
        for e in new:
            val ^= e
        self.trees[root].discard(edge)
        self.trees[root] |= new
        out = self.ledger.ack(root, val, now=0)
        self._record(out, root)
        if root in self.failed:
            return
        if self.trees[root]:
            assert out is None, "completed before every edge was acked"
        else:
            assert out == (ACK, 1)

    @precondition(lambda self: any(r not in self.decided for r in self.trees))
    @rule(data=st.data())
    def fail_one(self, data: st.DataObject) -> None:
        root = data.draw(st.sampled_from(sorted(r for r in self.trees if r not in self.decided)))
        self.failed.add(root)
        out = self.ledger.fail(root, now=0)
        self._record(out, root)
        assert out == (FAIL, 1)

    @invariant()
    def pending_matches_model(self) -> None:
        assert len(self.ledger) == sum(1 for r in self.trees if r not in self.decided)


TestLedgerMachine = LedgerMachine.TestCase
TestLedgerMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
