"""``SpoutOutputCollector.emit_many``: several tuples as the roots of one tracked tree.

The tree completes when every tuple of every row completed: ``ack(msg_id)`` once; a fail of
any of them fails it: ``fail(msg_id)`` once, never an ack. Without ackers the message id is
acked at once; untracked rows go out bare."""

from __future__ import annotations

from typing import Any

import pytest

from engine import BasicBolt, Config, FailedException, LocalCluster, Spout, TopologyBuilder
from engine.testing import VirtualTimePolicy, wait_until


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()


class Rows(Spout):
    """Emits each batch of ``batches`` once, as one tree whose message id is its index."""

    def __init__(self, batches: list[list[str]]) -> None:
        self.batches = batches
        self.log: dict[str, Any] = {"acked": [], "failed": [], "sent": []}

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def next_tuple(self) -> None:
        sent = self.log["sent"]
        if len(sent) < len(self.batches):
            i = len(sent)
            sent.append(self.collector.emit_many([[w] for w in self.batches[i]], msg_id=i))

    def ack(self, msg_id: Any) -> None:
        self.log["acked"].append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.log["failed"].append(msg_id)


class Count(BasicBolt):
    """Counts words (shared across tasks); fails the word ``bad``; anchors one child each."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def execute(self, tup: Any, collector: Any) -> None:
        if tup["word"] == "bad":
            raise FailedException("bad word")
        self.seen.append(tup["word"])
        collector.emit([tup["word"]])


class Sink(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        pass

    def execute(self, tup: Any, collector: Any) -> None:
        pass


async def run(batches: list[list[str]], ackers: int = 1) -> tuple[Rows, Count]:
    spout, count = Rows(batches), Count()
    b = TopologyBuilder()
    b.set_spout("rows", spout)
    b.set_bolt("count", count, 3).fields_grouping("rows", ["word"])
    b.set_bolt("sink", Sink(), 2).shuffle_grouping("count")
    conf = Config({"topology.acker.executors": ackers, "topology.message.timeout.secs": 30})
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf, b.create_topology())
        await wait_until(lambda: len(spout.log["acked"]) + len(spout.log["failed"])
                         == len(batches))
        spout.log["emitted"] = cluster.stats("t")["components"]["rows"]["emitted"]
        await cluster.kill_topology("t", wait_secs=0)
    return spout, count


async def test_rows_of_one_tree_are_acked_once_when_all_completed() -> None:
    spout, count = await run([["a", "b", "c", "d"], ["e"], []])
    assert sorted(spout.log["acked"]) == [0, 1, 2] and spout.log["failed"] == []
    assert spout.log["sent"] == [4, 1, 0]
    assert sorted(count.seen) == ["a", "b", "c", "d", "e"]
    assert spout.log["emitted"] == 3  # a tree counts once in the spout's emitted


async def test_one_failed_row_fails_the_tree_once_and_never_acks_it() -> None:
    spout, _ = await run([["a", "bad", "c", "bad"], ["e", "f"]])
    assert spout.log["failed"] == [0] and spout.log["acked"] == [1]


async def test_without_ackers_the_message_id_is_acked_at_once() -> None:
    spout, count = await run([["a", "bad", "c"]], ackers=0)
    assert spout.log["acked"] == [0] and spout.log["failed"] == []
    assert sorted(count.seen) == ["a", "c"]
