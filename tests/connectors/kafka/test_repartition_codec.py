"""A repartition record's bytes: the types it carries exactly, the ones it refuses."""

from __future__ import annotations

import enum
import re
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectors.kafka import KafkaSpout
from connectors.kafka.codec import DecodeError
from connectors.kafka.repartition import hop
from connectors.kafka.repartition_codec import CARRIED, decode_row, encode_row, key_bytes
from tests.connectors.kafka.carried import carried, one_row, packed, shape


def writer_and_reader() -> tuple[Any, Any]:
    return hop(KafkaSpout("words", "127.0.0.1:9", "wc"), "count", ("k",), ("k", "v"))


class _Tz(tzinfo):
    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(0)


class _Colour(enum.StrEnum):
    RED = "red"


PARIS = ZoneInfo("Europe/Paris")
EXACT = [
    (1, (2, (3,)), ()), {1, "a"}, frozenset({(1, 2)}), {(1, 2): {frozenset({3}): [4]}},
    datetime(2025, 10, 26, 2, 30, fold=1, tzinfo=PARIS), datetime(2024, 1, 1, 12),
    datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=5, microseconds=7), "X")),
    datetime(2024, 1, 1, tzinfo=UTC), date(1, 1, 1), time(23, 59, 59, 999999),
    time(1, tzinfo=timezone(-timedelta(hours=3))), Decimal("1.50"), Decimal("-0"),
    Decimal("sNaN"), UUID(int=7), {"plain": [1, 2.5, None, b"x", True]},
]


@pytest.mark.parametrize("value", EXACT, ids=lambda v: f"{type(v).__name__}")
def test_each_carried_type_comes_back_as_it_went(value: Any) -> None:
    back = decode_row(encode_row(["k", value], ("k", "v")))
    assert shape(back) == shape(["k", value])
    if isinstance(value, datetime):
        assert back[1].tzinfo is value.tzinfo or back[1].tzinfo == value.tzinfo


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=carried)
def test_nested_carried_values_come_back_as_they_went(value: Any) -> None:
    assert shape(decode_row(encode_row([value], ("v",)))) == shape([value])


def test_the_common_row_is_plain_messagepack() -> None:
    row = ["word", 3, 2.5, None, True, b"\x00"]
    assert encode_row(row, tuple("abcdef")) == msgspec.msgpack.encode(row)


@pytest.mark.parametrize(("value", "named"), [
    (object(), "holds a value of type object,"),
    (bytearray(b"x"), "holds a value of type bytearray,"),
    (memoryview(b"x"), "holds a value of type memoryview,"),
    (_Colour.RED, f"holds a value of type {__name__}._Colour,"),
    ([1, {"a": {2.5, 1j}}], "holds a value of type complex,"),
    ((1, [SimpleNamespace()]), "holds a value of type types.SimpleNamespace,"),
    (2**64, "holds an int outside MessagePack's range"),
    ([-(2**63) - 1], "holds an int outside MessagePack's range"),
    (datetime(2024, 1, 1, tzinfo=_Tz()), f"holds a tzinfo of type {__name__}._Tz"),
    (time(1, tzinfo=_Tz()), f"holds a tzinfo of type {__name__}._Tz"),
])
def test_a_value_the_hop_cannot_carry_fails_its_tuple_naming_field_and_type(
        value: Any, named: str) -> None:
    writer, _ = writer_and_reader()
    with pytest.raises(TypeError) as raised:
        writer._record(SimpleNamespace(values=["k", value]))
    message = str(raised.value)
    assert message.startswith(f"field 'v' {named}") and "\n" not in message
    assert "cannot cross the repartition hop (it carries None, bool, int" in message


def test_docs_scaling_lists_exactly_the_carried_types() -> None:
    text = (Path(__file__).resolve().parents[3] / "docs" / "scaling.md").read_text()
    section = text.split("### What a tuple may hold across the hop")[1].split("\n### ")[0]
    rows = re.findall(r"^\| (.+?) \|", section, re.M)[1:]  # the table, past its header
    listed = {name.rsplit(".", 1)[-1] for row in rows for name in re.findall(r"`([\w.]+)`", row)}
    names = ["None" if t is type(None) else t.__name__ for t in CARRIED]
    assert listed == set(names)
    assert f"(it carries {', '.join(names)})" in section


@pytest.mark.parametrize("data", [
    msgspec.msgpack.encode(["k", msgspec.msgpack.Ext(99, b"")]),
    msgspec.msgpack.encode(["k", msgspec.msgpack.Ext(9, b"short")]),
    msgspec.msgpack.encode(["k", msgspec.msgpack.Ext(5, msgspec.msgpack.encode(
        [2024, 1, 1, 0, 0, 0, 0, 0, "No/Such_Zone"]))]),
    msgspec.msgpack.encode(["k", msgspec.msgpack.Ext(5, msgspec.msgpack.encode(
        [2024, 1, 1, 0, 0, 0, 0, 0, [2**63 - 1]]))]),
    msgspec.msgpack.encode(["k", msgspec.msgpack.Ext(6, msgspec.msgpack.encode(2**63))]),
    msgspec.msgpack.encode(["k", msgspec.msgpack.Ext(1, b"\xc1")]),
])
def test_a_record_the_hop_did_not_write_is_a_decode_error(data: bytes) -> None:
    _, reader = writer_and_reader()
    for record in (one_row(data), packed(data)):
        with pytest.raises(DecodeError):
            reader.decoder(record)
        with pytest.raises(DecodeError):
            reader.decoder.many([record])


_before = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text()
    | st.binary(),
    lambda inner: st.lists(inner, max_size=3) | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.text() | st.integers(0, 9), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(first=_before, second=_before)
def test_keys_of_values_the_hop_always_carried_keep_their_bytes(first: Any,
                                                                second: Any) -> None:
    """A topic written before sets and the other types crossed keeps its partitions: one
    field is its text, several a MessagePack array of the values."""
    one = b"null" if first is None else first if type(first) is bytes else \
        str(first).encode()
    assert key_bytes([first, second], (0,)) == one
    assert key_bytes([first, second], (1, 0)) == msgspec.msgpack.encode([second, first])
