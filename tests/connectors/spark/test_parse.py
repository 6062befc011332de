"""Failed-topic payloads to UDF tuples: every payload gives one row, bad ones an error."""

from __future__ import annotations

import base64

import orjson
import pytest

from connectors.spark.parse import PARSED_TYPE, parse_payload, parsed_fields
from tests.connectors.spark.helpers import failed


def test_valid_record_fills_every_field_and_no_error() -> None:
    record = failed("orders", 7, reason="boom", attempts=3)
    row = parsed_fields(record.to_json())
    assert len(row) == len(PARSED_TYPE.fields)
    assert dict(zip(PARSED_TYPE.names, row, strict=True)) == {
        "error": None, "topic": "orders", "partition": 0, "offset": 7, "key": b"k7",
        "value": b"v7", "attempts": 3, "reason": "boom", "failed_at": record.failed_at,
        "topology": "topology", "component": "bolt"}


def test_null_key_is_kept_null() -> None:
    obj = orjson.loads(failed("t", 1).to_json())
    obj["key"] = None
    assert parsed_fields(orjson.dumps(obj))[4] is None


def _with(**changes: object) -> bytes:
    obj = orjson.loads(failed("t", 1).to_json())
    obj.update(changes)
    return orjson.dumps(obj)


@pytest.mark.parametrize(("payload", "error"), [
    (None, "empty payload"),
    (b"not json", "not JSON: "),
    (b"[1, 2]", "expected a JSON object, got list"),
    (b'{"topic": "t"}', "missing field(s) ['partition', 'offset', 'value', 'attempts', "
                        "'reason']"),
    (_with(offset="12"), "field 'offset' must be int, got str"),
    (_with(value="%%%"), "Only base64 data is allowed"),
    (_with(partition=2**31), "field 'partition' out of range: 2147483648"),
    (_with(attempts=-1), "field 'attempts' out of range: -1"),
    (_with(offset=-5), "field 'offset' out of range: -5"),
])
def test_malformed_payload_gives_error_and_empty_record(payload: bytes | None,
                                                        error: str) -> None:
    row = parsed_fields(payload)
    assert isinstance(row[0], str) and row[0].startswith(error)
    assert row[1:] == (None,) * (len(PARSED_TYPE.fields) - 1)
    assert parse_payload(payload) == row[0]


def test_spark_hands_bytearray_and_it_parses_like_bytes() -> None:
    payload = failed("t", 2).to_json()
    assert parsed_fields(bytearray(payload)) == parsed_fields(payload)
    assert base64.b64decode(orjson.loads(payload)["value"]) == b"v2"
