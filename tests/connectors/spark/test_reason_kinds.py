"""Failure reasons grouped by kind: what varies per record is taken out of the label."""

from __future__ import annotations

import pytest

from connectors.spark.reason_kinds import ReasonKind, group, kind


@pytest.mark.parametrize(("reason", "label"), [
    ("ValueError: bad amount -17.5 at offset 1234", "ValueError: bad amount <n> at offset <n>"),
    ("KeyError: 'user_42'", "KeyError: '…'"),
    ('ValueError: no such sku "A-1"\nTraceback ...', "ValueError: no such sku '…'"),
    ("timed out after 30 s", "timed out after <n> s"),
    ("RuntimeError: order 9f1c2e3a-1b2c-4d5e-8f9a-0b1c2d3e4f5a failed",
     "RuntimeError: order <id> failed"),
    ("UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 3",
     "UnicodeDecodeError: '…' codec can't decode byte <id> in position <n>"),
    ("late: stamped 2024-01-05T10:00:00.250+01:00", "late: stamped <time>"),
    ("utf-8 int64 v2 deadbeef", "utf-8 int64 v2 deadbeef"),
])
def test_kind_takes_out_what_varies_and_keeps_the_words(reason: str, label: str) -> None:
    assert kind(reason) == label


def test_group_sums_per_kind_with_the_most_frequent_reason_as_example() -> None:
    by_reason = {f"ValueError: bad amount {i} at offset {1000 + i}": 1 for i in range(150)}
    by_reason["ValueError: bad amount 7 at offset 9"] = 5
    by_reason["timeout"] = 30
    assert group(by_reason) == [
        ReasonKind("ValueError: bad amount <n> at offset <n>", 155, 151,
                   "ValueError: bad amount 7 at offset 9"),
        ReasonKind("timeout", 30, 1, "timeout"),
    ]
    assert group({}) == []
