"""Reliability at the edges: waiting spouts, full queues, odd exceptions, repeated kills."""

from __future__ import annotations

import asyncio
from typing import Any

from engine import Bolt, FailedException, LocalCluster, Spout, TopologyBuilder
from engine.testing import CaptureBolt, FeederSpout, wait_until


class WaitingSpout(Spout):
    """An async spout that awaits its input, as an embedding service's queue invites."""

    def __init__(self, queue: asyncio.Queue[Any]) -> None:
        self.queue = queue
        self.events: list[tuple[str, Any]] = []
        self.calls_after_deactivate = 0

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["v"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.deactivated = False

    async def next_tuple(self) -> None:
        if self.deactivated:
            self.calls_after_deactivate += 1
        try:
            value = await asyncio.wait_for(self.queue.get(), 0.05)
        except TimeoutError:
            return
        self.collector.emit([value], msg_id=value)

    def deactivate(self) -> None:
        self.deactivated = True

    def ack(self, msg_id: Any) -> None:
        self.events.append(("ack", msg_id))

    def fail(self, msg_id: Any) -> None:
        self.events.append(("fail", msg_id))


async def test_user_cancelled_error_fails_the_tuple_and_the_bolt_goes_on() -> None:
    class Cancels(Bolt):
        def prepare(self, conf: Any, context: Any, collector: Any) -> None:
            self.collector = collector

        async def execute(self, tup: Any) -> None:
            if tup[0] == "boom":
                fut = asyncio.get_running_loop().create_future()
                fut.cancel()
                await fut
            self.collector.ack(tup)

    spout = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("c", Cancels()).shuffle_grouping("s")
    spout.feed(["boom"], msg_id=1)
    spout.feed(["ok"], msg_id=2)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, b.create_topology())
        await wait_until(lambda: len(spout.events) == 2)
        assert cluster.stats("t")["components"]["c"]["errors"] == 1
    assert sorted(spout.events) == [("ack", 2), ("fail", 1)]


async def test_concurrent_kills_close_once() -> None:
    calls: list[str] = []

    class Closing(FeederSpout):
        def close(self) -> None:
            calls.append("close")

    class Cleaning(CaptureBolt):
        def cleanup(self) -> None:
            calls.append("cleanup")

    b = TopologyBuilder()
    b.set_spout("s", Closing(["v"]))
    b.set_bolt("c", Cleaning()).shuffle_grouping("s")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, b.create_topology())
        await asyncio.gather(cluster.kill_topology("t", wait_secs=0.2),
                             cluster.kill_topology("t", wait_secs=0))
    assert calls == ["close", "cleanup"]


async def test_no_next_tuple_after_deactivate() -> None:
    queue: asyncio.Queue[Any] = asyncio.Queue()
    spout = WaitingSpout(queue)
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("c", CaptureBolt()).shuffle_grouping("s")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, b.create_topology())
        await asyncio.sleep(0.1)
        await cluster.kill_topology("t", wait_secs=0.3)
    assert spout.calls_after_deactivate <= 1  # at most the call already running


async def test_custom_grouping_is_asked_once_per_emit() -> None:
    asked: list[int] = []

    class Both:
        def prepare(self, context: Any, stream: str, targets: list[int]) -> None:
            self.targets = targets

        def choose_tasks(self, task_id: int, values: list[Any]) -> list[int]:
            asked.append(task_id)
            return self.targets

    class Relay(Bolt):
        def declare_output_fields(self, declarer: Any) -> None:
            declarer.declare(["v"])

        def prepare(self, conf: Any, context: Any, collector: Any) -> None:
            self.collector = collector

        def execute(self, tup: Any) -> None:
            self.collector.emit([tup[0]], anchors=tup)
            self.collector.ack(tup)

    spout, sink = FeederSpout(["v"]), CaptureBolt()
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("relay", Relay()).shuffle_grouping("s")
    b.set_bolt("sink", sink, 2).custom_grouping("relay", Both())
    spout.feed([1], msg_id=1)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, b.create_topology())
        await wait_until(lambda: spout.events)
    assert len(asked) == 1 and len(sink.captured) == 2
    assert spout.events == [("ack", 1)]


async def test_pending_counts_only_undecided_trees() -> None:
    class FailOneAckOther(Bolt):
        def declare_output_fields(self, declarer: Any) -> None:
            declarer.declare(["v"])

        def prepare(self, conf: Any, context: Any, collector: Any) -> None:
            self.collector = collector

        async def execute(self, tup: Any) -> None:
            self.collector.emit([1], anchors=tup)
            self.collector.fail(tup)  # the tree fails now; the child's ack comes later

    spout, sink = FeederSpout(["v"]), CaptureBolt()
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("f", FailOneAckOther()).shuffle_grouping("s")
    b.set_bolt("sink", sink).shuffle_grouping("f")
    spout.feed(["x"], msg_id="m")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, b.create_topology())
        await wait_until(lambda: spout.events and sink.captured)
        await asyncio.sleep(0.05)
        assert cluster.stats("t")["pending"] == 0
    assert spout.events == [("fail", "m")]


async def test_emit_returns_a_list_the_caller_may_change() -> None:
    class Mutating(Bolt):
        def declare_output_fields(self, declarer: Any) -> None:
            declarer.declare(["v"])

        def prepare(self, conf: Any, context: Any, collector: Any) -> None:
            self.collector = collector

        def execute(self, tup: Any) -> None:
            self.collector.emit([tup[0]], anchors=tup).append(999)
            self.collector.ack(tup)

    spout, sink = FeederSpout(["v"]), CaptureBolt()
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("m", Mutating()).shuffle_grouping("s")
    b.set_bolt("sink", sink).all_grouping("m")
    for i in range(3):
        spout.feed([i], msg_id=i)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, b.create_topology())
        await wait_until(lambda: len(spout.events) == 3)
    assert sorted(spout.events) == [("ack", 0), ("ack", 1), ("ack", 2)]


async def test_failed_exception_from_a_plain_bolt_counts_as_an_error() -> None:
    class Raises(Bolt):
        def execute(self, tup: Any) -> None:
            raise FailedException("no")

    spout = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("r", Raises()).shuffle_grouping("s")
    spout.feed([0], msg_id=0)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, b.create_topology())
        await wait_until(lambda: spout.events)
        assert cluster.stats("t")["components"]["r"]["errors"] == 1
    assert spout.events == [("fail", 0)]
