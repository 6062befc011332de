"""The failure-replay job: failed topic -> parse -> de-duplicate -> filter -> Kafka.

Operators' guide: docs/spark-replay.md.

One run reads the failed topic's offsets the consumer group ``group_id`` has not committed,
up to the fetch high watermark taken when the run starts. Each record is parsed as a
``FailedRecord``; records that are not are counted and sampled, never fatal. Records with
the same original ``(topic, partition, offset)`` collapse to the latest one (by
``failed_at``, then ``attempts``). The optional filters keep records whose reason contains
one of ``reasons`` and that failed at or after ``since_ms``. Records whose ``attempts``
exceed ``max_attempts`` are skipped and counted (a record that keeps failing is not
replayed forever), and so are records whose value was cut to fit the failed topic (the
whole original is still at its coordinates; ``value_sha256`` checks it). Each kept
record's original key and value go to ``target_topic`` (default: its own topic) with the
headers of ``REPLAY_HEADERS`` (its first failure's coordinates, attempts and time), at
most ``max_records_per_sec`` records per second in all. Only after every write was
confirmed does the group commit the ends of the ranges it read, so a re-run reads only
records that arrived since: each failed record is replayed once, barring a crash
between the write and the commit (then at least once).
Filtered-out records count as handled: a group that skipped them will not see them again.
A dry run reads and reports the same way but writes and commits nothing.
"""

from __future__ import annotations

import asyncio
import operator
import time
from dataclasses import dataclass, field
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from connectors.kafka.failed import REPLAY_HEADERS
from connectors.spark.datasource import FAILED_FORMAT, client_option, ranges_option
from connectors.spark.offsets import OffsetRange, commit_ranges, plan_ranges, probe_broker
from connectors.spark.replay_sink import SINK_COLUMNS, sink_format
from connectors.spark.session import build_session, prepare_session
from connectors.spark.summary import ReplaySummary
from connectors.spark.tally import Fate

__all__ = ["REPLAY_HEADERS", "ReplayOptions", "run_replay"]



@dataclass(frozen=True, slots=True)
class ReplayOptions:
    """Everything one run needs; the command line maps onto these fields one to one."""

    bootstrap_servers: str
    failed_topic: str
    target_topic: str | None = None
    group_id: str = "replay-failed"
    master: str | None = None
    dry_run: bool = False
    reasons: tuple[str, ...] = ()
    since_ms: int | None = None
    connect_timeout_s: float = 5.0
    max_offsets_per_task: int = 50_000
    max_attempts: int = 5
    max_records_per_sec: float | None = None
    client: dict[str, str] = field(default_factory=dict)
    """Connection and security options for every Kafka client of the job."""


def run_replay(options: ReplayOptions, spark: SparkSession | None = None) -> ReplaySummary:
    """Run the job once (see the module docstring) and return what it did.

    Raises ``BrokerUnreachable`` within ``connect_timeout_s`` and before any Spark work if
    no broker answers, ``TopicNotFound`` if the failed topic does not exist. Spark starts
    only when there is something to read; a session passed in is used and left running.
    """
    started = time.monotonic()
    bootstrap = options.bootstrap_servers
    summary = ReplaySummary(options.failed_topic, options.group_id, options.dry_run,
                            max_attempts=options.max_attempts)
    clock = _PhaseClock(summary.phases)
    client = options.client
    asyncio.run(probe_broker(bootstrap, options.connect_timeout_s, client))
    ranges = asyncio.run(plan_ranges(bootstrap, options.failed_topic, options.group_id,
                                     client=client))
    clock.lap("plan")
    if any(r.size for r in ranges):
        own_session = spark is None
        if spark is None:
            spark = build_session(options.master)
            summary.spark_startup_s = clock.lap()
        else:
            prepare_session(spark)
        try:
            _replay(spark, options, ranges, summary, clock)
        finally:
            if own_session:
                spark.stop()
                clock.lap("Spark shutdown")
        if not options.dry_run:
            asyncio.run(commit_ranges(bootstrap, options.group_id, ranges, client=client))
            clock.lap("commit")
    summary.elapsed_s = time.monotonic() - started
    return summary


def _replay(spark: SparkSession, options: ReplayOptions, ranges: list[OffsetRange],
            summary: ReplaySummary, clock: _PhaseClock) -> None:
    """One Spark job: read and parse, rank each record among those with its original
    coordinates, then the sink tallies every record and writes the ones to replay."""
    parsed = (spark.read.format(FAILED_FORMAT)
              .option("kafka.bootstrap.servers", options.bootstrap_servers)
              .option("topic", options.failed_topic)
              .option("ranges", ranges_option(ranges))
              .option("maxOffsetsPerTask", str(options.max_offsets_per_task))
              .option("parallelism", str(spark.sparkContext.defaultParallelism))
              .option("kafka.client", client_option(options.client))
              .load())
    rows = _fated(parsed, options).select(*SINK_COLUMNS)
    name, tally = sink_format(spark)
    writer = (rows.write.format(name).mode("append")
              .option("kafka.bootstrap.servers", options.bootstrap_servers)
              .option("kafka.client", client_option(options.client))
              .option("dryRun", str(options.dry_run).lower()))
    if options.max_records_per_sec is not None:
        # The limit is for the job: each writing task gets its share. The writing tasks are
        # the window's shuffle partitions (adaptive execution may merge some, never split).
        tasks = max(1, int(spark.conf.get("spark.sql.shuffle.partitions") or 1))
        writer = writer.option("maxRecordsPerSec", str(options.max_records_per_sec / tasks))
    spark.sparkContext.setJobDescription(f"replay {options.failed_topic}")
    try:
        writer.save()
    finally:
        spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
    tally.value.fill(summary)
    clock.lap("read, de-duplicate and write" if not options.dry_run
              else "read and de-duplicate")


class _PhaseClock:
    """Records the seconds since the previous lap under each lap's name."""

    def __init__(self, phases: dict[str, float]) -> None:
        self.phases = phases
        self.last = time.monotonic()

    def lap(self, name: str | None = None) -> float:
        """Seconds since the previous lap, recorded under ``name`` unless it is None."""
        now = time.monotonic()
        seconds, self.last = now - self.last, now
        if name is not None:
            self.phases[name] = seconds
        return seconds


def _fated(parsed: DataFrame, options: ReplayOptions) -> DataFrame:
    """Every parsed row with its ``_fate`` (see ``tally.Fate``), ``_target`` and ``_first``.

    Among valid rows with the same original coordinates the latest (by ``failed_at``, then
    ``attempts``, then position in the failed topic) is the one kept; the others are
    duplicates. Then, in this order: over ``max_attempts``, value truncated, filtered out.
    """
    latest_first = Window.partitionBy("offset", "partition", "topic").orderBy(
        F.desc("failed_at"), F.desc("attempts"),
        F.desc("failed_partition"), F.desc("failed_offset"))
    # Malformed rows have null coordinates: they share one window and their rank is unused.
    rank = F.row_number().over(latest_first)
    truncated = F.coalesce(F.col("value_truncated"), F.lit(False))
    fate = (F.when(F.col("error").isNotNull(), int(Fate.MALFORMED))
            .when(rank > 1, int(Fate.DUPLICATE))
            .when(F.col("attempts") > F.lit(options.max_attempts), int(Fate.OVER_ATTEMPTS))
            .when(truncated, int(Fate.TRUNCATED))
            .when(~_filter(options), int(Fate.FILTERED))
            .otherwise(int(Fate.REPLAY)))
    target = F.lit(options.target_topic) if options.target_topic else F.col("topic")
    first = F.coalesce(F.col("first_failed_at"), F.col("failed_at"))
    return parsed.select("*", fate.alias("_fate"), target.alias("_target"),
                         first.alias("_first"))


def _filter(options: ReplayOptions) -> Column:
    keep = F.lit(True)
    if options.reasons:
        keep = reduce(operator.or_, (F.col("reason").contains(r) for r in options.reasons))
    if options.since_ms is not None:
        keep = keep & (F.col("failed_at") >= F.lit(options.since_ms))
    return keep
