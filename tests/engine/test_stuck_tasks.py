"""A stuck task does not stall its neighbours; a blocked loop still fails trees in time.

On virtual time: hung calls, deadlines and timeouts cost no real seconds.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from engine import Bolt, Config, LocalCluster, Spout, TopologyBuilder
from engine.failure import FailReason
from engine.grouping import SHUFFLE_CYCLE, ShuffleGrouper
from engine.outbox import HOLD_MAX, HOLD_STUCK_MAX, Outbox
from engine.queue_watch import QueueWatch
from engine.queues import BatchQueue
from engine.spout_executor import SPOUT_ROUND
from engine.testing import FeederSpout, VirtualTimePolicy, wait_until
from engine.tuples import Fields, Source, Tuple


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()


class Counting(Spout):
    """Emits ids 0, 1, ... as tracked trees; records fails with their reasons."""

    def __init__(self) -> None:
        self.fails: list[tuple[Any, FailReason]] = []
        self.acks: list[Any] = []

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector, self.n = collector, 0

    def next_tuple(self) -> None:
        self.collector.emit([self.n], msg_id=self.n)
        self.n += 1

    def ack(self, msg_id: Any) -> None:
        self.acks.append(msg_id)

    def fail(self, msg_id: Any, reason: FailReason) -> None:
        self.fails.append((msg_id, reason))


class HangsOnce(Bolt):
    """Task index 0 hangs on its first tuple (``await asyncio.sleep(3600)``); every other
    call takes 10 ms. ``done`` counts executions per task index."""

    def __init__(self) -> None:
        self.done: dict[int, int] = {0: 0, 1: 0}
        self.hung: list[Any] = []

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector, self.index = collector, context.task_index

    async def execute(self, tup: Any) -> None:
        if self.index == 0 and not self.hung:
            self.hung.append(tup[0])
            await asyncio.sleep(3600)
        await asyncio.sleep(0.01)
        self.done[self.index] += 1
        self.collector.ack(tup)


def hung_topology(spout: Spout, bolt: Bolt, **conf: Any) -> tuple[Any, Config]:
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("work", bolt, 2).shuffle_grouping("s")
    c = Config({"topology.message.timeout.secs": 30, "topology.max.spout.pending": 2000,
                "topology.executor.receive.buffer.size": 4})
    c.update(conf)
    return b.create_topology(), c


async def test_a_hung_task_does_not_stall_its_neighbour_and_is_cancelled_at_the_timeout(
        caplog: pytest.LogCaptureFixture) -> None:
    spout, bolt = Counting(), HangsOnce()
    topology, conf = hung_topology(spout, bolt)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf, topology)
        await asyncio.sleep(5)
        before = bolt.done[1]
        await asyncio.sleep(10)
        during = bolt.done[1] - before
        stalled = cluster.stats("t")["stalled"]
        assert bolt.done[0] == 0
        await asyncio.sleep(20)  # past the 30 s deadline: the call is cancelled
        assert bolt.done[0] > 0  # its executor went on
        assert cluster.stats("t")["components"]["work"]["errors"] == 1
    assert during >= 0.5 * 10 / 0.01  # at least half of the neighbour's capacity
    states = {(s["component"], s["state"]) for s in stalled}
    assert ("work", "hung") in states
    assert ("work", "queue_full") in states
    hung_lines = [r for r in caplog.records if "execute() has not returned" in r.getMessage()]
    assert hung_lines and all(r.levelno == logging.WARNING for r in hung_lines)
    assert len(hung_lines) <= 3  # one per 10 s interval: at 5, 15 and 25 s
    assert "bolt 'work'" in hung_lines[0].getMessage()
    reasons = dict(spout.fails)
    assert reasons[bolt.hung[0]].kind == "timeout"  # the hung tuple's tree timed out


async def test_the_execute_deadline_fails_the_tuple_with_a_reason_and_moves_on() -> None:
    spout, bolt = Counting(), HangsOnce()
    topology, conf = hung_topology(spout, bolt, **{"topology.bolt.execute.timeout.secs": 5})
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf, topology)
        await wait_until(lambda: spout.fails, timeout=10)
        await wait_until(lambda: bolt.done[0] > 10, timeout=5)
    msg_id, reason = spout.fails[0]
    assert msg_id == bolt.hung[0]
    assert reason.kind == "error"
    assert reason.message == "TimeoutError: execute did not return within 5 s; cancelled"
    assert reason.component == "work"


async def test_no_deadline_when_it_is_zero() -> None:
    spout, bolt = Counting(), HangsOnce()
    topology, conf = hung_topology(spout, bolt, **{"topology.bolt.execute.timeout.secs": 0})
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf, topology)
        await asyncio.sleep(65)
        assert bolt.done[0] == 0
        assert bolt.done[1] > 1000


async def test_a_tree_in_a_task_that_blocked_the_loop_fails_after_the_block() -> None:
    class Blocks(Bolt):
        def prepare(self, conf: Any, context: Any, collector: Any) -> None:
            self.collector = collector

        def execute(self, tup: Any) -> None:
            asyncio.get_running_loop().advance(5)  # a sync call holding the loop 5 s
            self.collector.ack(tup)

    spout = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("block", Blocks()).shuffle_grouping("s")
    clock = asyncio.get_running_loop().time
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", Config({"topology.message.timeout.secs": 3}),
                                      b.create_topology())
        spout.feed(["x"], msg_id="x")
        start = clock()
        await wait_until(lambda: spout.events, timeout=10)
        elapsed = clock() - start
    assert spout.events == [("fail", "x")]
    assert elapsed < 5 + 1


async def test_shuffle_routes_around_full_queues_and_stuck_ones_when_all_are_full() -> None:
    queues = [BatchQueue(1), BatchQueue(1), BatchQueue(1)]
    watch = QueueWatch(queues, secs=1.0)
    g = ShuffleGrouper([1, 2, 3])
    g.watch(watch, [0, 1, 2])  # task 1 on queue 0, ...
    cycle = SHUFFLE_CYCLE

    def picks() -> list[int]:  # what the rotation sends after its next look at the queues
        return [g.choose(())[0] for _ in range(2 * cycle)][cycle:]

    assert sorted(set(picks())) == [1, 2, 3]
    queues[1].put_nowait([None])  # task 2's queue is full
    later = picks()
    assert sorted(set(later)) == [1, 3]
    assert abs(later.count(1) - later.count(3)) <= 1
    queues[0].put_nowait([None])
    queues[2].put_nowait([None])  # all full, none seen stuck yet: every target
    assert set(picks()) == {1, 2, 3}
    await asyncio.sleep(1.5)
    queues[0].get_nowait()
    queues[0].put_nowait([None])  # queue 0 took a batch: busy, not stuck
    assert set(picks()) == {1}  # queues 1 and 2 kept their head for 1.5 s: stuck
    assert watch.stuck(2) and not watch.stuck(0)
    queues[1].get_nowait()  # task 2 has room again
    assert set(picks()) == {2}


async def test_the_outbox_holds_a_small_batch_for_a_full_queue_and_sends_it_in_order_later(
) -> None:
    full, free = BatchQueue(1), BatchQueue(1)
    full.put_nowait(["old"])
    outbox = Outbox([full, free], [0, 0, 1], [], QueueWatch([full, free]))
    outbox.push(0, _tup("a"))
    outbox.push(2, _tup("b"))
    await outbox.flush()  # returns at once: nothing waits on the full queue
    assert [t[0] for t in free.get_nowait()] == ["b"]
    assert outbox.buffered() == {0: 1}
    outbox.push(1, _tup("c"))
    assert full.get_nowait() == ["old"]
    await outbox.flush()
    assert [t[0] for t in full.get_nowait()] == ["a", "c"]
    assert not outbox.holding()


async def test_a_large_batch_waits_for_room_unless_the_queue_is_stuck() -> None:
    full = BatchQueue(1)
    full.put_nowait(["old"])
    watch = QueueWatch([full], secs=1.0)
    outbox = Outbox([full], [0, 0], [], watch)
    _push(outbox, HOLD_MAX)
    waiting = asyncio.ensure_future(outbox.flush())
    await asyncio.sleep(0.5)
    assert not waiting.done()  # back-pressure: a busy queue is waited on
    full.get_nowait()
    await waiting
    assert len(full.get_nowait()) == HOLD_MAX
    full.put_nowait(["stuck"])
    inbox = BatchQueue(10)
    _push(outbox, HOLD_MAX)
    assert not watch.stuck(0)  # first look at this head
    polling = asyncio.ensure_future(outbox.flush_polling(inbox, _ignore))
    await asyncio.sleep(2)
    assert polling.done()  # the spout stopped waiting on a stuck queue and held the batch
    assert outbox.buffered() == {0: HOLD_MAX}
    assert not outbox.blocked


def _tup(value: str) -> Tuple:
    return Tuple([value], Source("s", 1, "default", Fields(["v"])), 1)


def _push(outbox: Outbox, n: int) -> None:
    for _ in range(n):
        outbox.push(0, _tup("t"))


async def _ignore(item: Any) -> None:
    pass


class HangsLater(Bolt):
    """Task index 0 hangs (``await asyncio.sleep(3600)``) on its first tuple at or after
    ``hang_at`` (loop time); every other call takes 10 ms. ``done`` counts executions per
    task index, ``at`` the loop times of task 1's."""

    def __init__(self, hang_at: float) -> None:
        self.hang_at = hang_at
        self.done: dict[int, int] = {0: 0, 1: 0}
        self.at: list[float] = []

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector, self.index = collector, context.task_index

    async def execute(self, tup: Any) -> None:
        now = asyncio.get_running_loop().time()
        if self.index == 0 and now >= self.hang_at:
            await asyncio.sleep(3600)
        await asyncio.sleep(0.01)
        self.done[self.index] += 1
        if self.index == 1:
            self.at.append(now)
        self.collector.ack(tup)


async def test_trees_stranded_at_a_hung_task_do_not_use_up_the_flow_limit() -> None:
    # Default max pending (flow control alone); a receive queue deeper than the limit in
    # force: shuffle sends the hung task its share until it is seen hung, and those trees
    # can only time out. Counted against the limit they would stop the spout until then.
    start = asyncio.get_running_loop().time()
    hang_at = start + 20
    bolt = HangsLater(hang_at)
    b = TopologyBuilder()
    b.set_spout("s", Counting())
    b.set_bolt("work", bolt, 2).shuffle_grouping("s")
    conf = Config({"topology.executor.receive.buffer.size": 2048})
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf, b.create_topology())
        await asyncio.sleep(45)
        limit = cluster.stats("t")["executors"][0]["in_flight_limit"]
    before = sum(1 for t in bolt.at if start + 10 <= t < hang_at) / 10
    after = sum(1 for t in bolt.at if hang_at + 5 <= t < hang_at + 25) / 20
    assert before > 50
    assert after >= 0.5 * before, (before, after, limit)


async def test_fields_grouping_onto_a_hung_task_stalls_bounded_and_says_so(
        caplog: pytest.LogCaptureFixture) -> None:
    # No grouping can move a key elsewhere: the spout stalls once the hung task's queue is
    # full and HOLD_STUCK_MAX tuples are held for it; what strands stays within that.
    start = asyncio.get_running_loop().time()
    bolt = HangsLater(start + 5)
    b = TopologyBuilder()
    b.set_spout("s", Counting())
    b.set_bolt("work", bolt, 2).fields_grouping("s", ["n"])
    conf = Config({"topology.executor.receive.buffer.size": 512})
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf, b.create_topology())
        await asyncio.sleep(20)
        stats = cluster.stats("t")
        done = bolt.done[1]
        await asyncio.sleep(5)
        assert bolt.done[1] - done < 5  # stalled, not trickling
    # The hung task's full queue, what is held for it (up to one round past the bound),
    # and the neighbour's last round: nothing else is in flight.
    assert stats["pending"] <= 512 + HOLD_STUCK_MAX + 2 * SPOUT_ROUND, stats["pending"]
    states = {(s["component"], s["state"]) for s in stats["stalled"]}
    assert ("s", "blocked") in states and ("work", "hung") in states
    assert any("waiting" in r.getMessage() and "spout 's'" in r.getMessage()
               for r in caplog.records)
