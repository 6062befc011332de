"""The runner's verdict: which spouts' tuples were not fully processed, from final stats."""

from __future__ import annotations

from typing import Any

from engine.run_outcome import EXIT_NOT_PROCESSED, unprocessed, verdict


def _stats(metrics: dict[str, Any], failed: int = 0) -> dict[str, Any]:
    return {"metrics": {"src": {"1": metrics}}, "components": {"src": {"failed": failed}}}


def test_a_kafka_spout_that_dropped_records_fails_the_run() -> None:
    stats = _stats({"failed_topic_records": 0, "dropped": 4}, failed=9)
    assert unprocessed(stats, {"src": True}) == {"src": ("given up", 4)}
    status, line = verdict(stats, {"src": True})
    assert status == EXIT_NOT_PROCESSED
    assert line == ("not every tuple was fully processed (spout 'src': 4 given up); "
                    f"exit status {EXIT_NOT_PROCESSED}")


def test_a_replaying_spout_that_gave_nothing_up_passes_whatever_it_failed() -> None:
    stats = _stats({"failed_topic_records": 0, "dropped": 0}, failed=9)
    assert verdict(stats, {"src": True}) == (0, None)


def test_a_spout_that_reports_nothing_is_judged_by_its_fails() -> None:
    assert unprocessed(_stats({}, failed=2), {"src": True}) == {"src": ("failed", 2)}
    assert unprocessed(_stats({}, failed=2), {"src": False}) == {}
