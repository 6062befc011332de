"""KafkaBolt.execute_batch: the record of each tuple (key and value fields, encoded), the
field positions taken per stream layout, a tuple whose record cannot be made failing alone."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from connectors.kafka import KafkaBolt
from engine.tuples import Fields, Source, Tuple


def _bolt(**options: Any) -> tuple[KafkaBolt, list[tuple[Any, Any, Any]], list[Any]]:
    bolt = KafkaBolt("out", "localhost:1", **options)
    sent: list[tuple[Any, Any, Any]] = []
    failed: list[Any] = []
    bolt._sender = SimpleNamespace(  # type: ignore[assignment]
        add_nowait=lambda key, value, tup: sent.append((key, value, tup)) or True)
    bolt._sent = 0
    bolt._collector = SimpleNamespace(component="out", report_error=lambda exc: None,
                                      fail_with=lambda tup, reason: failed.append(tup))
    return bolt, sent, failed


def _tuple(fields: Fields, values: list[Any]) -> Tuple:
    return Tuple(values, Source("split", 1, "default", fields), 2)


def test_each_stream_layout_gives_its_own_key_and_value() -> None:
    bolt, sent, _ = _bolt(key_field="key", value_field="value", value_format="str")
    one, other = Fields(["key", "value"]), Fields(["value", "n", "key"])
    batch = [_tuple(one, ["a", "x"]), _tuple(other, ["y", 1, b"b"]), _tuple(one, [None, "z"])]
    bolt.execute_batch(batch)
    assert [(k, v) for k, v, _ in sent] == [(b"a", b"x"), (b"b", b"y"), (None, b"z")]
    assert [t for _, _, t in sent] == batch
    assert bolt._sent == 3


def test_a_tuple_without_the_value_field_fails_alone() -> None:
    bolt, sent, failed = _bolt(key_field="key", value_field="value", value_format="bytes")
    good, bad = _tuple(Fields(["key", "value"]), [b"k", b"v"]), _tuple(Fields(["key"]), [b"k"])
    bolt.execute_batch([bad, good, bad])
    assert [(k, v) for k, v, _ in sent] == [(b"k", b"v")]
    assert failed == [bad, bad]


def test_bytes_format_refuses_a_str_value_and_json_values_are_encoded() -> None:
    bolt, sent, failed = _bolt(value_field="value", value_format="bytes")
    bad = _tuple(Fields(["value"]), ["text"])
    bolt.execute_batch([bad])
    assert failed == [bad] and not sent
    bolt, sent, _ = _bolt(value_field="value", value_format="json")
    bolt.execute_batch([_tuple(Fields(["value"]), ["x"]), _tuple(Fields(["value"]), [{"a": 1}])])
    assert [v for _, v, _ in sent] == [b'"x"', b'{"a":1}']
