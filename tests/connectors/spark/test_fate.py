"""Fates decided in process (Arrow), by the Spark job's rules: no Spark, no broker."""

from __future__ import annotations

import dataclasses

import orjson
import pyarrow as pa

from connectors.spark.fate import fated
from connectors.spark.options import ReplayOptions
from connectors.spark.parse import parse_records
from connectors.spark.tally import Fate
from tests.connectors.spark.helpers import failed


def _fates(payloads: list[bytes], **options: object) -> list[tuple[int, int]]:
    """``(failed_offset, fate)`` for payloads read at offsets 0, 1, 2 ... of partition 0."""
    parsed = parse_records(payloads, pa.array([0] * len(payloads), pa.int32()),
                           pa.array(range(len(payloads)), pa.int64()))
    table = fated(pa.Table.from_batches([parsed]), ReplayOptions("h:1", "f", **options))
    return sorted(zip(table.column("failed_offset").to_pylist(),
                      table.column("_fate").to_pylist(), strict=True))


def _without_failed_at(record: bytes) -> bytes:
    obj = orjson.loads(record)
    del obj["failed_at"]
    return orjson.dumps(obj)


def test_the_latest_copy_wins_and_a_missing_time_loses() -> None:
    payloads = [
        failed("t", 1, failed_at=1_000).to_json(),
        failed("t", 1, failed_at=2_000).to_json(),  # the latest of offset 1
        failed("t", 1, failed_at=2_000, attempts=3).to_json(),  # same time, fewer attempts
        _without_failed_at(failed("t", 2).to_json()),
        failed("t", 2, failed_at=5).to_json(),  # a missing time reads as 0: later wins
        b"not json",
    ]
    assert _fates(payloads) == [(0, Fate.DUPLICATE), (1, Fate.REPLAY), (2, Fate.DUPLICATE),
                                (3, Fate.DUPLICATE), (4, Fate.REPLAY), (5, Fate.MALFORMED)]


def test_attempts_truncation_and_filters_in_the_job_s_order() -> None:
    payloads = [
        failed("t", 1, attempts=9, reason="poison").to_json(),
        dataclasses.replace(failed("t", 2, reason="poison"), value_truncated=True).to_json(),
        failed("t", 3, reason="timeout", failed_at=9_000).to_json(),
        failed("t", 4, reason="ValueError: poison", failed_at=9_000).to_json(),
        failed("t", 5, reason="poison", failed_at=1_000).to_json(),
        _without_failed_at(failed("t", 6, reason="poison").to_json()),
    ]
    assert _fates(payloads, max_attempts=5, reasons=("poison",), since_ms=5_000) == [
        (0, Fate.OVER_ATTEMPTS), (1, Fate.TRUNCATED), (2, Fate.FILTERED),
        (3, Fate.REPLAY), (4, Fate.FILTERED), (5, Fate.FILTERED)]


def test_targets_and_first_failure_times() -> None:
    payloads = [failed("orders", 1, failed_at=7_000).to_json()]
    parsed = parse_records(payloads, pa.array([0], pa.int32()), pa.array([0], pa.int64()))
    table = pa.Table.from_batches([parsed])
    own = fated(table, ReplayOptions("h:1", "f"))
    moved = fated(table, ReplayOptions("h:1", "f", target_topic="again"))
    assert own.column("_target").to_pylist() == ["orders"]
    assert moved.column("_target").to_pylist() == ["again"]
    assert own.column("_first").to_pylist() == [7_000]
