"""Record bytes to tuple values and back, per ``value_format`` ("str", "json", "bytes").

Decoding (spout side) raises ``DecodeError`` with a reason meant for the failed topic;
encoding (bolt side) raises ``TypeError``/``ValueError`` naming the field and format.
Keys are UTF-8 text for "str" and "json" (a JSON key is rare; a text key is the norm) and
raw bytes for "bytes".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

import orjson

__all__ = [
    "RECORD_FIELDS",
    "VALUE_FORMATS",
    "DecodeError",
    "Decoder",
    "check_value_format",
    "encode_key",
    "encode_value",
]

VALUE_FORMATS = ("str", "json", "bytes")

RECORD_FIELDS = ("topic", "partition", "offset", "key", "value", "timestamp", "headers")
"""Names a ``KafkaSpout`` may list in ``fields``; each is taken from the record."""


class DecodeError(ValueError):
    """A record's key or value is not valid for the spout's ``value_format``."""


def check_value_format(value_format: str) -> str:
    """Return ``value_format`` if valid, else raise ``ValueError`` listing the valid ones."""
    if value_format not in VALUE_FORMATS:
        raise ValueError(f"value_format must be one of {list(VALUE_FORMATS)}, "
                         f"got {value_format!r}")
    return value_format


def _decode_text(data: bytes | None, what: str) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(f"{what} is not valid UTF-8: {exc}") from None


def _decode_json(data: bytes | None, what: str) -> Any:
    if data is None:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"{what} is not valid JSON: {exc}") from None


def _raw(data: bytes | None, what: str) -> bytes | None:
    return data


class Decoder:
    """Turns a consumer record into the values of one tuple with the given ``fields``."""

    __slots__ = ("_extract", "_getter", "_raw")

    def __init__(self, fields: Sequence[str], value_format: str) -> None:
        check_value_format(value_format)
        unknown = [f for f in fields if f not in RECORD_FIELDS]
        if unknown or not fields:
            raise ValueError(f"fields must be a non-empty list of {list(RECORD_FIELDS)}, "
                             f"got {list(fields)!r}")
        key_codec = _raw if value_format == "bytes" else _decode_text
        value_codec = {"str": _decode_text, "json": _decode_json, "bytes": _raw}[value_format]
        value_what = f"value ({value_format})"
        by_name: dict[str, Callable[[Any], Any]] = {
            "topic": attrgetter("topic"),
            "partition": attrgetter("partition"),
            "offset": attrgetter("offset"),
            "key": lambda r: key_codec(r.key, "key"),
            "value": lambda r: value_codec(r.value, value_what),
            "timestamp": attrgetter("timestamp"),
            "headers": lambda r: list(r.headers or ()),
        }
        self._extract = [by_name[f] for f in fields]
        # Fields copied as they are (no decoding) come out of one attrgetter call.
        as_is = {"topic", "partition", "offset", "timestamp"}
        if value_format == "bytes":
            as_is |= {"key", "value"}
        self._raw: Callable[[Any], list[Any]] | None = None
        self._getter: Callable[[Any], Any] | None = None
        if set(fields) <= as_is:
            getter = attrgetter(*fields)
            if len(fields) == 1:
                self._raw = lambda r: [getter(r)]
            else:
                self._raw = lambda r: list(getter(r))
                self._getter = getter

    def __call__(self, record: Any) -> list[Any]:
        """The tuple values for ``record``; raises ``DecodeError`` for undecodable bytes."""
        if self._raw is not None:
            return self._raw(record)
        return [extract(record) for extract in self._extract]


    def many(self, records: list[Any]) -> list[list[Any]]:
        """``self(r)`` for each of ``records``, in one pass; raises ``DecodeError`` if any
        record does not decode (the caller then decodes them one by one)."""
        getter = self._getter
        if getter is not None:
            return [list(getter(r)) for r in records]
        raw = self._raw
        if raw is not None:
            return [raw(r) for r in records]
        extract = self._extract
        return [[f(r) for f in extract] for r in records]


def encode_key(key: Any) -> bytes | None:
    """Key bytes: ``None`` stays None, bytes as is, anything else as UTF-8 text of ``str``."""
    if key is None or isinstance(key, bytes):
        return key
    if isinstance(key, bytearray | memoryview):
        return bytes(key)
    return str(key).encode("utf-8")


def encode_value(value: Any, value_format: str) -> bytes | None:
    """Value bytes for ``value_format``; ``None`` is a tombstone (no value)."""
    if type(value) is bytes and value_format != "json":  # the common case first
        return value
    if value is None:
        return None
    if value_format == "json":
        return orjson.dumps(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if value_format == "bytes":
        raise TypeError(f"value_format 'bytes' needs bytes, got {type(value).__name__}")
    return str(value).encode("utf-8")
