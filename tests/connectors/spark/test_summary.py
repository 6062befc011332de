"""The printed summary: totals, per reason, per topic, samples; counts line up."""

from __future__ import annotations

from connectors.spark.summary import Malformed, Planned, ReplaySummary, format_summary


def test_report_lists_totals_reasons_topics_and_malformed_samples() -> None:
    summary = ReplaySummary("failed", "g", dry_run=False, read=9, malformed=1, duplicates=2,
                            filtered=1, replayed=5, by_reason={"boom": 3, "timeout": 2},
                            by_topic={("orders", "orders"): 5},
                            malformed_samples=[Malformed(0, 4, "not JSON: oops")],
                            spark_startup_s=7.0, phases={"read": 3.0, "write": 9.96},
                            elapsed_s=20.0)
    assert format_summary(summary).splitlines() == [
        "replay of 'failed' for group 'g'",
        "",
        "totals",
        "  read                           9",
        "  malformed                      1",
        "  duplicates dropped             2",
        "  filtered out                   1",
        "  replayed                       5",
        "replayed, per reason",
        "  boom                           3",
        "  timeout                        2",
        "replayed, per topic",
        "  orders -> orders               5",
        "malformed records (first 1, failed[partition]@offset)",
        "  [0]@4: not JSON: oops",
        "took 20.0 s (Spark start-up 7.0 s, read 3.0 s, write 10.0 s)",
    ]


def test_dry_run_says_would_replay_and_lists_planned_records() -> None:
    summary = ReplaySummary("failed", "g", dry_run=True, read=1, replayed=1,
                            by_reason={"x" * 80: 1}, by_topic={("a", "b"): 1},
                            planned_samples=[Planned("a", 0, 3, "b", 2, "x" * 80)])
    text = format_summary(summary)
    assert "(dry run: nothing written)" in text
    assert "  would replay  " in text
    assert "  a[0]@3 -> b  attempts=2  reason=" + "x" * 39 + "…" in text
    assert "x" * 59 + "…" in text  # long reasons are cut in the table
    assert "Spark start-up" not in text


def test_skipped_records_are_listed_only_when_there_are_some() -> None:
    summary = ReplaySummary("failed", "g", dry_run=False, read=10, over_attempts=3,
                            truncated=1, replayed=6, max_attempts=5)
    lines = format_summary(summary).splitlines()
    assert "  skipped: over 5 attempts             3" in lines
    assert "  skipped: value truncated             1" in lines
    assert not any("skipped" in line for line in format_summary(
        ReplaySummary("failed", "g", dry_run=False, read=1, replayed=1)).splitlines())


def test_reasons_that_differ_in_their_values_are_one_line_with_an_example() -> None:
    """150 records, each failed with its own message: one line per kind of reason, not
    one per message."""
    by_reason = {f"ValueError: bad amount {i} at offset {1000 + i}": 1 for i in range(150)}
    by_reason["timeout"] = 30
    summary = ReplaySummary("failed", "g", dry_run=False, read=180, replayed=180,
                            by_reason=by_reason, by_topic={("orders", "orders"): 180})
    lines = format_summary(summary).splitlines()
    at = lines.index("replayed, per reason (151 distinct, in 2 kinds)")
    assert lines[at + 1:at + 5] == [
        "  ValueError: bad amount <n> at offset <n>           150",
        "    e.g. ValueError: bad amount 0 at offset 1000",
        "  timeout                                             30",
        "replayed, per topic",
    ]


def test_at_most_twenty_kinds_are_listed_and_the_rest_counted() -> None:
    by_reason = {f"Error{i}: boom": 100 - i for i in range(25)}
    lines = format_summary(ReplaySummary("failed", "g", dry_run=False,
                                         by_reason=by_reason)).splitlines()
    rows = lines[lines.index("replayed, per reason") + 1:-1]  # up to "took ..."
    assert len(rows) == 21 and rows[0].startswith("  Error0: boom")
    assert rows[-1].split() == ["5", "more", "kinds", str(sum(range(76, 81)))]
