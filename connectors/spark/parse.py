"""Failed-topic payloads to typed fields, for a Spark UDF.

Every payload yields exactly one tuple: a valid failed record fills the record fields and
leaves ``error`` null; anything else (not JSON, a missing or mistyped field, bad base64, a
number out of Kafka's range) leaves the record fields null and says what is wrong in
``error``. So one bad payload is counted and reported by the job instead of failing the
Spark task. A plain (pickled) Python UDF, not ``mapInArrow``, which would require pandas.
"""

from __future__ import annotations

from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from connectors.kafka.failed import FailedRecord, MalformedFailedRecord

__all__ = ["PARSED_TYPE", "parse_payload", "parsed_fields"]

PARSED_TYPE = StructType([
    StructField("error", StringType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("attempts", IntegerType()),
    StructField("reason", StringType()),
    StructField("failed_at", LongType()),
    StructField("topology", StringType()),
    StructField("component", StringType()),
])
"""The struct ``parsed_fields`` returns: ``error``, then the failed record's fields."""

_RECORD_FIELDS = ("topic", "partition", "offset", "key", "value", "attempts", "reason",
                  "failed_at", "topology", "component")
_NO_RECORD = (None,) * len(_RECORD_FIELDS)

# Kafka's int32 fields; a larger number in the JSON is malformed, not a Spark overflow.
_INT32_FIELDS = ("partition", "attempts")
_INT32_MAX = 2**31 - 1


def parse_payload(payload: bytes | None) -> FailedRecord | str:
    """The failed record in ``payload``, or a one-line reason it is not one."""
    try:
        record = FailedRecord.from_json(payload)
    except MalformedFailedRecord as exc:
        return str(exc)
    for name in _INT32_FIELDS:
        if not 0 <= getattr(record, name) <= _INT32_MAX:
            return f"field {name!r} out of range: {getattr(record, name)}"
    if record.offset < 0:
        return f"field 'offset' out of range: {record.offset}"
    return record


def parsed_fields(payload: bytes | bytearray | None) -> tuple[object, ...]:
    """``payload`` as a ``PARSED_TYPE`` tuple: ``(None, *record)`` or ``(error, None, ...)``."""
    parsed = parse_payload(bytes(payload) if payload is not None else None)
    if isinstance(parsed, str):
        return (parsed, *_NO_RECORD)
    return (None, *(getattr(parsed, name) for name in _RECORD_FIELDS))
