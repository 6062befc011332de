"""``BatchBolt`` and ``Committer``: the user's side of a transactional topology.

A batch bolt sees one batch at a time per object: the engine makes a fresh copy of the
bolt for each batch on each task, calls ``prepare`` with that batch's
``TransactionAttempt``, ``execute`` for each of the batch's tuples that reach the task,
and ``finish_batch`` once the task has received every tuple of the batch from every
upstream task. A committer's ``finish_batch`` runs in the commit phase instead: strictly in
transaction-id order, one transaction at a time, after every earlier transaction
committed. Raising ``FailedException`` from any of these methods fails the batch, which is
then replayed with the same transaction id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.context import TopologyContext
    from engine.topology import OutputFieldsDeclarer
    from engine.transactional.attempt import TransactionAttempt
    from engine.transactional.spout import BatchCollector
    from engine.tuples import Tuple

__all__ = ["BatchBolt", "Committer"]


class BatchBolt:
    """Processes one batch per instance; every method may be ``def`` or ``async def``.

    ``collector.emit(values, stream="default")`` emits a tuple of the batch; its first value
    must be the ``TransactionAttempt``. Emits are anchored to the batch for you.
    """

    def prepare(self, conf: dict[str, Any], context: TopologyContext,
                collector: BatchCollector, attempt: TransactionAttempt) -> Any:
        """Called on this batch's fresh copy before its first ``execute``."""

    def execute(self, tup: Tuple) -> Any:
        """One tuple of the batch; accumulate in attributes of ``self``."""

    def finish_batch(self) -> Any:
        """The task received the whole batch (for a committer: and it is its turn)."""

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare the emitted fields, the ``TransactionAttempt`` field first."""

    def component_configuration(self) -> dict[str, Any] | None:
        """Configuration merged over the topology's for this component's tasks."""
        return None


class Committer:
    """Marker: a ``BatchBolt`` that also derives from ``Committer`` finishes in commit order.

    ``TransactionalTopologyBuilder.set_committer_bolt`` has the same effect without it.
    """
