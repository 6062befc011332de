"""Hypothesis strategies for the values a repartition hop carries, and an exact comparison."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, timezone
from types import SimpleNamespace
from typing import Any

from hypothesis import strategies as st

_DAY = timedelta(hours=23, minutes=59)
zones = st.one_of(
    st.none(),
    st.just(UTC),
    st.builds(timezone, st.timedeltas(-_DAY, _DAY)),
    st.builds(timezone, st.timedeltas(-_DAY, _DAY), st.text(min_size=1, max_size=5)),
    st.timezones(),
)


def _with_fold(value: Any, fold: int) -> Any:
    return value.replace(fold=fold)


_scalars_no_nan = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), st.floats(allow_nan=False),
    st.text(), st.binary(),
    st.builds(_with_fold, st.datetimes(timezones=zones), st.integers(0, 1)),
    st.dates(),
    st.builds(_with_fold, st.times(timezones=zones), st.integers(0, 1)),
    st.decimals(allow_nan=False), st.uuids(),
)
hashables = st.recursive(
    _scalars_no_nan,
    lambda inner: st.tuples(inner, inner) | st.lists(inner, max_size=3).map(tuple)
    | st.frozensets(inner, max_size=3),
    max_leaves=8,
)
"""Values a set or a dict key can hold."""

scalars = _scalars_no_nan | st.floats() | st.decimals()  # NaN, sNaN and infinities too
carried = st.recursive(
    scalars | hashables,
    lambda inner: st.lists(inner, max_size=3) | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(hashables | st.text(), inner, max_size=3)
    | st.sets(hashables, max_size=3) | st.frozensets(hashables, max_size=3),
    max_leaves=12,
)
"""Any value the hop carries, nested."""


def shape(value: Any) -> Any:
    """``value`` as a comparable structure telling apart what ``==`` does not: types (1,
    1.0, True; list and tuple), NaN, -0.0, a Decimal's exponent, a tzinfo and fold."""
    kind = type(value)
    if kind is list or kind is tuple:
        return kind.__name__, [shape(v) for v in value]
    if kind is dict:
        return "dict", [(shape(k), shape(v)) for k, v in value.items()]
    if kind is set or kind is frozenset:
        return kind.__name__, sorted(repr(shape(v)) for v in value)
    if kind is datetime or kind is time:
        return kind.__name__, repr(value), repr(value.tzinfo), value.fold
    if kind is date:
        return "date", value.toordinal()
    return kind.__name__, repr(value)


def one_row(value: bytes | None, offset: int = 0) -> Any:
    """A repartition record as written before rows were packed: one row alone."""
    return SimpleNamespace(value=value, offset=offset)


def packed(*rows: bytes | None, offset: int = 0) -> Any:
    """A repartition record carrying ``rows`` (each as ``encode_row`` made it)."""
    from connectors.kafka.repartition_codec import pack_rows

    return SimpleNamespace(value=pack_rows([r or b"" for r in rows]), offset=offset)
