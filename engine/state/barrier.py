"""Storm's checkpoint barrier: act on ``(action, txid)`` once every upstream task sent it.

A bolt gets one checkpoint tuple per upstream task that feeds it a ``$checkpoint`` stream.
``arrive`` counts them per ``(action, txid)`` and says when the last one came; ``accept``
then tells whether the txid is current (not older than the last one acted on; after a
rollback of ``t`` the last one is ``t - 1``). Regular tuples are not held back meanwhile: as
in Storm there is no alignment, which is one source of the duplicates "at least once" allows.
"""

from __future__ import annotations

__all__ = ["CheckpointBarrier"]

ROLLBACK = "ROLLBACK"


class CheckpointBarrier:
    """Counts checkpoint tuples per ``(action, txid)`` against the upstream task count."""

    def __init__(self, upstream_tasks: int) -> None:
        self.upstream_tasks = upstream_tasks
        self.counts: dict[tuple[str, int], int] = {}
        self.last_txid: int | None = None

    def arrive(self, action: str, txid: int) -> bool:
        """One checkpoint tuple arrived; True when it completes ``(action, txid)``."""
        key = (action, txid)
        n = self.counts.get(key, 0) + 1
        if n >= self.upstream_tasks:
            self.counts.pop(key, None)
            return True
        self.counts[key] = n
        return False

    def accept(self, txid: int) -> bool:
        """Whether a completed ``txid`` is to be acted on (else it is stale: just ack it)."""
        return self.last_txid is None or txid >= self.last_txid

    def done(self, action: str, txid: int) -> None:
        """``(action, txid)`` was acted on."""
        self.last_txid = txid - 1 if action == ROLLBACK else txid
