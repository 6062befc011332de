"""The in-memory connectors: every item at least once, shared counters, odd task counts."""

from __future__ import annotations

import asyncio
from collections import Counter

from connectors.memory import CollectBolt, ListSpout, QueueSpout
from engine import LocalCluster, TopologyBuilder
from engine.testing import wait_until


async def test_list_spout_with_more_tasks_than_items_and_repeats() -> None:
    spout, sink = ListSpout([["a"], ["b"]], ["v"], repeat=2), CollectBolt()
    b = TopologyBuilder()
    b.set_spout("s", spout, 3)
    b.set_bolt("c", sink).shuffle_grouping("s")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, b.create_topology())
        await wait_until(lambda: cluster.finished("t"))
        assert cluster.stats("t")["components"]["s"]["errors"] == 0
    assert Counter(v[0] for v in sink.sink) == {"a": 2, "b": 2}
    assert sorted(spout.acked) == [(0, 0), (0, 1), (1, 0), (1, 1)]


async def test_queue_spout_counts_acks_over_all_tasks() -> None:
    queue: asyncio.Queue[list[int]] = asyncio.Queue()
    spout, sink = QueueSpout(queue, ["v"]), CollectBolt()
    b = TopologyBuilder()
    b.set_spout("s", spout, 2)
    b.set_bolt("c", sink).shuffle_grouping("s")
    for i in range(5):
        queue.put_nowait([i])
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, b.create_topology())
        await wait_until(lambda: spout.acked == 5)
    assert sorted(v[0] for v in sink.sink) == [0, 1, 2, 3, 4]
