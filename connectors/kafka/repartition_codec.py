"""A repartition record's bytes: the tuple's values as a MessagePack array, and the key.

Guarantees:

- ``encode_row`` / ``decode_row`` carry exactly the types in ``CARRIED``, nested as deep as
  they come: what the reader decodes is what the writer had, type for type (a tuple stays
  a tuple, a set a set, a datetime keeps its tzinfo). The types MessagePack has (``None``,
  booleans, numbers, text, bytes, lists, dicts) are written as themselves; the others as
  MessagePack extension types (codes ``1`` to ``9`` below). Any other value, an int outside
  MessagePack's 64 bits or a tzinfo other than ``datetime.timezone`` or a
  ``zoneinfo.ZoneInfo`` with a key raises ``TypeError`` naming the field and the type.
- ``pack_rows`` joins encoded rows into one record value (a MessagePack extension, code
  ``10``, holding an array of the rows, made without decoding them); ``decode_rows`` gives
  the rows of either kind of value back, in order, and ``is_packed`` says which it was:
  a list of one row for a value ``encode_row`` made alone (as the hop wrote before it
  packed rows). The value says which it is, so a record keeps its meaning through the
  failed topic and a replay, which carry values, not headers.
- ``key_bytes`` gives the same bytes for the writer's values and for the reader's decoded
  ones, in any process: one field is its text (``str``; ``b"null"`` for None, bytes as they
  are; containers as their ``repr`` with each set's elements sorted), several fields a
  MessagePack array of them (tuples as arrays, sets sorted, the other types as their
  extension).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from decimal import Decimal
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo

import msgspec

__all__ = ["CARRIED", "DECODE_ERRORS", "decode_row", "decode_rows", "encode_row", "fields_key",
           "is_packed", "key_bytes", "pack_rows"]

Ext = msgspec.msgpack.Ext
_pack = msgspec.msgpack.Encoder().encode

CARRIED: tuple[type, ...] = (type(None), bool, int, float, str, bytes, list, tuple, dict,
                             set, frozenset, datetime, date, time, Decimal, UUID)
"""The types a repartition record carries (exact types: a subclass is refused)."""

_PLAIN = frozenset({str, int, float, bool, bytes, type(None)})  # MessagePack's own scalars
_NAMES = ", ".join("None" if t is type(None) else t.__name__ for t in CARRIED)

_TUPLE, _SET, _FROZENSET, _DICT, _DATETIME, _DATE, _TIME, _DECIMAL, _UUID, _ROWS = range(1, 11)
_MICROSECOND = timedelta(microseconds=1)


class _Refused(TypeError):
    """A value the hop cannot carry; ``args[0]`` says what it is."""


def _type_name(value: Any) -> str:
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else \
        f"{kind.__module__}.{kind.__qualname__}"


def _tz(zone: tzinfo | None) -> Any:
    """A tzinfo as MessagePack: None, a ZoneInfo's key, or a timezone's offset (µs) and
    name when it was given one."""
    if zone is None:
        return None
    if type(zone) is ZoneInfo and zone.key is not None:
        return zone.key
    if type(zone) is timezone:
        offset, *name = zone.__getinitargs__()  # type: ignore[attr-defined]
        return [offset // _MICROSECOND, *name]
    raise _Refused(f"a tzinfo of type {_type_name(zone)} (only datetime.timezone and "
                   f"zoneinfo.ZoneInfo with a key)")


def _untz(wire: Any) -> tzinfo | None:
    if wire is None:
        return None
    if type(wire) is str:
        return ZoneInfo(wire)
    return timezone(timedelta(microseconds=wire[0]), *wire[1:])


def _datetime(v: datetime) -> Ext:
    return Ext(_DATETIME, _pack((v.year, v.month, v.day, v.hour, v.minute, v.second,
                                 v.microsecond, v.fold, _tz(v.tzinfo))))


def _time(v: time) -> Ext:
    return Ext(_TIME, _pack((v.hour, v.minute, v.second, v.microsecond, v.fold,
                             _tz(v.tzinfo))))


_SCALARS: dict[type, Callable[[Any], Any]] = {
    datetime: _datetime,
    date: lambda v: Ext(_DATE, _pack(v.toordinal())),
    time: _time,
    Decimal: lambda v: Ext(_DECIMAL, str(v).encode("ascii")),
    UUID: lambda v: Ext(_UUID, v.bytes),
}


def _items(values: Any) -> list[Any]:
    plain = _PLAIN
    return [v if type(v) in plain else _wire(v) for v in values]


def _wire(value: Any) -> Any:
    """``value`` with every type MessagePack lacks as its extension (an int past 64 bits
    raises ``OverflowError`` when packed)."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is list:
        return _items(value)
    if kind is tuple:
        return Ext(_TUPLE, _pack(_items(value)))
    if kind is dict:
        if _PLAIN.issuperset(map(type, value)):
            return dict(zip(value, _items(value.values()), strict=True))
        # Keys MessagePack lacks become extensions, which a dict cannot hold: key, value pairs.
        return Ext(_DICT, _pack(_items(x for item in value.items() for x in item)))
    if kind is set or kind is frozenset:
        return Ext(_SET if kind is set else _FROZENSET, _pack(_items(value)))
    scalar = _SCALARS.get(kind)
    if scalar is None:
        raise _Refused(f"a value of type {_type_name(value)}")
    return scalar(value)


def encode_row(values: Sequence[Any], fields: Sequence[str]) -> bytes:
    """The record value of a tuple's ``values`` (named ``fields``); raises ``TypeError``
    naming the first field whose value the hop cannot carry."""
    plain = _PLAIN
    for value in values:  # a loop costs less than any C call for a row of a few values
        if type(value) not in plain:
            break
    else:  # the common row: MessagePack's own types
        try:
            return _pack(values)
        except OverflowError:
            pass  # an int past 64 bits: named below
    wired = []
    for field, value in zip(fields, values, strict=True):
        try:
            wired.append(_wire(value))
        except (_Refused, OverflowError) as exc:  # OverflowError: packing a tuple or set
            raise _refused(field, exc) from None
    try:
        return _pack(wired)
    except OverflowError as exc:
        field = next(f for f, w in zip(fields, wired, strict=True) if not _packs(w))
        raise _refused(field, exc) from None


def _packs(wired: Any) -> bool:
    try:
        _pack(wired)
    except OverflowError:
        return False
    return True


def _refused(field: str, exc: Exception) -> TypeError:
    what = exc.args[0] if isinstance(exc, _Refused) else \
        "an int outside MessagePack's range (-2**63 to 2**64 - 1)"
    return TypeError(f"field {field!r} holds {what}, which cannot cross the repartition hop "
                     f"(it carries {_NAMES})")


def _unwire(code: int, data: memoryview) -> Any:
    """The value of extension ``code`` (MessagePack's ``ext_hook``)."""
    if code == _TUPLE:
        return tuple(_unpack(data))
    if code == _SET:
        return set(_unpack(data))
    if code == _FROZENSET:
        return frozenset(_unpack(data))
    if code == _DICT:
        flat = _unpack(data)
        return dict(zip(flat[::2], flat[1::2], strict=True))
    if code == _DATETIME:
        year, month, day, hour, minute, second, micro, fold, zone = _unpack(data)
        return datetime(year, month, day, hour, minute, second, micro, _untz(zone), fold=fold)
    if code == _DATE:
        return date.fromordinal(_unpack(data))
    if code == _TIME:
        hour, minute, second, micro, fold, zone = _unpack(data)
        return time(hour, minute, second, micro, _untz(zone), fold=fold)
    if code == _DECIMAL:
        return Decimal(bytes(data).decode("ascii"))
    if code == _UUID:
        return UUID(bytes=bytes(data))
    raise ValueError(f"unknown MessagePack extension type {code}")


_unpack = msgspec.msgpack.Decoder(ext_hook=_unwire).decode
_unpack_rows = msgspec.msgpack.Decoder(list[list[Any]], ext_hook=_unwire).decode

decode_row: Callable[[bytes], Any] = _unpack
"""What ``encode_row`` encoded (a list of the values); raises one of ``DECODE_ERRORS``
for bytes it did not write."""

def is_packed(value: bytes) -> bool:
    """Whether ``value`` is what ``pack_rows`` made (else, at most, one row alone)."""
    return len(value) > 5 and value[0] == 0xC9 and value[5] == _ROWS


def decode_rows(value: bytes) -> list[list[Any]]:
    """The rows of a record value: every row of what ``pack_rows`` made, the one row of
    what ``encode_row`` made alone; raises one of ``DECODE_ERRORS`` for bytes neither
    made, or where a row is not an array (the rows' lengths are not checked)."""
    if is_packed(value):
        return _unpack_rows(memoryview(value)[6:])
    row = _unpack(value)
    if type(row) is not list:
        raise TypeError(f"a row is an array, not {type(row).__name__}")
    return [row]


def pack_rows(rows: Sequence[bytes]) -> bytes:
    """One value holding every row of ``rows`` (each as ``encode_row`` made it), in order:
    an extension (code 10) whose data is a MessagePack array of the rows' bytes."""
    n = len(rows)
    if n < 16:
        head = bytes((0x90 | n,))
    elif n < 0x10000:
        head = b"\xdc" + n.to_bytes(2, "big")
    else:
        head = b"\xdd" + n.to_bytes(4, "big")
    size = len(head) + sum(map(len, rows))
    return b"".join((b"\xc9", size.to_bytes(4, "big"), _ROWS_CODE, head, *rows))


_ROWS_CODE = bytes((_ROWS,))

DECODE_ERRORS = (msgspec.DecodeError, TypeError, ValueError, KeyError, OverflowError)
"""What ``decode_row`` raises for bytes that are not a row (a bad extension raises what
building its value raised: an unknown zone is a ``KeyError``)."""


def _text(value: Any) -> str:
    """``repr(value)``, with each set's elements in sorted order of their text."""
    kind = type(value)
    if kind is list:
        return f"[{', '.join(map(_text, value))}]"
    if kind is tuple:
        return f"({_text(value[0])},)" if len(value) == 1 else \
            f"({', '.join(map(_text, value))})"
    if kind is dict:
        return "{" + ", ".join(f"{_text(k)}: {_text(v)}" for k, v in value.items()) + "}"
    if kind is set or kind is frozenset:
        inner = ", ".join(sorted(map(_text, value)))
        if kind is set:
            return f"{{{inner}}}" if value else "set()"
        return f"frozenset({{{inner}}})" if value else "frozenset()"
    return repr(value)


def _key_wire(value: Any) -> Any:
    """``value`` as several fields' key carries it: tuples as arrays, as they always were;
    sets sorted; the other types MessagePack lacks as their extension."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is list or kind is tuple:
        return tuple(map(_key_wire, value))  # an array; a tuple stays a dict key
    if kind is dict:
        pairs = [(_key_wire(k), _key_wire(v)) for k, v in value.items()]
        try:
            return dict(pairs)
        except TypeError:  # a key holding an extension
            return Ext(_DICT, _pack([x for pair in pairs for x in pair]))
    if kind is set or kind is frozenset:
        members = sorted(_pack(_key_wire(v)) for v in value)
        return Ext(_SET if kind is set else _FROZENSET, b"".join(members))
    return _wire(value)


def fields_key(key: Sequence[Any]) -> bytes:
    """The record key of several grouping fields' values ``key``, in grouping order."""
    plain = _PLAIN
    for value in key:
        if type(value) not in plain:
            return _pack([_key_wire(v) for v in key])
    return _pack(key)


def key_bytes(values: Sequence[Any], at: Sequence[int]) -> bytes:
    """The record key of a tuple's ``values``: its grouping fields at ``at``."""
    if len(at) != 1:
        return fields_key([values[i] for i in at])
    value = values[at[0]]
    kind = type(value)
    if kind is str or kind is bytes:
        key: bytes = value.encode("utf-8") if kind is str else value
        return key
    if value is None:  # never a None key: Kafka spreads keyless records over partitions
        return b"null"
    if kind is list or kind is tuple or kind is dict or kind is set or kind is frozenset:
        return _text(value).encode("utf-8")
    return str(value).encode("utf-8")
