"""Failed-topic payloads to parsed rows: every record gives one row, bad ones an error."""

from __future__ import annotations

import pytest

from connectors.spark.parse import PARSED_SCHEMA, parse_batch, parse_payload
from tests.connectors.spark.helpers import failed, failed_with, payload_batch


def test_valid_record_fills_every_column_and_no_error() -> None:
    record = failed("orders", 7, reason="boom", attempts=3)
    parsed = parse_batch(payload_batch(record.to_json(), failed_with(key=None)))
    assert parsed.schema == PARSED_SCHEMA
    assert parsed.to_pylist() == [
        {"failed_partition": 1, "failed_offset": 10, "error": None, "topic": "orders",
         "partition": 0, "offset": 7, "key": b"k7", "value": b"v7", "attempts": 3,
         "reason": "boom", "failed_at": record.failed_at, "topology": "topology",
         "component": "bolt", "value_truncated": False, "first_failed_at": None},
        {"failed_partition": 1, "failed_offset": 11, "error": None, "topic": "t",
         "partition": 0, "offset": 1, "key": None, "value": b"v1", "attempts": 4,
         "reason": "boom", "failed_at": 1_700_000_000_000, "topology": "topology",
         "component": "bolt", "value_truncated": False, "first_failed_at": None}]


@pytest.mark.parametrize(("payload", "error"), [
    (None, "empty payload"),
    (b"not json", "not JSON: "),
    (b"[1, 2]", "expected a JSON object, got list"),
    (b'{"topic": "t"}', "missing field(s) ['partition', 'offset', 'value', 'attempts', "
                        "'reason']"),
    (failed_with(offset="12"), "field 'offset' must be int, got str"),
    (failed_with(value="%%%"), "Only base64 data is allowed"),
    (failed_with(partition=2**31), "field 'partition' out of range: 2147483648"),
    (failed_with(attempts=-1), "field 'attempts' out of range: -1"),
    (failed_with(offset=-5), "field 'offset' out of range: -5"),
    (failed_with(offset=2**63), "field 'offset' out of range: 9223372036854775808"),
    (failed_with(failed_at=2**63), "field 'failed_at' out of range: 9223372036854775808"),
    (failed_with(topology=5), "field 'topology' must be str, got int"),
])
def test_malformed_payload_gives_error_and_empty_record(payload: bytes | None,
                                                        error: str) -> None:
    good = failed("t", 2).to_json()
    rows = parse_batch(payload_batch(good, payload, good)).to_pylist()
    assert [r["error"] is None for r in rows] == [True, False, True]
    bad = rows[1]
    assert bad["error"].startswith(error)
    assert (bad["failed_partition"], bad["failed_offset"]) == (1, 11)
    assert {k: v for k, v in bad.items() if v is not None} == {
        "failed_partition": 1, "failed_offset": 11, "error": bad["error"]}
    assert parse_payload(payload) == bad["error"]
