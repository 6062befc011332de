"""The outbox's buffers: a push after a flush or a hold lands in the batch still to go."""

from __future__ import annotations

import asyncio
from typing import Any

from engine.outbox import HOLD_MAX, Outbox
from engine.queue_watch import QueueWatch
from engine.queues import BatchQueue
from engine.tuples import Fields, Source, Tuple

SRC = Source("s", 1, "default", Fields(["v"]))


def _tup(value: Any) -> Tuple:
    return Tuple([value], SRC, 1)


def _values(batch: list[Tuple]) -> list[Any]:
    return [t[0] for t in batch]


async def test_a_batch_handed_to_a_queue_never_grows() -> None:
    queue = BatchQueue(100)
    outbox = Outbox([queue], [0, 0], [])
    outbox.push(1, _tup("a"))
    await outbox.flush()
    outbox.push(1, _tup("b"))  # the same task as the push before the flush
    outbox.schedule_flush()
    await asyncio.sleep(0)
    outbox.push(1, _tup("c"))
    await outbox.flush_polling(BatchQueue(10), _ignore)
    assert [_values(queue.get_nowait()) for _ in range(3)] == [["a"], ["b"], ["c"]]


async def test_a_push_while_a_flush_waits_and_then_holds_stays_in_order() -> None:
    # Executor 1's batch waits for room; meanwhile task 1 (executor 0) gets "b"; then
    # executor 0's full queue makes the flush hold "a" ahead of "b"; "c" comes after both.
    q0, q1 = BatchQueue(1), BatchQueue(1)
    q0.put_nowait(["old"])
    q1.put_nowait(["old"])
    outbox = Outbox([q0, q1], [0, 0, 1], [], QueueWatch([q0, q1]))
    for i in range(HOLD_MAX):
        outbox.push(2, _tup(i))
    outbox.push(1, _tup("a"))
    flushing = asyncio.ensure_future(outbox.flush())
    await asyncio.sleep(0)
    outbox.push(1, _tup("b"))
    q1.get_nowait()  # room: the waiting batch goes, then "a" is held for q0
    await flushing
    outbox.push(1, _tup("c"))
    assert q0.get_nowait() == ["old"]
    await outbox.flush()
    assert _values(q0.get_nowait()) == ["a", "b", "c"]
    assert len(q1.get_nowait()) == HOLD_MAX


async def _ignore(item: Any) -> None:
    pass
