"""The columnar parse gives exactly the per-row rows, and steps aside for any batch it
cannot vouch for."""

from __future__ import annotations

import base64
import random

import orjson
import pyarrow as pa
import pytest

from connectors.spark.parse import PARSED_SCHEMA, parse_batch, parse_payload
from connectors.spark.parse_columns import parse_columnar
from tests.connectors.spark.helpers import failed, failed_with, payload_batch


def _columnar(batch: pa.RecordBatch) -> pa.RecordBatch | None:
    return parse_columnar(batch.column("value").to_pylist(), batch.column("partition"),
                          batch.column("offset"), PARSED_SCHEMA)


def _per_row(batch: pa.RecordBatch) -> list[dict[str, object]]:
    rows = []
    for partition, offset, payload in zip(batch.column("partition").to_pylist(),
                                          batch.column("offset").to_pylist(),
                                          batch.column("value").to_pylist(), strict=True):
        record = parse_payload(payload)
        if isinstance(record, str):
            rows.append({"failed_partition": partition, "failed_offset": offset,
                         "error": record, **dict.fromkeys(PARSED_SCHEMA.names[3:])})
        else:
            rows.append({"failed_partition": partition, "failed_offset": offset,
                         "error": None,
                         **{name: getattr(record, name) for name in PARSED_SCHEMA.names[3:]}})
    return rows


def test_valid_batches_parse_as_the_per_row_path_does() -> None:
    payloads = [failed("orders", i, reason=f"r{i}", attempts=i % 5).to_json()
                for i in range(300)]
    payloads += [failed_with(key=None), failed_with(topology=None, component=None),
                 failed_with(failed_at=None), failed_with(value=""),
                 failed_with(value_truncated=True, key_truncated=False),
                 failed_with(value_truncated=None, first_failed_at=-(2**63)),
                 failed_with(failed_at=0, replayed_offset=2**63 - 1, value_size=7)]
    batch = payload_batch(*payloads)
    parsed = _columnar(batch)
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
        ("first_failed_at", 2**64 - 1), ("key", 5)]),
    # Read by orjson as a float, by msgspec as an int.
    failed_with(value_size=7).replace(b'"value_size":7', b'"value_size":18446744073709551616'),
    # Fields the struct does not know are refused, not skipped unchecked: orjson refuses
    # this payload (a number out of range), so the per-row path calls it malformed.
    failed_with(extra="ignored")[:-1] + b',"later":1e400}',
    failed_with(extra="ignored"),
    failed_with(reason="caf\u00e9").replace("caf\u00e9".encode(), b"caf\xe9"),  # not UTF-8
    failed_with(reason="x").replace(b'"reason":"x"', b'"reason":"\\ud800"'),
    # orjson refuses a number past a double's range; msgspec would read it as an int.
    failed_with(value_truncated=0).replace(b'"value_truncated":0',
                                           b'"value_truncated":1' + b"0" * 400),
    # Nesting deeper than orjson's limit; msgspec would recurse and raise RecursionError.
    failed_with(key_truncated=0).replace(b'"key_truncated":0',
                                         b'"key_truncated":' + b"[" * 5000 + b"]" * 5000),
])
def test_any_bad_or_unusual_payload_sends_the_batch_to_the_per_row_path(
        bad: bytes | None) -> None:
    good = failed("t", 2).to_json()
    batch = payload_batch(good, bad, good)
    assert _columnar(batch) is None
    assert parse_batch(batch).to_pylist() == _per_row(batch)


@pytest.mark.parametrize("unusual", [
    failed_with(extra="ignored"),  # unknown fields: the per-row path ignores them
    failed_with(failed_at=1.5),  # the per-row path truncates it
    failed_with(failed_at="12"),
    failed_with(value_size=2**63),  # an unbounded integer past int64
    failed_with(value=base64.b64encode(b"abc").decode() + "="),  # Python's decoder allows it
    failed_with(value_truncated="true", key_truncated="yes"),  # only ``true`` counts there
    failed_with(key_truncated=[[[[1]]]]),
    failed_with(value_truncated=0).replace(b'"value_truncated":0',
                                           b'"value_truncated":' + b"[" * 900 + b"]" * 900),
])
def test_payloads_only_the_per_row_path_accepts_still_parse(unusual: bytes) -> None:
    batch = payload_batch(failed("t", 2).to_json(), unusual)
    assert _columnar(batch) is None
    rows = parse_batch(batch).to_pylist()
    assert [r["error"] for r in rows] == [None, None]
    assert rows == _per_row(batch)


def test_a_document_split_across_payloads_is_not_read_as_one_row() -> None:
    # An open record, its closing brace, and two records in one payload: as many documents
    # as payloads, yet none of the three payloads is a failed record on its own.
    record = failed("t", 1).to_json()
    batch = payload_batch(record[:-1], b"}", record + record)
    assert _columnar(batch) is None
    assert all(isinstance(parse_payload(p), str) for p in batch.column("value").to_pylist())


def test_payloads_of_a_sliced_batch_parse_from_their_own_offsets() -> None:
    payloads = [failed("orders", i).to_json() for i in range(6)]
    batch = payload_batch(*payloads).slice(2, 3)
    parsed = _columnar(batch)
    assert parsed is not None and parsed.to_pylist() == _per_row(batch)


def _mutated(rng: random.Random, payload: bytes) -> bytes:
    obj = orjson.loads(payload)
    name = rng.choice([*obj, "extra"])
    obj[name] = rng.choice([None, True, False, 0, -1, 1.5, 2**31, 2**63, -(2**63), "BIG",
                            "", "x", "YQ==", "YQ", "YQ===", "12", [], {}, [1], {"a": 1}])
    text = orjson.dumps(obj).replace(b'"BIG"', b"-18446744073709551617")
    if rng.random() < 0.2:  # and now and then a damaged byte
        i = rng.randrange(len(text))
        text = text[:i] + bytes([rng.randrange(256)]) + text[i + 1:]
    return text


def test_whenever_the_columnar_path_answers_it_agrees_with_the_per_row_path() -> None:
    rng = random.Random(7)
    base = [failed("t", i, attempts=i % 6).to_json() for i in range(4)]
    answered = 0
    for _ in range(3000):
        batch = payload_batch(*base, _mutated(rng, rng.choice(base)))
        parsed = _columnar(batch)
        expected = _per_row(batch)
        if parsed is not None:
            answered += 1
            assert parsed.to_pylist() == expected
        assert parse_batch(batch).to_pylist() == expected
    assert answered > 100  # the mutations leave many records valid
