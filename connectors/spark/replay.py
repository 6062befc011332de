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

import contextlib
import functools
import operator
import signal
import sys
import threading
from collections.abc import Iterator
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from connectors.kafka.failed import REPLAY_HEADERS
from connectors.spark.datasource import FAILED_FORMAT, client_option, ranges_option
from connectors.spark.java import JavaNotFound, find_java
from connectors.spark.offsets import OffsetRange
from connectors.spark.options import ReplayOptions
from connectors.spark.progress import Progress
from connectors.spark.replay_sink import SINK_COLUMNS, sink_format
from connectors.spark.session import build_session, prepare_session
from connectors.spark.summary import PhaseClock, ReplaySummary
from connectors.spark.tally import Fate

__all__ = ["REPLAY_HEADERS", "ReplayOptions", "replay_with_spark", "stage_status"]



def replay_with_spark(options: ReplayOptions, ranges: list[OffsetRange],
                      summary: ReplaySummary, clock: PhaseClock, spark: SparkSession | None,
                      progress: Progress) -> None:
    """Read, de-duplicate and (unless a dry run) write ``ranges`` in one Spark job; fill
    ``summary``. A session passed in is used and left running; otherwise one is started
    (``JavaNotFound`` without a Java) and stopped. Commits nothing (the caller does)."""
    own_session = spark is None
    progress.read = None  # counted in the tasks, not here
    if spark is None:
        progress.stage = "starting Spark"
        if find_java() is None:
            raise JavaNotFound
        spark = build_session(options.master)
        summary.spark_startup_s = clock.lap()
    else:
        prepare_session(spark)
    progress.status = functools.partial(stage_status, spark)
    try:
        with _interruptible(spark):
            progress.stage = "reading, de-duplicating and writing in Spark"
            _replay(spark, options, ranges, summary, clock)
    finally:
        progress.status = None
        if own_session:
            if sys.exc_info()[1] is None:  # else the stage that failed stays on show
                progress.stage = "stopping Spark"
            _stop(spark)
            clock.lap("Spark shutdown")


def stage_status(spark: SparkSession) -> str | None:
    """The Spark stages running now and their tasks, for the progress line."""
    tracker = spark.sparkContext.statusTracker()
    stages = [tracker.getStageInfo(i) for i in tracker.getActiveStageIds()]
    return "; ".join(f"Spark stage {s.stageId}: {s.numCompletedTasks} of {s.numTasks} tasks "
                     f"done, {s.numActiveTasks} running" for s in stages if s) or None


@contextlib.contextmanager
def _interruptible(spark: SparkSession) -> Iterator[None]:
    """Ctrl-C cancels the Spark jobs and raises ``KeyboardInterrupt``, even when the JVM
    (which got the signal too) is already gone; PySpark's own handler raises a py4j error
    then."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_interrupt(signum: int, frame: object) -> None:
        with contextlib.suppress(Exception):
            spark.sparkContext.setLogLevel("OFF")  # the cancelled tasks' errors are no news
            spark.sparkContext.cancelAllJobs()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _stop(spark: SparkSession) -> None:
    """Stop the session; after an interrupt the JVM may be gone, which is no news then."""
    interrupted = isinstance(sys.exc_info()[1], KeyboardInterrupt)
    try:
        spark.stop()
    except Exception:
        if not interrupted:
            raise


def _replay(spark: SparkSession, options: ReplayOptions, ranges: list[OffsetRange],
            summary: ReplaySummary, clock: PhaseClock) -> None:
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
