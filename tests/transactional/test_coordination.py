"""``finish_batch`` runs only once a task received its whole batch, through slow relays."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from engine import BasicBolt
from engine.transactional import BatchBolt, MemoryTransactionalSpout, TransactionalTopologyBuilder
from tests.transactional.helpers import conf_for, partitions, run_until

PER_PARTITION, BATCH = 60, 7
DATA = partitions(3, PER_PARTITION)


def expected_batch(txid: int) -> int:
    start = BATCH * (txid - 1)
    return sum(max(0, min(BATCH, PER_PARTITION - start)) for _ in DATA)


class SlowRelay(BasicBolt):
    """Passes each tuple on after a random short pause, so batches arrive out of step."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    async def execute(self, tup: Any, collector: Any) -> None:
        if self.rng.random() < 0.3:
            await asyncio.sleep(0.001)
        collector.emit([tup[0], tup[1]])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["tx", "word"])


class Checker(BatchBolt):
    """Records ``(txid, task, tuples received)`` at ``finish_batch`` and late tuples."""

    def __init__(self, finished: list[tuple[int, int, int]], late: list[Any]) -> None:
        self.finished = finished
        self.late = late

    def prepare(self, conf: Any, context: Any, collector: Any, attempt: Any) -> None:
        self.attempt, self.task, self.n, self.done = attempt, context.task_id, 0, False

    def execute(self, tup: Any) -> None:
        if self.done:
            self.late.append(tup)
        self.n += 1

    async def finish_batch(self) -> None:
        await asyncio.sleep(0)
        self.done = True
        self.finished.append((self.attempt.transaction_id, self.task, self.n))


async def test_finish_batch_only_after_every_tuple_from_every_upstream_task(
        tmp_path: Path) -> None:
    conf = conf_for(tmp_path, max_pending=3)
    whole: list[tuple[int, int, int]] = []
    split: list[tuple[int, int, int]] = []
    late: list[Any] = []
    spout = MemoryTransactionalSpout(DATA, ["word"], BATCH)
    b = TransactionalTopologyBuilder("coord", "spout", spout, 2)
    b.set_bolt("relay", SlowRelay(1), 3).shuffle_grouping("spout")
    b.set_bolt("relay2", SlowRelay(2), 2).shuffle_grouping("relay")
    b.set_bolt("whole", Checker(whole, late)).global_grouping("relay2")
    b.set_bolt("split", Checker(split, late), 4).fields_grouping("relay2", ["word"]) \
        .shuffle_grouping("spout")
    batches = -(-PER_PARTITION // BATCH)
    stats = await run_until(conf, b.build_topology(),
                            lambda: len(whole) >= batches and len(split) >= 4 * batches)
    assert not late
    for txid, _, n in whole:
        assert n == expected_batch(txid), (txid, n)
    per_tx: dict[int, int] = {}
    tasks: dict[int, set[int]] = {}
    for txid, task, n in split:
        per_tx[txid] = per_tx.get(txid, 0) + n
        tasks.setdefault(txid, set()).add(task)
    for txid in range(1, batches + 1):
        # every task finishes every batch, even with no tuple of it; twice the batch
        # because "split" reads both the spout and the relay chain
        assert len(tasks[txid]) == 4
        assert per_tx[txid] == 2 * expected_batch(txid)
    assert all(c["failed"] == 0 for c in stats["components"].values())


class Phases(BatchBolt):
    """Records ``("start"|"finish", txid)`` per task; finishing is slowed down."""

    def __init__(self, events: list[tuple[str, int]]) -> None:
        self.events = events

    def prepare(self, conf: Any, context: Any, collector: Any, attempt: Any) -> None:
        self.txid = attempt.transaction_id
        self.events.append(("start", self.txid))

    async def finish_batch(self) -> None:
        await asyncio.sleep(0.01)
        self.events.append(("finish", self.txid))


@pytest.mark.parametrize("max_pending", [1, 3])
async def test_several_batches_process_at_once_up_to_max_pending(tmp_path: Path,
                                                                  max_pending: int) -> None:
    events: list[tuple[str, int]] = []
    conf = conf_for(tmp_path, max_pending=max_pending)
    spout = MemoryTransactionalSpout(DATA, ["word"], BATCH)
    b = TransactionalTopologyBuilder("overlap", "spout", spout, 3)
    b.set_bolt("phases", Phases(events)).global_grouping("spout")
    batches = -(-PER_PARTITION // BATCH)
    await run_until(conf, b.build_topology(),
                    lambda: sum(e == "finish" for e, _ in events) >= batches)
    live, peak = set(), 0
    for kind, txid in events:
        (live.add if kind == "start" else live.discard)(txid)
        peak = max(peak, len(live))
    assert peak == 1 if max_pending == 1 else 1 < peak <= max_pending
