"""Failed records that are too large are cut to fit, and say so."""

from __future__ import annotations

import base64
import hashlib

import orjson
import pytest

from connectors.kafka.failed import FailedRecord, ReplayOrigin
from connectors.kafka.fit import TEXT_CHARS, RecordTooLarge, fit

MB = 1_000_000


def record(value: bytes, key: bytes | None = None, reason: str = "ValueError: boom",
           trace: str | None = None) -> FailedRecord:
    return FailedRecord.now("orders", 3, 1234, key, value, 4, reason, "top", "kafka",
                            error_trace=trace, failed_by="parse")


def test_a_record_that_fits_is_written_whole() -> None:
    rec = record(b"v" * 1000, b"k")
    fitted, payload = fit(rec, MB)
    assert fitted is rec and payload == rec.to_json()
    obj = orjson.loads(payload)
    assert (obj["value_truncated"], obj["key_truncated"]) == (False, False)
    assert obj["value_size"] == 1000
    assert obj["value_sha256"] == hashlib.sha256(b"v" * 1000).hexdigest()


def test_a_900_kb_value_is_cut_to_fit_and_names_the_whole_original() -> None:
    value = bytes(range(256)) * 3600  # 921,600 bytes: 1.23 MB once base64-encoded
    rec = record(value, b"key-1")
    assert len(rec.to_json()) > MB
    fitted, payload = fit(rec, MB)
    assert MB - 16 <= len(payload) <= MB  # cut to the byte budget, not far below it
    obj = orjson.loads(payload)
    cut = base64.b64decode(obj["value"])
    assert value.startswith(cut) and len(cut) < len(value)
    assert obj["value_truncated"] is True and obj["key_truncated"] is False
    assert obj["value_size"] == len(value)
    assert obj["value_sha256"] == hashlib.sha256(value).hexdigest()
    assert base64.b64decode(obj["key"]) == b"key-1"
    assert (obj["topic"], obj["partition"], obj["offset"]) == ("orders", 3, 1234)
    back = FailedRecord.from_json(payload)
    assert back.value_truncated and back.value == cut and back == fitted


def test_a_huge_key_is_cut_after_the_value() -> None:
    rec = record(b"v" * 50_000, b"k" * 50_000)
    fitted, payload = fit(rec, 20_000)
    assert len(payload) <= 20_000
    assert fitted.value == b"" and fitted.value_truncated
    assert fitted.key_truncated and fitted.key and fitted.key != b"k" * 50_000
    assert fitted.value_size == 50_000


def test_huge_texts_are_cut_last() -> None:
    rec = record(b"v" * 10, b"k" * 10, reason="E: " + "r" * 50_000, trace="t" * 50_000)
    fitted, payload = fit(rec, 8_000)
    assert len(payload) <= 8_000
    assert len(fitted.reason) == TEXT_CHARS and fitted.reason.startswith("E: rrr")
    assert fitted.error_trace is not None and len(fitted.error_trace) == TEXT_CHARS
    assert fitted.key == b"k" * 10  # with the texts cut there is room for the key again


def test_a_limit_below_any_record_is_refused() -> None:
    with pytest.raises(RecordTooLarge, match=r"\('orders', 3, 1234\)"):
        fit(record(b"v" * 10, reason="x" * 5000, trace="y" * 5000), 500)


def test_records_without_the_new_fields_still_parse() -> None:
    old = orjson.dumps({"topic": "t", "partition": 0, "offset": 5, "key": None,
                        "value": base64.b64encode(b"x").decode(), "attempts": 2,
                        "reason": "tuple failed 2 times", "failed_at": 1})
    rec = FailedRecord.from_json(old)
    assert (rec.value, rec.value_truncated, rec.error_trace, rec.first_failed_at) == (
        b"x", False, None, None)


def test_replay_origin_comes_from_the_replay_headers_only_when_complete() -> None:
    headers = [("replay.original.topic", b"orders"), ("replay.original.partition", b"3"),
               ("replay.original.offset", b"1234"), ("replay.attempts", b"4"),
               ("replay.first_failed_at", b"1700000000000"), ("other", b"x")]
    assert ReplayOrigin.from_headers(headers) == ReplayOrigin("orders", 3, 1234, 4,
                                                              1700000000000)
    assert ReplayOrigin.from_headers(headers[:3]) is None
    assert ReplayOrigin.from_headers([("replay.attempts", b"x"), *headers[:3]]) is None
    assert ReplayOrigin.from_headers(None) is None
