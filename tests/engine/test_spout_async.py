"""Acks and fails reach a spout task while its async ``next_tuple`` waits on its own input,
on virtual time."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from engine import Bolt, LocalCluster, Spout, TopologyBuilder
from engine.testing import VirtualTimePolicy, wait_until
from tests.engine.helpers import Failer


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()


class QueueSpout(Spout):
    """Emits what arrives on an ``asyncio.Queue``; records outcomes and when they came."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any, float, bool]] = []
        self.inbox: asyncio.Queue[Any] | None = None
        self.waiting = [False]

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["v"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    async def next_tuple(self) -> None:
        assert self.inbox is not None
        self.waiting[0] = True
        item = await self.inbox.get()
        self.waiting[0] = False
        self.collector.emit([item], msg_id=item)

    def _record(self, kind: str, msg_id: Any) -> None:
        now = asyncio.get_running_loop().time()
        self.events.append((kind, msg_id, now, self.waiting[0]))

    def ack(self, msg_id: Any) -> None:
        self._record("ack", msg_id)

    def fail(self, msg_id: Any) -> None:
        self._record("fail", msg_id)


class Acker(Bolt):
    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.ack(tup)


def topology(spout: Spout, bolt: Bolt) -> Any:
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("b", bolt).shuffle_grouping("s")
    return b.create_topology()


async def test_the_last_item_is_acked_while_next_tuple_waits() -> None:
    spout = QueueSpout()
    spout.inbox = asyncio.Queue()
    for i in range(3):
        spout.inbox.put_nowait(i)
    clock = asyncio.get_running_loop().time
    async with LocalCluster() as cluster:
        start = clock()
        await cluster.submit_topology("t", {}, topology(spout, Acker()))
        await wait_until(lambda: len(spout.events) == 3, timeout=5)
        assert clock() - start < 0.1  # not held until next_tuple returns (it never does)
        assert cluster.stats("t")["components"]["s"]["acked"] == 3
    assert [e[:2] for e in spout.events] == [("ack", 0), ("ack", 1), ("ack", 2)]
    assert spout.events[-1][3]  # delivered while next_tuple was suspended


async def test_a_fail_reaches_the_spout_while_next_tuple_waits() -> None:
    spout = QueueSpout()
    spout.inbox = asyncio.Queue()
    spout.inbox.put_nowait("x")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, topology(spout, Failer()))
        await wait_until(lambda: spout.events, timeout=0.5)
    assert [e[:2] for e in spout.events] == [("fail", "x")]


async def test_what_next_tuple_emitted_before_it_waits_is_sent_and_acked() -> None:
    class EmitThenWait(QueueSpout):
        async def next_tuple(self) -> None:
            assert self.inbox is not None
            self.collector.emit(["early"], msg_id="early")
            self.waiting[0] = True
            await self.inbox.get()  # never comes

    spout = EmitThenWait()
    spout.inbox = asyncio.Queue()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, topology(spout, Acker()))
        await wait_until(lambda: spout.events, timeout=0.5)
    assert [e[:2] for e in spout.events] == [("ack", "early")]


async def test_kill_while_next_tuple_waits_stops_cleanly() -> None:
    spout = QueueSpout()
    spout.inbox = asyncio.Queue()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, topology(spout, Acker()))
        await asyncio.sleep(1)
        await asyncio.wait_for(cluster.kill_topology("t"), 5)
    assert spout.events == []


async def test_a_killed_waiting_next_tuple_leaves_no_exception_being_handled() -> None:
    spout = QueueSpout()
    spout.inbox = asyncio.Queue()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", {}, topology(spout, Acker()))
        await asyncio.sleep(0.5)
    await asyncio.sleep(0.1)
    # Otherwise it becomes the __context__ of every later exception on this thread.
    assert sys.exc_info() == (None, None, None)
    try:
        raise ValueError("fresh")
    except ValueError as exc:
        assert exc.__context__ is None
