"""Failed-record payloads parsed a batch at a time by Arrow's JSON reader.

``parse_columnar`` is the fast path of ``parse.parse_batch``: when every payload of a batch
is a valid failed record, the JSON is parsed in C by ``pyarrow.json`` and only the base64
key and value are decoded in Python. When anything in the batch is off (a null or
non-JSON payload, a missing or mistyped field, a number out of range, bad base64, a
payload holding more than one JSON document) it returns None and the caller parses the
batch row by row, which names the problem per record. Both paths give the same rows for a
batch of valid records.
"""

from __future__ import annotations

import binascii
import io

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

__all__ = ["JSON_SCHEMA", "parse_columnar"]

JSON_SCHEMA = pa.schema([
    ("topic", pa.string()),
    ("partition", pa.int64()),
    ("offset", pa.int64()),
    ("key", pa.string()),
    ("value", pa.string()),
    ("attempts", pa.int64()),
    ("reason", pa.string()),
    ("failed_at", pa.int64()),
    ("topology", pa.string()),
    ("component", pa.string()),
    ("value_truncated", pa.bool_()),
    ("first_failed_at", pa.int64()),
])
"""Arrow types a failed record's JSON is read with, field by field."""
_REQUIRED = ("topic", "partition", "offset", "value", "attempts", "reason")
_INT32_MAX = 2**31 - 1
_BLOCK = 1 << 24  # one block for a whole Spark batch of failed records


def _decode_all(texts: list[str | None]) -> list[bytes | None]:
    # strict_mode is at least as strict as b64decode(validate=True); on any doubt the
    # caller falls back to the per-row path, which uses b64decode.
    a2b = binascii.a2b_base64
    return [None if t is None else a2b(t, strict_mode=True) for t in texts]


def _in_range(column: pa.Array, high: int) -> bool:
    bounds = pc.min_max(column)
    low, top = bounds["min"].as_py(), bounds["max"].as_py()
    return low is None or (low >= 0 and top <= high)


def parse_columnar(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch | None:
    """The ``schema`` rows for ``batch`` (Kafka source columns), or None to parse per row."""
    payloads = batch.column("value")
    if payloads.null_count or len(payloads) == 0:
        return None
    text = b"\n".join(payloads.to_pylist())
    try:
        table = pa_json.read_json(
            io.BytesIO(text),
            read_options=pa_json.ReadOptions(use_threads=False,
                                             block_size=max(_BLOCK, len(text) + 1)),
            parse_options=pa_json.ParseOptions(explicit_schema=JSON_SCHEMA,
                                               unexpected_field_behavior="ignore"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != len(payloads):
        return None
    if any(table.column(name).null_count for name in _REQUIRED):
        return None
    if not (_in_range(table.column("partition"), _INT32_MAX)
            and _in_range(table.column("attempts"), _INT32_MAX)
            and _in_range(table.column("offset"), 2**63 - 1)):
        return None
    try:
        keys = _decode_all(table.column("key").to_pylist())
        values = _decode_all(table.column("value").to_pylist())
    except (binascii.Error, ValueError):
        return None
    columns = {
        "failed_partition": batch.column("partition"),
        "failed_offset": batch.column("offset"),
        "error": pa.nulls(len(payloads), pa.string()),
        "topic": table.column("topic").combine_chunks(),
        "partition": table.column("partition").combine_chunks().cast(pa.int32()),
        "offset": table.column("offset").combine_chunks(),
        "key": pa.array(keys, pa.binary()),
        "value": pa.array(values, pa.binary()),
        "attempts": table.column("attempts").combine_chunks().cast(pa.int32()),
        "reason": table.column("reason").combine_chunks(),
        "failed_at": pc.fill_null(table.column("failed_at").combine_chunks(), 0),
        "topology": table.column("topology").combine_chunks(),
        "component": table.column("component").combine_chunks(),
        # Only ``true`` marks a cut value, as in ``FailedRecord.from_json``.
        "value_truncated": pc.fill_null(table.column("value_truncated").combine_chunks(),
                                        False),
        "first_failed_at": table.column("first_failed_at").combine_chunks(),
    }
    return pa.RecordBatch.from_pydict(columns, schema=schema)
