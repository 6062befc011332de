"""BatchQueue: bounded in tuples, not batches; a batch larger than the bound still enters an
empty queue; every waiting producer looks again when room is made."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine.queues import BatchQueue, StampedQueue
from engine.testing import VirtualTimePolicy


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()


def test_the_bound_counts_tuples() -> None:
    q = BatchQueue(10)
    q.put_nowait([1, 2, 3])
    q.put_nowait([4, 5, 6, 7])
    s = q.stats()
    assert (s.size, s.batches, s.maxsize, s.peak) == (7, 2, 10, 7)
    assert q.fits(3) and not q.fits(4)
    assert q.full()  # no room for another batch as large as the latest (4 tuples)
    assert q.get_nowait() == [1, 2, 3]
    assert q.count == 4 and q.fits(6) and not q.full()


async def test_put_waits_until_the_batch_fits() -> None:
    q = BatchQueue(10)
    await q.put(list(range(8)))
    put = asyncio.create_task(q.put([8, 9, 10]))
    await asyncio.sleep(0)
    assert not put.done() and q.stats().blocked_putters == 1
    assert q.get_nowait() == list(range(8))
    await asyncio.wait_for(put, 1)
    assert q.count == 3


async def test_a_batch_larger_than_the_bound_enters_an_empty_queue() -> None:
    q = BatchQueue(4)
    await asyncio.wait_for(q.put(list(range(100))), 1)  # no deadlock
    assert q.count == 100 and q.full()
    put = asyncio.create_task(q.put([1]))
    await asyncio.sleep(0)
    assert not put.done()  # the queue is over its bound: nothing more until it drains
    q.get_nowait()
    await asyncio.wait_for(put, 1)


async def test_room_wakes_every_producer_that_now_fits() -> None:
    q = BatchQueue(10)
    await q.put(list(range(10)))
    puts = [asyncio.create_task(q.put([i])) for i in range(3)]
    await asyncio.sleep(0)
    q.get_nowait()
    await asyncio.wait_for(asyncio.gather(*puts), 1)
    assert q.count == 3 and q.stats().batches == 3


async def test_wake_returns_a_waiting_consumer_with_nothing() -> None:
    q = BatchQueue(10)
    waiting = asyncio.create_task(q.wait(None))
    await asyncio.sleep(0)
    q.wake()
    assert await asyncio.wait_for(waiting, 1) is False


async def test_bolt_queue_holds_at_most_its_bound_in_tuples() -> None:
    from engine import Bolt, Config, LocalCluster, TopologyBuilder
    from engine.testing import FeederSpout, wait_until

    class Gate(Bolt):
        def __init__(self) -> None:
            self.open = asyncio.Event()
            self.seen: list[Any] = []  # shared by the copy the engine runs

        def prepare(self, conf: Any, context: Any, collector: Any) -> None:
            self.collector = collector

        async def execute(self, tup: Any) -> None:
            await self.open.wait()
            self.seen.append(tup[0])
            self.collector.ack(tup)

    spout, gate = FeederSpout(["v"]), Gate()
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("gate", gate).shuffle_grouping("s")
    for i in range(300):
        spout.feed([i], msg_id=i)
    conf = Config({"topology.executor.receive.buffer.size": 150,
                   "topology.spout.flow.control": False})  # the queue alone bounds it
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf, b.create_topology())
        await asyncio.sleep(0.5)
        (queue,) = [e["queue"] for e in cluster.stats("t")["executors"]
                    if e["component"] == "gate"]
        # One round of 100 in execute, one in the queue; the third does not fit (in batches,
        # all three would).
        assert (queue["size"], queue["batches"]) == (100, 1) and queue["peak"] <= 150
        gate.open.set()
        await wait_until(lambda: len(spout.acked()) == 300, timeout=10)
    assert sorted(gate.seen) == list(range(300))


async def test_a_stamped_queue_tells_when_the_batch_taken_was_put() -> None:
    clock = iter([1.0, 2.5, 4.0]).__next__
    q = StampedQueue(10, clock)
    q.put_nowait(["a"])
    await q.put(["b"])
    assert await q.get() == ["a"] and q.sent_at == 1.0
    q.put_nowait(["c"])
    assert q.get_nowait() == ["b"] and q.sent_at == 2.5
    assert await q.get() == ["c"] and q.sent_at == 4.0
    assert q.get_nowait() is None and q.sent_at == 4.0
