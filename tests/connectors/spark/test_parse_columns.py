"""The columnar parse gives exactly the per-row rows, and steps aside for any bad batch."""

from __future__ import annotations

import pyarrow as pa
import pytest

from connectors.spark.parse import PARSED_SCHEMA, parse_payload
from connectors.spark.parse_columns import parse_columnar
from tests.connectors.spark.helpers import failed, failed_with, payload_batch


def _per_row(batch: pa.RecordBatch) -> list[dict[str, object]]:
    rows = []
    for partition, offset, payload in zip(batch.column("partition").to_pylist(),
                                          batch.column("offset").to_pylist(),
                                          batch.column("value").to_pylist(), strict=True):
        record = parse_payload(payload)
        assert not isinstance(record, str)
        rows.append({"failed_partition": partition, "failed_offset": offset, "error": None,
                     **{name: getattr(record, name) for name in PARSED_SCHEMA.names[3:]}})
    return rows


def test_valid_batches_parse_as_the_per_row_path_does() -> None:
    payloads = [failed("orders", i, reason=f"r{i}", attempts=i % 5).to_json()
                for i in range(300)]
    payloads += [failed_with(key=None), failed_with(topology=None, component=None),
                 failed_with(failed_at=None), failed_with(extra="ignored", value="")]
    batch = payload_batch(*payloads)
    parsed = parse_columnar(batch, PARSED_SCHEMA)
    assert parsed is not None and parsed.schema == PARSED_SCHEMA
    assert parsed.to_pylist() == _per_row(batch)


@pytest.mark.parametrize("bad", [
    None, b"not json", b"[1, 2]", b'{"topic": "t"}', b"  ",
    failed("t", 1).to_json() + b"\n" + failed("t", 2).to_json(),
    *(failed_with(**{name: value}) for name, value in [
        ("offset", "12"), ("value", "%%%"), ("value", "YQ"), ("partition", 2**31),
        ("attempts", -1), ("offset", -5), ("topic", 5), ("partition", 1.0), ("topic", None),
        ("failed_at", 1.5), ("partition", True), ("offset", 2**63), ("value_size", "12"),
        ("topology", 5), ("replayed_offset", "7"), ("failed_at", 2**63),
        ("first_failed_at", 2**64 - 1)]),
])
def test_any_bad_payload_sends_the_batch_to_the_per_row_path(bad: bytes | None) -> None:
    good = failed("t", 2).to_json()
    assert parse_columnar(payload_batch(good, bad, good), PARSED_SCHEMA) is None


def test_a_document_split_across_payloads_is_not_read_as_one_row() -> None:
    # An open record, its closing brace, and two records in one payload: as many documents
    # as payloads, yet none of the three payloads is a failed record on its own.
    record = failed("t", 1).to_json()
    batch = payload_batch(record[:-1], b"}", record + record)
    assert parse_columnar(batch, PARSED_SCHEMA) is None
    assert all(isinstance(parse_payload(p), str) for p in batch.column("value").to_pylist())


def test_payloads_of_a_sliced_batch_parse_from_their_own_offsets() -> None:
    payloads = [failed("orders", i).to_json() for i in range(6)]
    batch = payload_batch(*payloads).slice(2, 3)
    parsed = parse_columnar(batch, PARSED_SCHEMA)
    assert parsed is not None and parsed.to_pylist() == _per_row(batch)
