"""Each parsed failed-topic row's fate, decided in process with Arrow: the twin of the
Spark job's ``replay._fated``, for runs that do not start Spark.

The rules are the job's (module docstring of ``replay``): among valid rows with the same
original ``(topic, partition, offset)`` the latest (by ``failed_at``, then ``attempts``,
then position in the failed topic; nulls last) is kept and the others are duplicates;
then, in this order, over ``max_attempts``, value truncated, filtered out. Nulls in a
condition count as false, as they do in Spark SQL's ``CASE WHEN``.
"""

from __future__ import annotations

from functools import reduce

import pyarrow as pa
import pyarrow.compute as pc

from connectors.spark.options import ReplayOptions
from connectors.spark.tally import Fate

__all__ = ["fated"]

_COORDINATES = ("topic", "partition", "offset")
_LATEST_FIRST = [(c, "ascending") for c in _COORDINATES] + [
    (c, "descending") for c in ("failed_at", "attempts", "failed_partition", "failed_offset")]


def _first_of_coordinates(table: pa.Table) -> pa.Array:
    """True for the first row of each run of equal coordinates (``table`` is sorted)."""
    coordinates = list(zip(*(table.column(c).to_pylist() for c in _COORDINATES), strict=True))
    return pa.array([i == 0 or here != coordinates[i - 1]
                     for i, here in enumerate(coordinates)], pa.bool_())


def _kept_by_filters(table: pa.Table, options: ReplayOptions) -> pa.Array | pa.ChunkedArray:
    keep: pa.Array | pa.ChunkedArray = pa.repeat(pa.scalar(True), table.num_rows)
    if options.reasons:
        keep = reduce(pc.or_kleene, (pc.match_substring(table.column("reason"), r)
                                     for r in options.reasons))
    if options.since_ms is not None:
        keep = pc.and_kleene(keep, pc.greater_equal(table.column("failed_at"),
                                                    options.since_ms))
    return keep


def fated(parsed: pa.Table, options: ReplayOptions) -> pa.Table:
    """Every row of ``parsed`` (``parse.PARSED_SCHEMA``) with ``_fate`` (a ``Fate``),
    ``_target`` and ``_first`` (the first failure's epoch ms), as the Spark job adds them."""
    # Nulls sort last (Arrow's default, as in Spark's descending order).
    table = parsed.take(pc.sort_indices(parsed, sort_keys=_LATEST_FIRST))
    conditions = [
        pc.is_valid(table.column("error")),
        pc.invert(_first_of_coordinates(table)),
        pc.greater(table.column("attempts"), options.max_attempts),
        pc.fill_null(table.column("value_truncated"), False),
        pc.invert(_kept_by_filters(table, options)),
    ]
    fates = [int(f) for f in (Fate.MALFORMED, Fate.DUPLICATE, Fate.OVER_ATTEMPTS,
                              Fate.TRUNCATED, Fate.FILTERED, Fate.REPLAY)]
    fate = pc.case_when(pc.make_struct(*conditions, field_names=[str(i) for i in range(5)]),
                        *(pa.scalar(f, pa.int32()) for f in fates))
    target = (pa.repeat(pa.scalar(options.target_topic), table.num_rows)
              if options.target_topic else table.column("topic"))
    first = pc.coalesce(table.column("first_failed_at"), table.column("failed_at"))
    return table.append_column("_fate", fate).append_column("_target", target).append_column(
        "_first", first)
