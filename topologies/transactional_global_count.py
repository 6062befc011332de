"""Transactional global count: exactly the number of input tuples, whatever fails.

Storm's ``TransactionalGlobalCount``. ``partial-count`` counts each batch in parallel;
``sum`` (a committer) adds a batch's partial counts to the global count in transaction
order, storing ``[count, txid]`` so that a replayed transaction is not counted twice.

    python -m engine run topologies/transactional_global_count.py

The run stops by itself once every batch is committed (or after ``--duration SECS``) and
prints the committed count. The count is kept under ``transactional.state.dir``, so a
second run over the same data commits nothing new and prints the same count.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from engine import Topology
from engine.transactional import (
    BatchBolt,
    Committer,
    MemoryTransactionalSpout,
    SqliteMap,
    TransactionalMap,
    TransactionalTopologyBuilder,
)
from engine.transactional.state import TRANSACTIONAL_STATE_DIR, state_dir

__all__ = ["CONF", "DATA", "BatchCount", "UpdateGlobalCount", "build", "read_count", "report"]

log = logging.getLogger(__name__)

PARTITION_TAKE_PER_BATCH = 3
DATA: dict[int, list[list[Any]]] = {
    0: [["cat"], ["dog"], ["chicken"], ["cat"], ["dog"], ["apple"]],
    1: [["cat"], ["dog"], ["apple"], ["banana"]],
    2: [["cat"], ["cat"], ["cat"], ["cat"], ["cat"], ["dog"], ["dog"], ["dog"], ["dog"]],
}
CONF: dict[str, Any] = {TRANSACTIONAL_STATE_DIR: ".stormloop-state"}
GLOBAL_COUNT_KEY = "GLOBAL-COUNT"


def count_store(conf: dict[str, Any]) -> TransactionalMap:
    """The committed global count: ``[count, txid]`` in ``global-count.sqlite3``."""
    return TransactionalMap(SqliteMap.shared(Path(state_dir(conf)) / "global-count.sqlite3",
                                             "global_count"))


def read_count(conf: dict[str, Any]) -> int:
    """The global count committed so far."""
    return int(count_store(conf).get(GLOBAL_COUNT_KEY).value)


def report(conf: dict[str, Any]) -> str:
    """The result line the command line runner prints after the run."""
    return f"global count: {read_count(conf)}"


class BatchCount(BatchBolt):
    """Counts the tuples of one batch that reach this task; emits ``(attempt, count)``."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any, attempt: Any) -> None:
        self.collector = collector
        self.attempt = attempt
        self.count = 0

    def execute(self, tup: Any) -> None:
        self.count += 1

    def finish_batch(self) -> None:
        self.collector.emit([self.attempt, self.count])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["id", "count"])


class UpdateGlobalCount(BatchBolt, Committer):
    """Adds a batch's partial counts to the stored global count, once per transaction."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any, attempt: Any) -> None:
        self.collector = collector
        self.attempt = attempt
        self.store = count_store(conf)
        self.sum = 0

    def execute(self, tup: Any) -> None:
        self.sum += tup[1]

    def finish_batch(self) -> None:
        txid, partial = self.attempt.transaction_id, self.sum
        new = self.store.update(txid, {GLOBAL_COUNT_KEY: lambda count: count + partial})
        count = new[GLOBAL_COUNT_KEY].value
        log.info("transaction %d: global count %d", txid, count)
        self.collector.emit([self.attempt, count])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["id", "sum"])


def build(conf: dict[str, Any] | None = None, data: dict[Any, list[list[Any]]] | None = None,
          max_batch_size: int = PARTITION_TAKE_PER_BATCH, *,
          batch_count: BatchBolt | None = None, committer: BatchBolt | None = None,
          transactional_id: str = "global-count") -> Topology:
    """The global-count topology over ``data`` (default: Storm's example data)."""
    spout = MemoryTransactionalSpout(DATA if data is None else data, ["word"], max_batch_size)
    builder = TransactionalTopologyBuilder(transactional_id, "spout", spout, 3)
    builder.set_bolt("partial-count", batch_count or BatchCount(), 5).shuffle_grouping("spout")
    builder.set_bolt("sum", committer or UpdateGlobalCount()).global_grouping("partial-count")
    return builder.build_topology()
