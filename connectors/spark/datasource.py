"""Kafka for Spark on the Python Data Source API: no JVM Kafka connector involved.

Register once per session (``session.prepare_session`` does, for both sources), then::

    spark.read.format("stormloop_kafka")
        .option("kafka.bootstrap.servers", "host:9092").option("topic", "t").load()

    df.write.format("stormloop_kafka").mode("append")
        .option("kafka.bootstrap.servers", "host:9092").option("topic", "t").save()

Read options: ``topic`` (required); ``ranges``, a JSON list of ``[partition, start, end]``
(default: every partition from ``group.id``'s committed offsets, or the log start, to the
fetch high watermark taken at planning time); ``maxOffsetsPerTask`` (default 50000), the
largest offset range one Spark task reads; ``parallelism`` (default 1), how many tasks run
at once: the ranges are cut into near-equal pieces, a multiple of it, largest first (see
``offsets.plan_tasks``). Each input partition is one Kafka partition and offset range,
read by an aiokafka consumer inside the Spark task. The result has the
columns of ``RECORD_DDL``.

``FailedRecordsDataSource`` (format ``stormloop_failed_records``) reads a failed topic the
same way and parses each record in the same task (``parse.py``), straight from the fetched
records: the result has the columns
of ``PARSED_DDL``, one row per record, malformed ones included with their ``error``.

Write options: ``topic``, the default for rows without a ``topic`` column or value;
``maxRecordsPerSec``, the most records one Spark task writes per second. Rows need
``value`` (binary) and may carry ``key``, ``topic``, ``partition``, ``headers``. Each Spark
task produces its rows and returns only once the broker confirmed every one.

Both directions take ``kafka.client``: a JSON object of connection and security options
(``connectors.kafka.client_options``, e.g. ``security_protocol``, ``sasl_mechanism``,
``ssl_cafile``), built into client settings inside each task.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import orjson
import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from connectors.spark.kafka_io import (
    RECORD_DDL,
    fetch_range,
    gc_paused,
    read_range,
    write_batches,
)
from connectors.spark.offsets import OffsetRange, plan_ranges, plan_tasks
from connectors.spark.parse import PARSED_DDL, parse_fetched

__all__ = ["FAILED_FORMAT", "FORMAT", "FailedRecordsDataSource", "KafkaDataSource",
           "client_option", "client_settings", "ranges_option", "required_option"]

FORMAT = "stormloop_kafka"
"""The name to pass to ``spark.read.format`` / ``df.write.format``."""

FAILED_FORMAT = "stormloop_failed_records"
"""The name of the failed-topic reader (read only)."""

_DEFAULT_MAX_OFFSETS_PER_TASK = 50_000


def ranges_option(ranges: list[OffsetRange]) -> str:
    """The ``ranges`` read option that reads exactly ``ranges`` (all of one topic)."""
    return orjson.dumps([[r.partition, r.start, r.end] for r in ranges]).decode()


def client_option(client: Mapping[str, str]) -> str:
    """The ``kafka.client`` option carrying ``client`` (connection and security options)."""
    return orjson.dumps(dict(client)).decode()


def client_settings(options: Mapping[str, str]) -> dict[str, str]:
    """The connection and security options carried by a ``kafka.client`` option."""
    text = options.get("kafka.client")
    return orjson.loads(text) if text else {}


def required_option(options: Mapping[str, str], name: str) -> str:
    """The value of option ``name``; raises ``ValueError`` naming it when absent or empty."""
    value = options.get(name)
    if not value:
        raise ValueError(f"the {FORMAT} data source needs the option {name!r}")
    return value


@dataclass
class _RangePartition(InputPartition):
    rng: OffsetRange


class _KafkaReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str]) -> None:
        self.bootstrap = required_option(options, "kafka.bootstrap.servers")
        self.topic = required_option(options, "topic")
        self.ranges = options.get("ranges")
        self.group_id = options.get("group.id")
        self.client = client_settings(options)
        self.max_per_task = int(options.get("maxOffsetsPerTask",
                                            _DEFAULT_MAX_OFFSETS_PER_TASK))
        self.parallelism = int(options.get("parallelism", 1))

    def _planned(self) -> list[OffsetRange]:
        if self.ranges is not None:
            return [OffsetRange(self.topic, p, lo, hi) for p, lo, hi in orjson.loads(self.ranges)]
        return asyncio.run(plan_ranges(self.bootstrap, self.topic, self.group_id,
                                       client=self.client))

    def partitions(self) -> Sequence[InputPartition]:
        """One input partition per piece of ``offsets.plan_tasks``: at most
        ``maxOffsetsPerTask`` offsets of one Kafka partition each, largest first."""
        parts = [_RangePartition(piece) for piece in
                 plan_tasks(self._planned(), self.max_per_task, self.parallelism)]
        # Spark plans at least one task; an empty range reads nothing.
        return parts or [_RangePartition(OffsetRange(self.topic, 0, 0, 0))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Every record of the partition's offset range, once, in offset order."""
        assert isinstance(partition, _RangePartition)
        return read_range(self.bootstrap, partition.rng, client=self.client)


class _FailedRecordsReader(_KafkaReader):
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Every record of the partition's range, parsed, once, in offset order."""
        assert isinstance(partition, _RangePartition)
        for records in fetch_range(self.bootstrap, partition.rng, client=self.client):
            with gc_paused():
                parsed = parse_fetched(records, partition.rng.partition)
            yield parsed


@dataclass
class _Written(WriterCommitMessage):
    count: int


class _KafkaWriter(DataSourceArrowWriter):
    def __init__(self, options: Mapping[str, str]) -> None:
        self.bootstrap = required_option(options, "kafka.bootstrap.servers")
        self.topic = options.get("topic")
        self.client = client_settings(options)
        rate = options.get("maxRecordsPerSec")
        self.rate = float(rate) if rate else None

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        """Produce every row; returns only once the broker confirmed all of them."""
        return _Written(write_batches(self.bootstrap, iterator, default_topic=self.topic,
                                      producer_options=self.client,
                                      max_records_per_sec=self.rate))


class _RangeSource(DataSource):
    """A source read as offset ranges: its format name, its DDL and its reader come from
    the class attributes each format sets."""

    _format = ""
    _ddl = ""
    _reader_type: type[_KafkaReader] = _KafkaReader

    @classmethod
    def name(cls) -> str:
        """The format name Spark looks this source up by."""
        return cls._format

    def schema(self) -> str:
        """The DDL of the rows this source reads."""
        return self._ddl

    def reader(self, schema: StructType) -> DataSourceReader:
        """A reader of the ranges the options name (see the module docstring)."""
        return self._reader_type(self.options)


class KafkaDataSource(_RangeSource):
    """Batch reads of bounded offset ranges and append-only writes, over aiokafka.

    Format ``stormloop_kafka``; columns key, value, topic, partition, offset, timestamp_ms,
    headers.
    """

    _format = FORMAT
    _ddl = RECORD_DDL
    _reader_type = _KafkaReader

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        """A writer appending rows as records; a topic cannot be overwritten."""
        if overwrite:
            raise ValueError(f"{FORMAT} only appends; use mode('append')")
        return _KafkaWriter(self.options)


class FailedRecordsDataSource(_RangeSource):
    """Batch reads of a failed topic's offset ranges, parsed into failed-record columns.

    Format ``stormloop_failed_records``; columns failed-topic partition and offset,
    ``error``, then the failed record's fields.
    """

    _format = FAILED_FORMAT
    _ddl = PARSED_DDL
    _reader_type = _FailedRecordsReader
