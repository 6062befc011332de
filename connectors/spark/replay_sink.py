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
from pyspark import Accumulator, AccumulatorParam
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from connectors.spark.datasource import client_settings, required_option
from connectors.spark.kafka_io import write_rows
from connectors.spark.sink_rows import SINK_COLUMNS, tally_batch
from connectors.spark.tally import Tally

__all__ = ["SINK_COLUMNS", "sink_format"]

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
        rows = (tally_batch(batch, tally, self.dry_run) for batch in iterator)
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
