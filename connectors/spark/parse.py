"""Failed-topic records to typed columns, in the Spark task that read them.

Every input record yields exactly one output row: a valid failed record fills the record
columns and leaves ``error`` null; anything else (not JSON, a missing or mistyped field,
bad base64, a number out of Kafka's range) leaves them null and says what is wrong in
``error``. So one bad payload is counted and reported by the job, never fatal to a task.

Parsing runs inside the data source's read (Arrow in, Arrow out) rather than as a Spark
UDF: a row-at-a-time UDF would ship every record to a second Python worker and back, and
``mapInArrow`` needs pandas, which the ``spark`` extra does not install.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from connectors.kafka.failed import FailedRecord, MalformedFailedRecord
from connectors.spark.parse_columns import FIELDS_SCHEMA, RANGES, parse_columnar

__all__ = ["PARSED_DDL", "PARSED_SCHEMA", "parse_batch", "parse_fetched", "parse_payload",
           "parse_records"]

PARSED_SCHEMA = pa.schema([
    ("failed_partition", pa.int32()), ("failed_offset", pa.int64()), ("error", pa.string()),
    *FIELDS_SCHEMA])
"""Where the record sits in the failed topic, ``error`` (null if valid), then its content."""

PARSED_DDL = ("failed_partition INT, failed_offset BIGINT, error STRING, topic STRING, "
              "partition INT, offset BIGINT, key BINARY, value BINARY, attempts INT, "
              "reason STRING, failed_at BIGINT, topology STRING, component STRING, "
              "value_truncated BOOLEAN, first_failed_at BIGINT")
"""``PARSED_SCHEMA`` as a Spark DDL string."""

_RECORD_FIELDS = PARSED_SCHEMA.names[3:]



def parse_payload(payload: bytes | None) -> FailedRecord | str:
    """The failed record in ``payload``, or a one-line reason it is not one."""
    try:
        record = FailedRecord.from_json(payload)
    except MalformedFailedRecord as exc:
        return str(exc)
    for name, (low, high) in RANGES.items():
        value = getattr(record, name)
        if value is not None and not low <= value <= high:
            return f"field {name!r} out of range: {value}"
    return record


def parse_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """One ``PARSED_SCHEMA`` row per row of ``batch`` (the Kafka source's columns)."""
    return parse_records(batch.column("value").to_pylist(), batch.column("partition"),
                         batch.column("offset"))


def parse_fetched(records: Sequence[Any], failed_partition: int) -> pa.RecordBatch:
    """One ``PARSED_SCHEMA`` row per fetched record (anything with ``value`` and
    ``offset``, as aiokafka's ``ConsumerRecord``) of the failed topic's partition."""
    return parse_records([r.value for r in records],
                         pa.repeat(pa.scalar(failed_partition, pa.int32()), len(records)),
                         pa.array([r.offset for r in records], pa.int64()))


def parse_records(payloads: list[bytes | None], failed_partitions: pa.Array,
                  failed_offsets: pa.Array) -> pa.RecordBatch:
    """One ``PARSED_SCHEMA`` row per payload, read at the given failed-topic positions
    (int32 and int64 arrays as long as ``payloads``)."""
    fast = parse_columnar(payloads, failed_partitions, failed_offsets, PARSED_SCHEMA)
    if fast is not None:  # every payload valid: parsed by column
        return fast
    columns: dict[str, list[object]] = {name: [] for name in PARSED_SCHEMA.names}
    errors = columns["error"]
    fields = [(name, columns[name]) for name in _RECORD_FIELDS]
    for payload in payloads:
        parsed = parse_payload(payload)
        if isinstance(parsed, str):
            errors.append(parsed)
            for _, column in fields:
                column.append(None)
        else:
            errors.append(None)
            for name, column in fields:
                column.append(getattr(parsed, name))
    return pa.RecordBatch.from_pydict({**columns, "failed_partition": failed_partitions,
                                       "failed_offset": failed_offsets}, schema=PARSED_SCHEMA)
