"""The in-memory connectors: every item at least once, shared counters, odd task counts,
``QueueSpout.put`` resolving with its item's tree."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from connectors.memory import CollectBolt, ItemAbandoned, ItemFailed, ListSpout, QueueSpout
from engine import Bolt, LocalCluster, TopologyBuilder
from engine.testing import wait_until
from tests.engine.helpers import Hold


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


class FailOdd(Bolt):
    """Fails odd values, acks even ones; counts what it saw per value (shared)."""

    def __init__(self) -> None:
        self.seen: Counter[int] = Counter()

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.seen[tup[0]] += 1
        if tup[0] % 2:
            self.collector.fail(tup)
        else:
            self.collector.ack(tup)


def topology(spout: QueueSpout | ListSpout, bolt: Bolt, tasks: int = 1) -> Any:
    b = TopologyBuilder()
    b.set_spout("s", spout, tasks)
    b.set_bolt("b", bolt, 2).shuffle_grouping("s")
    return b.create_topology()


async def test_put_resolves_when_the_items_tree_is_acked() -> None:
    spout, hold = QueueSpout(asyncio.Queue(), ["v"]), Hold()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, topology(spout, hold))
        done = spout.put([1])
        await wait_until(lambda: len(hold.held) == 1)
        await asyncio.sleep(0.05)
        assert not done.done()  # processed by nobody yet: still pending
        collector, tup = hold.held[0]
        collector.ack(tup)
        assert await asyncio.wait_for(done, 5) is None
        assert spout.acked == 1


async def test_put_raises_on_the_final_fail_after_max_retries() -> None:
    spout, bolt = QueueSpout(asyncio.Queue(), ["v"], max_retries=2), FailOdd()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, topology(spout, bolt, tasks=2))
        ok, bad = spout.put([2]), spout.put([3])
        await asyncio.wait_for(ok, 5)
        with pytest.raises(ItemFailed, match=r"^QueueSpout item \[3\] failed after 3 "
                                             r"attempt\(s\)") as info:
            await asyncio.wait_for(bad, 5)
    assert info.value.values == [3] and info.value.attempts == 3
    assert bolt.seen == {2: 1, 3: 3}
    assert spout.acked == 1


async def test_put_result_may_be_ignored_and_plain_queue_items_still_work() -> None:
    queue: asyncio.Queue[list[int]] = asyncio.Queue()
    spout, sink = QueueSpout(queue, ["v"]), CollectBolt()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, topology(spout, sink, tasks=3))
        spout.put([1])                 # result ignored
        queue.put_nowait([2])          # the old way
        last = spout.put([3])
        await asyncio.wait_for(last, 5)
        await wait_until(lambda: spout.acked == 3)
    assert sorted(v[0] for v in sink.sink) == [1, 2, 3]


async def test_put_raises_item_abandoned_when_the_topology_stops_first() -> None:
    spout, hold = QueueSpout(asyncio.Queue(), ["v"]), Hold()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, topology(spout, hold))
        pending = spout.put([1])
        await wait_until(lambda: len(hold.held) == 1)
        final = await cluster.kill_topology("t", wait_secs=0.05)
    assert final["abandoned"] == 1
    with pytest.raises(ItemAbandoned, match="in flight when the topology stopped"):
        await pending


async def test_finish_makes_the_spout_exhausted_and_wait_returns() -> None:
    spout, sink = QueueSpout(asyncio.Queue(), ["v"]), CollectBolt()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, topology(spout, sink, tasks=2))
        futures = [spout.put([i]) for i in range(20)]
        spout.finish()
        with pytest.raises(RuntimeError, match="after finish"):
            spout.put([99])
        await asyncio.wait_for(cluster.wait("t"), 5)
        assert all(f.done() and f.exception() is None for f in futures)
        assert cluster.finished("t")
    assert sorted(v[0] for v in sink.sink) == list(range(20))


def test_max_retries_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="max_retries must be >= 0 or None, got -1"):
        QueueSpout(asyncio.Queue(), ["v"], max_retries=-1)


async def test_list_spout_gives_up_an_item_after_max_retries_and_ends(
        caplog: pytest.LogCaptureFixture) -> None:
    spout, bolt = ListSpout([[1], [2], [3], [4]], ["v"], max_retries=2), FailOdd()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, topology(spout, bolt, tasks=2))
        await asyncio.wait_for(cluster.wait("t"), 5)
        stats = cluster.stats("t")
    assert bolt.seen == {1: 3, 2: 1, 3: 3, 4: 1}
    assert spout.given_up == 2 and sorted(spout.acked) == [(0, 1), (0, 3)]
    assert sum(m["given_up"] for m in stats["metrics"]["s"].values()) == 2
    lines = [r.getMessage() for r in caplog.records if "gave up" in r.getMessage()]
    # Task 1 takes items 0 and 2, both odd: one line, the second give-up is counted for
    # the next line (at most one per 10 s).
    assert len(lines) == 1 and lines[0] in (
        f"ListSpout 's' task 1: gave up item [{v}] after 3 attempts (max_retries=2): failed "
        f"by b" for v in (1, 3))


def test_list_spout_replays_ten_times_by_default_and_checks_max_retries() -> None:
    assert ListSpout([[1]], ["v"]).max_retries == 10
    assert ListSpout([[1]], ["v"], max_retries=None).max_retries is None
    with pytest.raises(ValueError, match=r"^ListSpout: max_retries must be >= 0 or None, "
                                         r"got -1$"):
        ListSpout([[1]], ["v"], max_retries=-1)
