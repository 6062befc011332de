"""What the replay job does with its fated rows, shared by the Spark sink and the
in-process run: tally every row and turn the ones to replay into records to produce.

No Spark here: ``pyarrow`` batches in, a ``tally.Tally`` and ``kafka_io.Rows`` out.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from connectors.kafka.failed import REPLAY_HEADERS
from connectors.spark.kafka_io import Rows
from connectors.spark.tally import Fate, Tally

__all__ = ["SINK_COLUMNS", "tally_batch"]

SINK_COLUMNS = ("_fate", "failed_partition", "failed_offset", "error", "topic", "partition",
                "offset", "key", "value", "attempts", "reason", "_first", "_target")
"""What the sink reads: fate, failed-topic position, error, the record, first failure
time (epoch ms) and destination topic."""

_HEADER_COLUMNS = ("topic", "partition", "offset", "attempts", "_first")


def _strings(batch: pa.RecordBatch, name: str) -> list[bytes]:
    """A column as UTF-8 text bytes (numbers in decimal)."""
    return pc.cast(pc.cast(batch.column(name), pa.string()), pa.binary()).to_pylist()


def tally_batch(batch: pa.RecordBatch, tally: Tally, dry_run: bool) -> Rows:
    """Tally every row of ``batch`` (``SINK_COLUMNS``) and return the records to produce
    (none on a dry run, whose replays are sampled instead)."""
    fates = batch.column("_fate")
    for row in pc.value_counts(fates).to_pylist():
        tally.count(row["values"], row["counts"])
    malformed = batch.filter(pc.equal(fates, int(Fate.MALFORMED)))
    if malformed.num_rows:
        tally.sample(malformed=list(zip(*(malformed.column(c).to_pylist() for c in (
            "failed_partition", "failed_offset", "error")), strict=True)))
    kept = batch.filter(pc.equal(fates, int(Fate.REPLAY)))
    if not kept.num_rows:
        return Rows([], [], [], [], [])
    routes = pa.Table.from_batches([kept]).group_by(["reason", "topic", "_target"]).aggregate(
        [([], "count_all")])
    for reason, topic, target, n in zip(*(routes.column(c).to_pylist() for c in (
            "reason", "topic", "_target", "count_all")), strict=True):
        tally.by_reason[reason] = tally.by_reason.get(reason, 0) + n
        tally.by_topic[(topic, target)] = tally.by_topic.get((topic, target), 0) + n
    if dry_run:
        tally.sample(planned=list(zip(*(kept.column(c).to_pylist() for c in (
            "topic", "partition", "offset", "_target", "attempts", "reason")), strict=True)))
        return Rows([], [], [], [], [])
    h0, h1, h2, h3, h4 = REPLAY_HEADERS
    headers = [[(h0, a), (h1, b), (h2, c), (h3, d), (h4, e)] for a, b, c, d, e in zip(
        *(_strings(kept, c) for c in _HEADER_COLUMNS), strict=True)]
    return Rows(kept.column("value").to_pylist(), kept.column("key").to_pylist(),
                kept.column("_target").to_pylist(), [None] * kept.num_rows, headers)
