"""Failed-record payloads parsed into columns a batch at a time.

``parse_columnar`` is the fast path of ``parse.parse_batch``: each payload is parsed by
orjson, each field's values are checked as a column (the set of their Python types, the
range of the integers), and the base64 key and value are decoded by ``pybase64`` (SIMD).
When anything in the batch is off (a null or non-JSON payload, one that is not a single
object, a missing or mistyped field, a number out of range, bad base64) it returns None and
the caller parses the batch row by row, which names the problem per record. Both paths
give the same rows for a batch of valid records: the checks are those of
``FailedRecord.from_json`` and ``parse.parse_payload``, made per column.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable

import orjson
import pyarrow as pa
import pybase64

__all__ = ["FIELDS_SCHEMA", "RANGES", "parse_columnar"]

FIELDS_SCHEMA = pa.schema([
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("key", pa.binary()),
    ("value", pa.binary()),
    ("attempts", pa.int32()),
    ("reason", pa.string()),
    ("failed_at", pa.int64()),
    ("topology", pa.string()),
    ("component", pa.string()),
    ("value_truncated", pa.bool_()),
    ("first_failed_at", pa.int64()),
])
"""The failed record's fields the parsed rows carry, with their Arrow types."""

_NONE = type(None)
_STR, _INT, _OPT_STR, _OPT_INT = {str}, {int}, {str, _NONE}, {int, _NONE}
# The Python types each field may hold (orjson gives int, never a bool subclass, for
# integers), as FailedRecord.from_json checks them; fields not kept are checked too.
_TYPES: dict[str, set[type]] = {
    "topic": _STR, "partition": _INT, "offset": _INT, "key": _OPT_STR, "value": _STR,
    "attempts": _INT, "reason": _STR, "failed_at": _OPT_INT, "topology": _OPT_STR,
    "component": _OPT_STR, "error_trace": _OPT_STR, "failed_by": _OPT_STR,
    "value_size": _OPT_INT, "value_sha256": _OPT_STR, "first_failed_at": _OPT_INT,
    "replayed_topic": _OPT_STR, "replayed_partition": _OPT_INT, "replayed_offset": _OPT_INT,
}
_INT32_MAX, _INT64_MAX = 2**31 - 1, 2**63 - 1
RANGES: dict[str, tuple[int, int]] = {
    "partition": (0, _INT32_MAX), "attempts": (0, _INT32_MAX), "offset": (0, _INT64_MAX),
    "failed_at": (-_INT64_MAX - 1, _INT64_MAX),
    "first_failed_at": (-_INT64_MAX - 1, _INT64_MAX)}
"""The lowest and highest value of each integer field kept: beyond them a record is
malformed (by either path), not an Arrow overflow."""


def _decoded(texts: list[str | None]) -> pa.Array:
    # pybase64's validate=True accepts no input that base64.b64decode(validate=True), which
    # the per-row path uses, rejects.
    decode: Callable[..., bytes] = pybase64.b64decode
    return pa.array([None if t is None else decode(t, validate=True) for t in texts],
                    pa.binary())


def parse_columnar(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch | None:
    """The ``schema`` rows for ``batch`` (Kafka source columns), or None to parse per row.

    ``schema`` is the failed-topic position and ``error``, then ``FIELDS_SCHEMA``.
    """
    payloads = batch.column("value")
    if payloads.null_count or len(payloads) == 0:
        return None
    loads = orjson.loads
    try:
        objs = [loads(p) for p in payloads.to_pylist()]
    except orjson.JSONDecodeError:
        return None
    if set(map(type, objs)) != {dict}:
        return None
    columns: dict[str, list] = {}
    for name, allowed in _TYPES.items():
        values = [o.get(name) for o in objs]
        if not set(map(type, values)) <= allowed:
            return None
        columns[name] = values
    for name, (low, high) in RANGES.items():
        values = columns[name]
        if _NONE in _TYPES[name]:
            values = [v for v in values if v is not None]
        if values and not (low <= min(values) and max(values) <= high):
            return None
    try:
        keys = _decoded(columns["key"])
        values = _decoded(columns["value"])
        arrays = {name: pa.array(columns[name], field.type) for field in FIELDS_SCHEMA
                  if (name := field.name) not in ("key", "value", "failed_at",
                                                  "value_truncated")}
        failed_at = pa.array([t or 0 for t in columns["failed_at"]], pa.int64())
    except (binascii.Error, ValueError, OverflowError):  # ArrowInvalid is a ValueError
        return None
    return pa.RecordBatch.from_pydict({
        "failed_partition": batch.column("partition"),
        "failed_offset": batch.column("offset"),
        "error": pa.nulls(len(payloads), pa.string()),
        **arrays,
        "key": keys,
        "value": values,
        "failed_at": failed_at,
        # Only ``true`` marks a cut value, as in ``FailedRecord.from_json``.
        "value_truncated": pa.array([o.get("value_truncated") is True for o in objs],
                                    pa.bool_()),
    }, schema=schema)
