"""Tallies from writing tasks merge into the same summary whatever the split of rows."""

from __future__ import annotations

import random

from connectors.spark.summary import SAMPLE_ROWS, Malformed, Planned, ReplaySummary
from connectors.spark.tally import Fate, Tally


def _task(rows: list[tuple[int, int]]) -> Tally:
    """The tally of one task over ``(fate, offset)`` rows, as the sink builds it."""
    tally = Tally()
    for fate, offset in rows:
        tally.count(fate, 1)
        if fate == Fate.MALFORMED:
            tally.sample(malformed=[(offset % 2, offset, f"bad {offset}")])
        if fate == Fate.REPLAY:
            reason = "boom" if offset % 3 else "timeout"
            tally.by_reason[reason] = tally.by_reason.get(reason, 0) + 1
            tally.by_topic[("orders", "orders")] = tally.by_topic.get(("orders", "orders"), 0) + 1
            tally.sample(planned=[("orders", 0, offset, "orders", 4, reason)])
    return tally


def _summary(tally: Tally) -> ReplaySummary:
    summary = ReplaySummary("failed", "g", dry_run=True)
    tally.fill(summary)
    return summary


def test_merged_tallies_do_not_depend_on_how_rows_were_split() -> None:
    rows = [(offset % len(Fate), offset) for offset in range(400)]
    whole = _summary(_task(rows))
    shuffled = rows[:]
    random.Random(7).shuffle(shuffled)
    parts = [_task(shuffled[i::5]) for i in range(5)]
    merged = Tally()
    for part in reversed(parts):
        merged.add(part)
    assert _summary(merged) == whole

    per_fate = 400 // len(Fate) + 1  # fates 0..3 get 67 rows, 4 and 5 get 66
    assert (whole.read, whole.malformed, whole.duplicates, whole.over_attempts) == (
        400, per_fate, per_fate, per_fate)
    assert (whole.truncated, whole.filtered, whole.replayed) == (per_fate, 66, 66)
    assert whole.read == (whole.malformed + whole.duplicates + whole.over_attempts
                          + whole.truncated + whole.filtered + whole.replayed)
    assert sum(whole.by_reason.values()) == whole.replayed
    assert whole.malformed_samples == [Malformed(o % 2, o, f"bad {o}")
                                       for o in range(0, 6 * SAMPLE_ROWS, 6)]
    assert [p.offset for p in whole.planned_samples] == list(range(5, 6 * SAMPLE_ROWS, 6))
    assert isinstance(whole.planned_samples[0], Planned)


def test_an_empty_tally_fills_zeros() -> None:
    summary = _summary(Tally().add(Tally()))
    assert (summary.read, summary.replayed, summary.malformed_samples) == (0, 0, [])
