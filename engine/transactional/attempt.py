"""``TransactionAttempt``: which batch a tuple belongs to, and which try of it.

A transaction id names one batch for the life of a transactional topology (1, 2, 3, ...);
it is never reused and never changes when the batch is replayed. The attempt id changes on
every emission of the batch, so tuples left over from a failed try can be told apart from
the live ones (Storm's ``TransactionAttempt``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

__all__ = ["AttemptIds", "TransactionAttempt"]


@dataclass(frozen=True, slots=True, order=True)
class TransactionAttempt:
    """One try of one batch: ``transaction_id`` (1, 2, ...) and a fresh ``attempt_id``."""

    transaction_id: int
    """The batch's id: one per batch, unchanged across replays."""
    attempt_id: int
    """Different on every attempt; later attempts of a batch have larger ids."""

    def __repr__(self) -> str:
        return f"TransactionAttempt({self.transaction_id}:{self.attempt_id})"


class AttemptIds:
    """Strictly increasing attempt ids, seeded from the wall clock in nanoseconds.

    Seeding from the clock keeps ids increasing across a restart of the process too, so a
    coordinated bolt can drop tuples of an older attempt of the same transaction.
    """

    def __init__(self) -> None:
        self._last = 0

    def next(self) -> int:
        """An id larger than every id this instance returned before."""
        self._last = max(self._last + 1, time.time_ns())
        return self._last
