"""OutputCollector.ack: coalesced per root and acker, whatever order the acks come in."""

from __future__ import annotations

import asyncio
from functools import reduce
from operator import xor

from engine.collector import OutputCollector
from engine.outbox import Outbox
from engine.queues import BatchQueue
from engine.stats import TaskStats
from engine.tuples import Fields, Source, Tuple

SRC = Source("split", 1, "default", Fields(["word"]))


def collector(ackers: int = 1) -> tuple[OutputCollector, Outbox, list[BatchQueue]]:
    acker_queues = [BatchQueue(10) for _ in range(ackers)]
    outbox = Outbox([], [], acker_queues)
    coll = OutputCollector("count", 2, {}, outbox, TaskStats(), debug=False)
    return coll, outbox, acker_queues


def tracked(root: int, edge: int, ack_val: int = 0, more: tuple[int, ...] | None = None) -> Tuple:
    tup = Tuple(["w"], SRC, 2, root, edge, more)
    tup.ack_val = ack_val
    return tup


def sent(queue: BatchQueue) -> dict[int, int]:
    ops, acks = queue.get_nowait()
    assert ops == []
    return dict(acks)


def test_runs_and_interleaved_roots_add_up_per_root() -> None:
    coll, outbox, (queue,) = collector()
    outbox.set_busy(True)
    acked = [(101, 3), (101, 5, 8), (202, 7), (101, 9), (303, 11), (303, 13), (202, 17)]
    for root, edge, *av in acked:
        coll.ack(tracked(root, edge, *av))
    outbox.flush_acker_messages()
    expected: dict[int, int] = {}
    for root, edge, *av in acked:
        expected[root] = expected.get(root, 0) ^ edge ^ reduce(xor, av, 0)
    assert sent(queue) == expected
    assert queue.get_nowait() is None


def test_a_tuple_of_several_trees_acks_each_beside_a_run() -> None:
    coll, outbox, (queue,) = collector()
    outbox.set_busy(True)
    coll.ack(tracked(101, 3))
    coll.ack(tracked(101, 5, ack_val=64, more=(202, 5)))  # anchored to trees 101 and 202
    coll.ack(tracked(101, 7))
    outbox.flush_acker_messages()
    assert sent(queue) == {101: 3 ^ 5 ^ 64 ^ 7, 202: 5 ^ 64}


def test_several_ackers_each_get_their_roots() -> None:
    coll, outbox, queues = collector(ackers=2)
    outbox.set_busy(True)
    for root, edge in [(10, 1), (11, 2), (10, 4), (13, 8), (-7, 16)]:
        coll.ack(tracked(root, edge))
    outbox.flush_acker_messages()
    assert sent(queues[0]) == {10: 1 ^ 4}
    assert sent(queues[1]) == {11: 2, 13: 8, -7: 16}  # -7 % 2 == 1, as in Python


def test_a_zero_sum_run_still_reaches_the_acker() -> None:
    coll, outbox, (queue,) = collector()
    outbox.set_busy(True)
    coll.ack(tracked(101, 6))
    coll.ack(tracked(101, 6))  # XOR-s to zero; the acker must still hear of the root
    outbox.flush_acker_messages()
    assert sent(queue) == {101: 0}


async def test_an_ack_outside_execute_is_flushed_soon() -> None:
    coll, _, (queue,) = collector()
    coll.ack(tracked(101, 3))  # not busy: as from a user's own task
    await asyncio.sleep(0)
    assert sent(queue) == {101: 3}


def test_untracked_tuples_send_nothing() -> None:
    coll, outbox, (queue,) = collector()
    outbox.set_busy(True)
    coll.ack(Tuple(["w"], SRC, 2))
    outbox.flush_acker_messages()
    assert queue.get_nowait() is None
