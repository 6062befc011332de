"""A windowed bolt that keeps its count from ``get_new()`` and ``get_expired()``, on virtual
time, with ``with_incremental()`` or without: ``get()`` still lists the window when asked,
and every tuple is still acked once it expired from its last window."""

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

    def __init__(self, seen: list[tuple[int, int]], listed: list[int]) -> None:
        self.seen, self.listed = seen, listed

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.count = 0

    def execute(self, window: TupleWindow) -> None:
        self.count += len(window.get_new()) - len(window.get_expired())
        self.seen.append((self.count, len(window)))
        if len(self.seen) % 7 == 0:
            self.listed.append(len(window.get()) - len(window))


@pytest.mark.parametrize("incremental", [True, False])
async def test_a_window_counts_from_what_entered_and_left(incremental: bool) -> None:
    acked: set[int] = set()
    failed: list[int] = []
    seen: list[tuple[int, int]] = []
    listed: list[int] = []
    bolt = (RunningCount(seen, listed).with_window(Duration(10), Duration(1))
            .with_timestamp_field("ts"))
    if incremental:
        bolt.with_incremental()
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
    assert listed and set(listed) == {0}  # get() lists as many as len() counts
