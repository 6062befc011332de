"""``MemoryTransactionalSpout``: a partitioned transactional spout over in-memory lists.

The embedded default and the test double of the Kafka spouts (Storm's
``MemoryTransactionalSpout``). ``data`` maps each partition to a list of value lists;
partition ``i`` is the ``i``-th key of ``data``. A batch takes up to ``max_batch_size``
values from each partition, following the previous batch; the metadata is
``{"index": start, "amount": n}``, so a replay emits exactly the same values.

Lists may grow while the topology runs (append to them); the coordinator starts a new
transaction only while some partition has values not yet emitted, so an idle topology does
not spin through empty batches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from engine.transactional.spout import BatchCollector, PartitionedTransactionalSpout

if TYPE_CHECKING:
    from engine.context import TopologyContext
    from engine.topology import OutputFieldsDeclarer
    from engine.transactional.attempt import TransactionAttempt

__all__ = ["MemoryTransactionalSpout"]


class MemoryTransactionalSpout(PartitionedTransactionalSpout):
    """Batches of up to ``max_batch_size`` values per partition, replayed exactly.

    ``fields`` names the values; the declared fields are ``[tx_field, *fields]``.
    """

    def __init__(self, data: Mapping[Any, Sequence[Sequence[Any]]], fields: Iterable[str],
                 max_batch_size: int, tx_field: str = "tx") -> None:
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        self.data = data
        self.fields = list(fields)
        self.max_batch_size = max_batch_size
        self.tx_field = tx_field
        # Shared by every copy in this process: partition -> index of the next new value.
        self.progress: dict[int, int] = {}

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare([self.tx_field, *self.fields])

    def partitions(self) -> list[Sequence[Sequence[Any]]]:
        """The partitions' value lists, in partition order."""
        return list(self.data.values())

    def get_coordinator(self, conf: dict[str, Any], context: TopologyContext) -> Any:
        return _MemoryCoordinator(self)

    def get_emitter(self, conf: dict[str, Any], context: TopologyContext) -> Any:
        return _MemoryEmitter(self)


class _MemoryCoordinator:
    def __init__(self, spout: MemoryTransactionalSpout) -> None:
        self._spout = spout

    def num_partitions(self) -> int:
        return len(self._spout.data)

    def is_ready(self) -> bool:
        """True unless every partition is known to be emitted to its end."""
        progress = self._spout.progress
        for p, values in enumerate(self._spout.partitions()):
            if progress.get(p, -1) < len(values):
                return True
        return False

    def exhausted(self) -> bool:
        """Every partition was emitted to its end: no new transaction will be ready."""
        return not self.is_ready()


class _MemoryEmitter:
    def __init__(self, spout: MemoryTransactionalSpout) -> None:
        self._spout = spout

    def emit_partition_batch_new(self, attempt: TransactionAttempt, collector: BatchCollector,
                                 partition: int, last_meta: Any) -> dict[str, int]:
        values = self._spout.partitions()[partition]
        start = 0 if last_meta is None else last_meta["index"] + last_meta["amount"]
        amount = max(0, min(self._spout.max_batch_size, len(values) - start))
        meta = {"index": start, "amount": amount}
        self.emit_partition_batch(attempt, collector, partition, meta)
        self._spout.progress[partition] = start + amount
        return meta

    def emit_partition_batch(self, attempt: TransactionAttempt, collector: BatchCollector,
                             partition: int, meta: Any) -> None:
        values = self._spout.partitions()[partition]
        emit = collector.emit
        start = meta["index"]
        for row in values[start:start + meta["amount"]]:
            emit([attempt, *row])
