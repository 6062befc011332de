"""Failed-record payloads parsed into columns a batch at a time.

``parse_columnar`` is the fast path of ``parse.parse_records``: msgspec decodes each payload
straight into a typed struct, checking every field's type and range and decoding the base64
key and value in the same pass (no intermediate dict, no Python-level checks per field),
then each field becomes one Arrow column. When any payload of the batch is off it returns
None and the caller parses the batch row by row, which names the problem per record.

Both paths give the same rows for a batch of valid records; the truth is
``FailedRecord.from_json`` plus the ranges of ``RANGES``. The struct below accepts a subset
of what it accepts: where msgspec is stricter (a float ``failed_at``, which the per-row
path truncates; base64 with a stray ``=`` after a complete group, which Python's decoder
allows; a repeated field holding a wrong type before the right one; an unbounded integer
field past 2**63; a ``value_truncated`` that is not a boolean) the batch takes the per-row
path, which accepts it. Unknown fields are refused rather than skipped, because msgspec
skips a field without checking what orjson checks (UTF-8, numbers in range).
"""

from __future__ import annotations

import operator
from typing import Annotated

import msgspec
import pyarrow as pa

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

_INT32_MAX, _INT64_MAX, _INT64_MIN = 2**31 - 1, 2**63 - 1, -(2**63)
RANGES: dict[str, tuple[int, int]] = {
    "partition": (0, _INT32_MAX), "attempts": (0, _INT32_MAX), "offset": (0, _INT64_MAX),
    "failed_at": (_INT64_MIN, _INT64_MAX), "first_failed_at": (_INT64_MIN, _INT64_MAX)}
"""The lowest and highest value of each integer field kept: beyond them a record is
malformed (by either path), not an Arrow overflow."""


def _int(name: str) -> object:
    low, high = RANGES[name]
    return Annotated[int, msgspec.Meta(ge=low, le=high)]


# orjson reads integers beyond 64 bits as float, which FailedRecord.from_json then refuses;
# msgspec reads any size as int. (Its bounds stop at int64: from 2**63 to 2**64 - 1 the
# batch takes the per-row path.)
_Json64 = Annotated[int, msgspec.Meta(ge=_INT64_MIN, le=_INT64_MAX)]
_Partition, _Offset, _Attempts = _int("partition"), _int("offset"), _int("attempts")
_FailedAt, _FirstFailedAt = _int("failed_at"), _int("first_failed_at")


class _Payload(msgspec.Struct, forbid_unknown_fields=True):
    """Every field ``FailedRecord.to_json`` writes, typed as ``from_json`` checks it."""

    topic: str
    partition: _Partition  # type: ignore[valid-type]
    offset: _Offset  # type: ignore[valid-type]
    value: bytes
    attempts: _Attempts  # type: ignore[valid-type]
    reason: str
    key: bytes | None = None
    failed_at: _FailedAt | None = None  # type: ignore[valid-type]
    topology: str | None = None
    component: str | None = None
    error_trace: str | None = None
    failed_by: str | None = None
    value_size: _Json64 | None = None  # type: ignore[valid-type]
    value_sha256: str | None = None
    # The per-row path takes any JSON value here and only ``true`` marks a cut value; the
    # writer writes booleans. Anything else is left to the per-row path: msgspec would read
    # a number orjson refuses, or recurse into deep nesting.
    value_truncated: bool | None = None
    key_truncated: bool | None = None
    first_failed_at: _FirstFailedAt | None = None  # type: ignore[valid-type]
    replayed_topic: str | None = None
    replayed_partition: _Json64 | None = None  # type: ignore[valid-type]
    replayed_offset: _Json64 | None = None  # type: ignore[valid-type]


_decode = msgspec.json.Decoder(_Payload).decode
_PLAIN_FIELDS = [f for f in FIELDS_SCHEMA if f.name not in ("failed_at", "value_truncated")]


def parse_columnar(payloads: list[bytes | None], failed_partitions: pa.Array,
                   failed_offsets: pa.Array, schema: pa.Schema) -> pa.RecordBatch | None:
    """The ``schema`` rows for ``payloads`` read at the given failed-topic positions, or
    None to parse per row.

    ``schema`` is the failed-topic position and ``error``, then ``FIELDS_SCHEMA``.
    """
    if not payloads:
        return None
    try:
        records = [_decode(p) for p in payloads]  # type: ignore[arg-type]
        arrays = {f.name: pa.array(list(map(operator.attrgetter(f.name), records)), f.type)
                  for f in _PLAIN_FIELDS}
    except (msgspec.MsgspecError, TypeError, ValueError,  # ValueError: bad UTF-8
            RecursionError):
        return None
    return pa.RecordBatch.from_pydict({
        "failed_partition": failed_partitions,
        "failed_offset": failed_offsets,
        "error": pa.nulls(len(records), pa.string()),
        **arrays,
        "failed_at": pa.array([r.failed_at or 0 for r in records], pa.int64()),
        "value_truncated": pa.array([r.value_truncated is True for r in records], pa.bool_()),
    }, schema=schema)
