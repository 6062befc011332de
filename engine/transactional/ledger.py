"""The coordinator's status machine, without I/O: which batches are live and what is next.

Each live transaction moves PROCESSING → (batch tree acked) PROCESSED → (commit emitted)
COMMITTING → (commit tree acked) done. Only the oldest uncommitted transaction may commit,
so commits happen strictly in transaction-id order, one at a time. At most ``max_active``
transactions are live at once: the ones in the window ``next_txid .. next_txid +
max_active - 1``. A failure drops the failed transaction and every later live one; they
are started again, in order, with new attempt ids (Storm's ``TransactionalSpoutCoordinator``:
``tailMap(tx).clear()``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from engine.transactional.attempt import TransactionAttempt

__all__ = ["AckOutcome", "Status", "TransactionLedger"]


class Status(enum.Enum):
    """Where a live transaction is in its life."""

    PROCESSING = "processing"
    PROCESSED = "processed"
    COMMITTING = "committing"


class AckOutcome(enum.Enum):
    """What an ack meant to the ledger."""

    PROCESSED = "processed"
    """The batch tree of the live attempt completed; it may commit once it is the oldest."""
    COMMITTED = "committed"
    """The commit tree of the live attempt completed; ``next_txid`` moved past it."""
    STALE = "stale"
    """The ack was for an attempt that is no longer live; nothing changed."""


@dataclass(slots=True)
class _Live:
    attempt: TransactionAttempt
    status: Status


class TransactionLedger:
    """Live transactions of one coordinator; every method is synchronous and pure."""

    def __init__(self, next_txid: int, max_active: int,
                 new_attempt_id: Callable[[], int]) -> None:
        if next_txid < 1:
            raise ValueError(f"next_txid must be >= 1, got {next_txid}")
        if max_active < 1:
            raise ValueError(f"max_active must be >= 1, got {max_active}")
        self.next_txid = next_txid
        self.max_active = max_active
        self._new_attempt_id = new_attempt_id
        self._live: dict[int, _Live] = {}

    def status(self, txid: int) -> Status | None:
        """The status of ``txid`` if it is live, else None."""
        live = self._live.get(txid)
        return None if live is None else live.status

    def live(self) -> dict[int, Status]:
        """``{txid: status}`` of the live transactions, in txid order."""
        return {txid: self._live[txid].status for txid in sorted(self._live)}

    def startable(self) -> list[int]:
        """Txids in the window that are not live, in order: start them in this order."""
        if len(self._live) >= self.max_active:
            return []
        window = range(self.next_txid, self.next_txid + self.max_active)
        return [txid for txid in window if txid not in self._live]

    def start(self, txid: int) -> TransactionAttempt:
        """Begin processing ``txid`` with a new attempt; it must be startable."""
        assert txid not in self._live, f"transaction {txid} is already live"
        assert self.next_txid <= txid < self.next_txid + self.max_active, txid
        attempt = TransactionAttempt(txid, self._new_attempt_id())
        self._live[txid] = _Live(attempt, Status.PROCESSING)
        return attempt

    def commit_due(self) -> TransactionAttempt | None:
        """If the oldest uncommitted transaction is PROCESSED, mark it COMMITTING and return
        its attempt (emit the commit tuple for it); otherwise None."""
        live = self._live.get(self.next_txid)
        if live is None or live.status is not Status.PROCESSED:
            return None
        live.status = Status.COMMITTING
        return live.attempt

    def ack(self, attempt: TransactionAttempt) -> AckOutcome:
        """A tree of ``attempt`` completed: its batch tree, or its commit tree."""
        live = self._live.get(attempt.transaction_id)
        if live is None or live.attempt != attempt:
            return AckOutcome.STALE
        if live.status is Status.PROCESSING:
            live.status = Status.PROCESSED
            return AckOutcome.PROCESSED
        if live.status is Status.COMMITTING:
            del self._live[attempt.transaction_id]
            self.next_txid = attempt.transaction_id + 1
            return AckOutcome.COMMITTED
        return AckOutcome.STALE

    def fail(self, attempt: TransactionAttempt) -> list[int]:
        """A tree of ``attempt`` failed: drop it and every later live transaction.

        Returns the dropped txids (empty if ``attempt`` was not live). They become
        startable again and must be started in txid order.
        """
        txid = attempt.transaction_id
        live = self._live.get(txid)
        if live is None or live.attempt != attempt:
            return []
        dropped = sorted(t for t in self._live if t >= txid)
        for t in dropped:
            del self._live[t]
        return dropped
