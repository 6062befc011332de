"""The replay job's sink: tallies every failed-topic record and produces the ones to replay.

Each row carries ``_fate`` (a ``tally.Fate``) and the columns of ``SINK_COLUMNS``. A
writing task tallies all its rows (counts per fate, replays per reason and per route,
samples) and produces each ``REPLAY`` row's original key and value to ``_target`` with the
``REPLAY_HEADERS``, returning only once the broker confirmed every one; a dry run
produces nothing and starts no Kafka client. A task's tally reaches the driver through a
Spark accumulator once the task succeeded: the write is the action's last stage, so Spark
applies each task's update exactly once even when a task is retried.

``sink_format`` registers a sink bound to one accumulator under a name of its own, so runs
on one session do not share tallies.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import Accumulator, AccumulatorParam
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from connectors.kafka.failed import REPLAY_HEADERS
from connectors.spark.datasource import client_settings, required_option
from connectors.spark.kafka_io import Rows, write_rows
from connectors.spark.tally import Fate, Tally

__all__ = ["SINK_COLUMNS", "sink_format"]

SINK_COLUMNS = ("_fate", "failed_partition", "failed_offset", "error", "topic", "partition",
                "offset", "key", "value", "attempts", "reason", "_first", "_target")
"""What the sink reads: fate, failed-topic position, error, the record, first failure
time (epoch ms) and destination topic."""

_HEADER_COLUMNS = ("topic", "partition", "offset", "attempts", "_first")


class _TallyParam(AccumulatorParam):
    def zero(self, value: Tally) -> Tally:
        return Tally()

    def addInPlace(self, value1: Tally, value2: Tally) -> Tally:
        return value1.add(value2)


def sink_format(spark: SparkSession) -> tuple[str, Accumulator]:
    """Register a replay sink on ``spark``; returns its format name and the accumulator
    that collects the tallies of its writes."""
    tally = spark.sparkContext.accumulator(Tally(), _TallyParam())
    name = f"stormloop_replay_{uuid.uuid4().hex}"
    # A class made here is pickled by value, accumulator included, to the workers.
    source = type("ReplaySinkSource", (_ReplaySinkSource,), {"_format": name, "_tally": tally})
    spark.dataSource.register(source)
    return name, tally


def _strings(batch: pa.RecordBatch, name: str) -> list[bytes]:
    """A column as UTF-8 text bytes (numbers in decimal)."""
    return pc.cast(pc.cast(batch.column(name), pa.string()), pa.binary()).to_pylist()


def _tally_batch(batch: pa.RecordBatch, tally: Tally, dry_run: bool) -> Rows:
    """Tally ``batch`` and return the records it replays."""
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


class _ReplayWriter(DataSourceArrowWriter):
    def __init__(self, options: Mapping[str, str], tally: Accumulator) -> None:
        self.dry_run = options.get("dryRun", "false") == "true"
        self.bootstrap = "" if self.dry_run else required_option(options, "kafka.bootstrap.servers")
        self.client = client_settings(options)
        rate = options.get("maxRecordsPerSec")
        self.rate = float(rate) if rate else None
        self.tally = tally

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        """Tally every row and produce the replayed ones; returns once the broker confirmed
        every record (at once on a dry run)."""
        tally = Tally()
        rows = (_tally_batch(batch, tally, self.dry_run) for batch in iterator)
        if self.dry_run:
            for _ in rows:
                pass
        else:
            write_rows(self.bootstrap, rows, producer_options=self.client,
                       max_records_per_sec=self.rate)
        self.tally.add(tally)
        return WriterCommitMessage()


class _ReplaySinkSource(DataSource):
    """Write-only source; ``sink_format`` sets the format name and the accumulator."""

    _format = ""
    _tally: Accumulator

    @classmethod
    def name(cls) -> str:
        """The format name Spark looks this sink up by."""
        return cls._format

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        """A writer tallying rows into this sink's accumulator (options: the Kafka
        sink's, plus ``dryRun``)."""
        return _ReplayWriter(self.options, self._tally)
