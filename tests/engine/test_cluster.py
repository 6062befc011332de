"""``LocalCluster.wait`` and what ``kill_topology`` reports after its drain."""

from __future__ import annotations

import asyncio
import logging

import pytest

from connectors.memory import ListSpout
from engine import LocalCluster, TopologyBuilder, TopologyError
from engine.testing import CaptureBolt, FeederSpout
from tests.engine.helpers import Hold, SlowAck


def finite(bolt: object, n: int = 30) -> object:
    b = TopologyBuilder()
    b.set_spout("s", ListSpout([[i] for i in range(n)], ["n"]), 2)
    b.set_bolt("b", bolt, 2).shuffle_grouping("s")
    return b.create_topology()


async def test_wait_returns_once_exhausted_spouts_have_nothing_pending() -> None:
    bolt = SlowAck(0.01)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, finite(bolt))
        assert not cluster.finished("t")
        await asyncio.wait_for(cluster.wait("t"), 10)
        assert cluster.finished("t")
        stats = cluster.stats("t")
        assert stats["components"]["s"]["acked"] == 30
        assert stats["spout_pending"] == 0


async def test_wait_returns_when_the_topology_is_killed_meanwhile() -> None:
    hold = Hold()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, finite(hold, n=3))
        waiter = asyncio.create_task(cluster.wait("t"))
        await asyncio.sleep(0.05)
        assert not waiter.done()  # three trees held: not done
        await cluster.kill_topology("t")
        await asyncio.wait_for(waiter, 5)


async def test_wait_refuses_a_spout_that_can_never_be_exhausted() -> None:
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["v"]))
    b.set_bolt("c", CaptureBolt()).shuffle_grouping("feeder")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, b.create_topology())
        with pytest.raises(TopologyError, match=r"spout 'feeder' has no exhausted\(\)"):
            await cluster.wait("t")
        with pytest.raises(TopologyError, match=r"topology 'nope': not running"):
            await cluster.wait("nope")


async def test_kill_returns_final_stats_and_warns_about_abandoned_trees(
        caplog: pytest.LogCaptureFixture) -> None:
    hold = Hold()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, finite(hold, n=4))
        while len(hold.held) < 4:
            await asyncio.sleep(0.01)
        hold.held[0][0].ack(hold.held[0][1])
        with caplog.at_level(logging.WARNING, logger="engine.cluster"):
            final = await cluster.kill_topology("t", wait_secs=0.05)
    assert final["abandoned"] == 3
    assert final["components"]["s"]["acked"] == 1
    assert [r.getMessage() for r in caplog.records] == [
        "topology 't': drain timed out after 0.05 s; 3 tracked trees abandoned (their "
        "spouts heard neither ack nor fail)"]


async def test_kill_after_a_complete_drain_abandons_nothing_and_says_nothing(
        caplog: pytest.LogCaptureFixture) -> None:
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, finite(SlowAck(0.0), n=5))
        await cluster.wait("t")
        with caplog.at_level(logging.WARNING, logger="engine.cluster"):
            final = await cluster.kill_topology("t", wait_secs=1)
    assert final["abandoned"] == 0
    assert caplog.records == []
