"""The contracts of transactional spouts: plain, partitioned and opaque partitioned.

A transactional spout is two halves (Storm's ``ITransactionalSpout``): a *coordinator*, run
by the coordinator spout's single task, which decides when a new batch may start and what
metadata describes it; and an *emitter*, run by every task of the emitter bolt, which emits
the tuples of a batch from that metadata. The engine persists the metadata, so a replay of
a transaction hands the emitter the same metadata again.

Every method here may be ``def`` or ``async def``. Metadata must be JSON (see ``state``).
The first value of every tuple a transactional spout emits is the ``TransactionAttempt``;
``declare_output_fields`` therefore declares that field first (``"tx"`` by convention).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from engine.context import TopologyContext
    from engine.topology import OutputFieldsDeclarer

__all__ = [
    "BatchCollector",
    "OpaquePartitionedTransactionalSpout",
    "PartitionedTransactionalSpout",
    "TransactionalSpout",
]


class BatchCollector(Protocol):
    """What emitters and batch bolts emit through; tuples are anchored to the batch."""

    def emit(self, values: list[Any], stream: str = "default") -> list[int]:
        """Emit ``values`` (first value: the ``TransactionAttempt``); returns target tasks."""
        ...

    def emit_direct(self, task_id: int, values: list[Any], stream: str = "default") -> None:
        """Emit ``values`` to task ``task_id`` on a direct stream."""
        ...

    def report_error(self, exc: BaseException) -> None:
        """Count and log ``exc`` for this component without failing the batch."""
        ...


class _TwoHalfSpout:
    """The shape every transactional source shares: declared fields, a coordinator half
    and an emitter half. Not a kind of its own: the engine tells the kinds apart by their
    public classes."""

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare the emitted fields, the ``TransactionAttempt`` field first."""
        raise NotImplementedError

    def get_coordinator(self, conf: dict[str, Any], context: TopologyContext) -> Any:
        """The coordinator half, created once in the coordinator spout's task."""
        raise NotImplementedError

    def get_emitter(self, conf: dict[str, Any], context: TopologyContext) -> Any:
        """The emitter half, created once in each emitter task."""
        raise NotImplementedError


class TransactionalSpout(_TwoHalfSpout):
    """A source that can emit the same batch again for the same transaction id.

    ``get_coordinator`` returns an object with ``is_ready() -> bool`` (may a new
    transaction start now?), ``initialize_transaction(txid, prev_metadata) -> metadata``
    (called once per transaction id, never again for a replay), optionally ``close()`` and
    optionally ``exhausted() -> bool`` (a plain ``def``: True once no transaction will ever
    be ready again, so that a finite topology stops by itself).
    ``get_emitter`` returns an object with ``emit_batch(attempt, metadata, collector)``
    (emit exactly the batch ``metadata`` describes), ``cleanup_before(txid)`` (every
    transaction before ``txid`` is committed and never replayed) and optionally ``close()``.
    """


class PartitionedTransactionalSpout(_TwoHalfSpout):
    """A source read as numbered partitions, each replayable by its own metadata.

    The engine keeps one metadata per (transaction, partition) and assigns partition ``i`` to
    emitter task ``i % num_emitter_tasks``. ``get_coordinator`` returns an object with
    ``num_partitions() -> int``, ``is_ready() -> bool``, optionally ``close()`` and
    optionally ``exhausted() -> bool`` (as for ``TransactionalSpout``).
    ``get_emitter`` returns an object with:

    - ``emit_partition_batch_new(attempt, collector, partition, last_meta) -> meta``: emit a
      new batch of ``partition`` following the one ``last_meta`` describes (``None`` for the
      first) and return the metadata describing what was emitted;
    - ``emit_partition_batch(attempt, collector, partition, meta)``: emit again exactly the
      batch ``meta`` describes;
    - optionally ``close()``.
    """


class OpaquePartitionedTransactionalSpout(_TwoHalfSpout):
    """A partitioned source that cannot promise the same batch on a replay.

    A replayed transaction's batch may differ from its first try (a broker lost records, more
    arrived), but every batch starts where the previous transaction's ended, so no tuple is
    skipped. Committers stay exact with the "value + previous value + txid" rule
    (``OpaqueValue``). ``get_coordinator`` returns an object with ``is_ready() -> bool`` and
    optionally ``close()``. ``get_emitter`` returns an object with ``num_partitions() -> int``,
    ``emit_partition_batch(attempt, collector, partition, last_meta) -> meta`` (emit the batch
    following the one ``last_meta`` describes, ``None`` for the first, and describe it) and
    optionally ``close()``.
    """
