"""Transactional words: per-word counts and, per bucket of ten counts, how many words.

Storm's ``TransactionalWords``: ``count`` (a committer) updates each word's stored count
once per transaction and emits ``(attempt, word, count, prev_count)``; ``bucketize`` turns
a change of count into bucket moves; ``buckets`` applies the moves to the stored bucket
totals. ``bucketize`` and ``buckets`` are downstream of a committer, so they run in the
commit phase too, in transaction order. Both stores keep the transaction id next to each
value, so replays never count twice. ``prev_count`` is the count before the transaction,
stored with it, so a replay re-emits the same moves.

    python -m engine run topologies/transactional_words.py

The run stops by itself once every batch is committed (or after ``--duration SECS``) and
prints the committed counts and buckets, kept under ``transactional.state.dir``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from engine import BasicBolt, Topology
from engine.transactional import (
    BatchBolt,
    Committer,
    MemoryTransactionalSpout,
    SqliteMap,
    TransactionalMap,
    TransactionalTopologyBuilder,
)
from engine.transactional.state import TRANSACTIONAL_STATE_DIR, state_dir

__all__ = ["CONF", "DATA", "BucketCountUpdater", "Bucketize", "KeyedCountUpdater", "build",
           "read_buckets", "read_counts", "report"]

log = logging.getLogger(__name__)

BUCKET_SIZE = 10
PARTITION_TAKE_PER_BATCH = 3
DATA: dict[int, list[list[Any]]] = {
    0: [["cat"], ["dog"], ["chicken"], ["cat"], ["dog"], ["apple"]],
    1: [["cat"], ["dog"], ["apple"], ["banana"]],
    2: [["cat"], ["cat"], ["cat"], ["cat"], ["cat"], ["dog"], ["dog"], ["dog"], ["dog"]],
}
CONF: dict[str, Any] = {TRANSACTIONAL_STATE_DIR: ".stormloop-state"}


def _path(conf: dict[str, Any]) -> Path:
    return Path(state_dir(conf)) / "transactional-words.sqlite3"


def count_store(conf: dict[str, Any]) -> SqliteMap:
    """Per word: ``[[count, prev_count], txid]``."""
    return SqliteMap.shared(_path(conf), "word_counts")


def bucket_store(conf: dict[str, Any]) -> TransactionalMap:
    """Per bucket: ``[number of words, txid]``."""
    return TransactionalMap(SqliteMap.shared(_path(conf), "bucket_counts"))


def read_counts(conf: dict[str, Any]) -> dict[str, int]:
    """The committed count of each word."""
    return {k: v[0][0] for k, v in count_store(conf).items()}


def read_buckets(conf: dict[str, Any]) -> dict[int, int]:
    """The committed number of words in each bucket (count // 10)."""
    return {k: v[0] for k, v in bucket_store(conf).store.items() if v[0]}


def report(conf: dict[str, Any]) -> str:
    """The result the command line runner prints after the run: counts, then buckets."""
    counts = ", ".join(f"{word}={n}" for word, n in sorted(read_counts(conf).items()))
    buckets = ", ".join(f"{b * BUCKET_SIZE}-{b * BUCKET_SIZE + BUCKET_SIZE - 1}: {n}"
                        for b, n in sorted(read_buckets(conf).items()))
    return f"word counts: {counts}\nwords per count bucket: {buckets}"


class KeyedCountUpdater(BatchBolt, Committer):
    """Adds a batch's per-word counts to the stored counts, once per transaction."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any, attempt: Any) -> None:
        self.collector = collector
        self.attempt = attempt
        self.store = count_store(conf)
        self.counts: dict[str, int] = {}

    def execute(self, tup: Any) -> None:
        word = tup[1]
        self.counts[word] = self.counts.get(word, 0) + 1

    def finish_batch(self) -> None:
        txid = self.attempt.transaction_id
        updates, out = [], []
        for word, n in sorted(self.counts.items()):
            stored = self.store.get(word)
            if stored is not None and stored[1] == txid:
                count, prev = stored[0]  # applied already: emit the same moves again
            else:
                prev = None if stored is None else stored[0][0]
                count = (prev or 0) + n
                updates.append((word, [[count, prev], txid]))
            out.append([self.attempt, word, count, prev])
        self.store.put_many(updates)
        for values in out:
            self.collector.emit(values)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["id", "key", "count", "prev-count"])


class Bucketize(BasicBolt):
    """``(count, prev)`` → ``+1`` for the new bucket, ``-1`` for the old one if it changed."""

    def execute(self, tup: Any, collector: Any) -> None:
        attempt, count, prev = tup[0], tup[2], tup[3]
        bucket = count // BUCKET_SIZE
        if prev is None:
            collector.emit([attempt, bucket, 1])
        elif bucket != prev // BUCKET_SIZE:
            collector.emit([attempt, bucket, 1])
            collector.emit([attempt, prev // BUCKET_SIZE, -1])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["attempt", "bucket", "delta"])


class BucketCountUpdater(BatchBolt):
    """Applies a batch's bucket moves to the stored bucket totals, once per transaction."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any, attempt: Any) -> None:
        self.collector = collector
        self.attempt = attempt
        self.store = bucket_store(conf)
        self.accum: dict[int, int] = {}

    def execute(self, tup: Any) -> None:
        bucket, delta = tup[1], tup[2]
        self.accum[bucket] = self.accum.get(bucket, 0) + delta

    def finish_batch(self) -> None:
        changes = {b: (lambda n, d=d: n + d) for b, d in self.accum.items()}
        for bucket, value in self.store.update(self.attempt.transaction_id, changes).items():
            self.collector.emit([self.attempt, bucket, value.value])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["id", "bucket", "count"])


def build(conf: dict[str, Any] | None = None, data: dict[Any, list[list[Any]]] | None = None,
          max_batch_size: int = PARTITION_TAKE_PER_BATCH, *,
          counter: BatchBolt | None = None, buckets: BatchBolt | None = None,
          transactional_id: str = "top-n-words") -> Topology:
    """The words topology over ``data`` (default: Storm's example data)."""
    spout = MemoryTransactionalSpout(DATA if data is None else data, ["word"], max_batch_size)
    builder = TransactionalTopologyBuilder(transactional_id, "spout", spout, 2)
    builder.set_bolt("count", counter or KeyedCountUpdater(), 5).fields_grouping("spout", ["word"])
    builder.set_bolt("bucketize", Bucketize()).none_grouping("count")
    builder.set_bolt("buckets", buckets or BucketCountUpdater(), 5).fields_grouping(
        "bucketize", ["bucket"])
    return builder.build_topology()
