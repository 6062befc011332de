"""Every grouping's routing, and fields grouping's stability across processes."""

from __future__ import annotations

import subprocess
import sys
import zlib
from collections import Counter
from typing import Any

import pytest

from engine import LocalCluster, TopologyBuilder
from engine.grouping import stable_hash
from engine.testing import CaptureBolt, FeederSpout, wait_until


async def route(method: str, n: int = 100, tasks: int = 4, **kw: Any) -> CaptureBolt:
    spout, sink = FeederSpout(["k", "v"]), CaptureBolt()
    b = TopologyBuilder()
    b.set_spout("s", spout)
    declarer = b.set_bolt("sink", sink, 2, num_tasks=tasks)
    getattr(declarer, method)("s", **kw)
    for i in range(n):
        spout.feed([f"key{i % 10}", i], msg_id=i)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("g", {}, b.create_topology())
        await wait_until(lambda: len(spout.events) == n)
    return sink


async def test_shuffle_spreads_evenly() -> None:
    sink = await route("shuffle_grouping")
    assert sorted(Counter(t for t, _ in sink.captured).values()) == [25, 25, 25, 25]


@pytest.mark.parametrize("name", ["none_grouping", "local_or_shuffle_grouping"])
async def test_none_and_local_or_shuffle_behave_as_shuffle(name: str) -> None:
    sink = await route(name)
    assert len({t for t, _ in sink.captured}) == 4 and len(sink.captured) == 100


async def test_fields_sends_equal_keys_to_one_task() -> None:
    sink = await route("fields_grouping", fields=["k"])
    tasks_per_key: dict[str, set[int]] = {}
    for task, (key, _) in sink.captured:
        tasks_per_key.setdefault(key, set()).add(task)
    assert all(len(t) == 1 for t in tasks_per_key.values())
    assert len({t for s in tasks_per_key.values() for t in s}) > 1


async def test_partial_key_uses_at_most_two_tasks_per_key() -> None:
    sink = await route("partial_key_grouping", fields=["k"])
    tasks_per_key: dict[str, set[int]] = {}
    for task, (key, _) in sink.captured:
        tasks_per_key.setdefault(key, set()).add(task)
    assert all(1 <= len(t) <= 2 for t in tasks_per_key.values())


async def test_all_copies_to_every_task() -> None:
    sink = await route("all_grouping", n=10)
    assert Counter(t for t, _ in sink.captured) == {2: 10, 3: 10, 4: 10, 5: 10}


async def test_global_picks_the_lowest_task() -> None:
    sink = await route("global_grouping", n=10)
    assert {t for t, _ in sink.captured} == {2}


class EvenOdd:
    def prepare(self, context: Any, stream_id: str, target_tasks: list[int]) -> None:
        self.targets = target_tasks

    def choose_tasks(self, task_id: int, values: list[Any]) -> list[int]:
        return [self.targets[values[1] % 2]]


async def test_custom_grouping_chooses() -> None:
    sink = await route("custom_grouping", n=10, grouping=EvenOdd())
    assert {(t, v[1] % 2) for t, v in sink.captured} == {(2, 0), (3, 1)}


class IntLike:
    """A task id as numpy and similar libraries hand them out: not an int, but int-like."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


class EvenOddIntLike(EvenOdd):
    def choose_tasks(self, task_id: int, values: list[Any]) -> list[Any]:
        return [IntLike(t) for t in super().choose_tasks(task_id, values)]


async def test_custom_grouping_may_answer_int_like_task_ids() -> None:
    sink = await route("custom_grouping", n=10, grouping=EvenOddIntLike())
    assert {(t, v[1] % 2) for t, v in sink.captured} == {(2, 0), (3, 1)}


@pytest.mark.parametrize("as_id", [int, IntLike])
async def test_direct_grouping_delivers_to_the_chosen_task(as_id: Any) -> None:
    from engine import Bolt

    class Director(Bolt):
        def declare_output_fields(self, declarer: Any) -> None:
            declarer.declare(["v"], direct=True)

        def prepare(self, conf: Any, context: Any, collector: Any) -> None:
            self.collector = collector
            self.targets = context.component_tasks("sink")

        def execute(self, tup: Any) -> None:
            self.collector.emit_direct(as_id(self.targets[-1]), [tup[0]], anchors=tup)
            self.collector.ack(tup)

    spout, sink = FeederSpout(["v"]), CaptureBolt()
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("dir", Director()).shuffle_grouping("s")
    b.set_bolt("sink", sink, 3).direct_grouping("dir")
    for i in range(5):
        spout.feed([i], msg_id=i)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("d", {}, b.create_topology())
        await wait_until(lambda: len(spout.acked()) == 5)
    assert {t for t, _ in sink.captured} == {5}


def test_stable_hash_is_fixed() -> None:
    assert stable_hash(["word"]) == zlib.crc32(b"word") == 3287381265
    assert stable_hash([42, "a"]) == (42 * 31 + zlib.crc32(b"a")) & 0xFFFFFFFF


def test_fields_grouping_is_stable_across_processes() -> None:
    code = ("from engine.grouping import FieldsGrouper as F;"
            "g = F([1, 2, 3, 4, 5], [0]);"
            "print([g.choose([w])[0] for w in ['a', 'b', 'word', 'storm', 'x' * 40]])")
    outputs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={"PYTHONHASHSEED": seed}, check=True).stdout
               for seed in ("1", "2", "3")}
    assert len(outputs) == 1


def test_fields_grouping_memo_gives_the_hash_answer_and_stays_bounded() -> None:
    from engine.grouping import FieldsGrouper

    g = FieldsGrouper([1, 2, 3, 4, 5], [0])
    g.MEMO_SIZE = 8
    words = [f"w{i}" for i in range(50)] * 2  # every key twice: misses, then hits
    for w in words:
        assert g.choose([w]) == [[1, 2, 3, 4, 5][zlib.crc32(w.encode()) % 5]]
        assert len(g._memo) <= 8


async def test_a_single_target_custom_grouping_is_still_asked() -> None:
    class Counting:
        calls = 0

        def prepare(self, context: Any, stream: Any, targets: list[int]) -> None:
            self.targets = targets

        def choose_tasks(self, task_id: int, values: list[Any]) -> list[int]:
            Counting.calls += 1
            return self.targets

    spout, sink = FeederSpout(["k"]), CaptureBolt()
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("sink", sink).custom_grouping("s", Counting())
    for i in range(5):
        spout.feed([i], msg_id=i)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("c", {}, b.create_topology())
        await wait_until(lambda: len(spout.acked()) == 5)
    assert Counting.calls == 5
