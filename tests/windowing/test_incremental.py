"""The incremental form of a windowed bolt (``with_incremental()``), on virtual time: the
bolt keeps its count from ``get_new()`` and ``get_expired()``, ``get()`` is refused, and
every tuple is still acked once it expired from its last window."""

from __future__ import annotations

from typing import Any

import pytest

from engine import LocalCluster, TopologyBuilder
from engine.testing import VirtualTimePolicy, wait_until
from engine.windowing import BaseWindowedBolt, Duration, TupleWindow
from tests.windowing.test_flow_control import RATE, TOTAL, PacedSpout


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()


class RunningCount(BaseWindowedBolt):
    """The window's size kept from what entered and what left it."""

    def __init__(self, seen: list[tuple[int, int]], refused: list[str]) -> None:
        self.seen, self.refused = seen, refused

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.count = 0

    def execute(self, window: TupleWindow) -> None:
        self.count += len(window.get_new()) - len(window.get_expired())
        self.seen.append((self.count, len(window)))
        try:
            window.get()
        except RuntimeError as exc:
            self.refused.append(str(exc))


async def test_an_incremental_window_counts_from_what_entered_and_left() -> None:
    acked: set[int] = set()
    failed: list[int] = []
    seen: list[tuple[int, int]] = []
    refused: list[str] = []
    bolt = (RunningCount(seen, refused).with_window(Duration(10), Duration(1))
            .with_timestamp_field("ts").with_watermark_interval(Duration(0.01))
            .with_incremental())
    b = TopologyBuilder()
    b.set_spout("numbers", PacedSpout(acked, failed))
    b.set_bolt("window", bolt).shuffle_grouping("numbers")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("incremental", {"topology.message.timeout.secs": 60},
                                      b.create_topology())
        # All but the last ~11 s of event time leave the window once later tuples came.
        await wait_until(lambda: len(acked) >= TOTAL - 12 * RATE, timeout=60)
    assert failed == []
    assert seen and all(count == size for count, size in seen)
    assert max(size for _, size in seen) == 10 * RATE  # ten seconds' worth at the full window
    assert refused and "use get_new() and get_expired()" in refused[0]
