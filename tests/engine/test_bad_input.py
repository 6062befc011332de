"""Bad input gets one clear error naming the component, never a silent failure."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from engine import Bolt, Config, LocalCluster, Spout, TopologyBuilder, TopologyError
from engine.collector import OutputCollector
from engine.outbox import Outbox
from engine.queues import BatchQueue
from engine.routing import Route
from engine.spout_collector import SpoutOutputCollector
from engine.stats import TaskStats
from engine.testing import FeederSpout, VirtualTimePolicy, wait_until
from engine.tuples import Fields, Source, Tuple


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()


def _route(component: str, task: int, fields: list[str]) -> dict[str, Route]:
    route = Route(Source(component, task, "default", Fields(fields)))
    route.freeze()
    return {"default": route}


BAD_VALUES = ["ab", b"ab", {"a": 1, "b": 2}, {"a", "b"}, 12]


@pytest.mark.parametrize("values", BAD_VALUES, ids=lambda v: type(v).__name__)
async def test_emit_of_values_that_are_not_a_list_or_tuple_raises_type_error(
        values: Any) -> None:
    outbox = Outbox([], [0], [BatchQueue(10)])
    bolt = OutputCollector("split", 2, _route("split", 2, ["a", "b"]), outbox, TaskStats(),
                           debug=False)
    spout = SpoutOutputCollector("words", 1, _route("words", 1, ["a", "b"]), outbox,
                                 TaskStats(), False, {}, 1, lambda: 0.0)
    anchor = Tuple(["x"], Source("words", 1, "default", Fields(["w"])), 2, 7, 3)
    kind = type(values).__name__
    with pytest.raises(TypeError, match=rf"^bolt 'split': emit expects a list or tuple of "
                                        rf"values, got {kind} "):
        bolt.emit(values, anchor)
    with pytest.raises(TypeError, match=rf"^spout 'words': emit expects .* got {kind} "):
        spout.emit(values, msg_id=1)
    assert not outbox.holding()


async def test_a_bolt_emitting_a_string_fails_its_tuple_with_the_type_error() -> None:
    class EmitsString(Bolt):
        def declare_output_fields(self, declarer: Any) -> None:
            declarer.declare(["a", "b"])

        def prepare(self, conf: Any, context: Any, collector: Any) -> None:
            self.collector = collector

        def execute(self, tup: Any) -> None:
            self.collector.emit("ab", tup)
            self.collector.ack(tup)

    class Sink(Bolt):
        def execute(self, tup: Any) -> None:
            raise AssertionError("nothing reaches the sink")

    spout = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("pairs", EmitsString()).shuffle_grouping("s")
    b.set_bolt("sink", Sink()).shuffle_grouping("pairs")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", Config(), b.create_topology())
        spout.feed(["x"], msg_id="x")
        await wait_until(lambda: spout.events)
        errors = cluster.stats("t")["components"]["pairs"]["errors"]
    assert spout.events == [("fail", "x")]
    assert errors == 1


class AcksTwice(Bolt):
    """Acks (or, with ``verb="fail"``, fails) every tuple twice."""

    def __init__(self, verb: str) -> None:
        self.verb = verb

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        getattr(self.collector, self.verb)(tup)
        getattr(self.collector, self.verb)(tup)


@pytest.mark.parametrize("verb", ["ack", "fail"])
async def test_a_second_ack_or_fail_is_ignored_with_one_warning_per_component(
        verb: str, caplog: pytest.LogCaptureFixture) -> None:
    spout = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("twice", AcksTwice(verb), 2).shuffle_grouping("s")
    clock = asyncio.get_running_loop().time
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", Config({"topology.message.timeout.secs": 30}),
                                      b.create_topology())
        start = clock()
        for i in range(20):
            spout.feed([i], msg_id=i)
        await wait_until(lambda: len(spout.events) == 20, timeout=60)
        elapsed = clock() - start
        counts = cluster.stats("t")["components"]["twice"]
    assert sorted(m for _, m in spout.events) == list(range(20))
    assert {kind for kind, _ in spout.events} == {verb}
    assert elapsed < 1  # decided at once, not by the timeout
    assert counts["acked" if verb == "ack" else "failed"] == 20
    lines = [r.getMessage() for r in caplog.records if "already acked or failed" in
             r.getMessage()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("bolt 'twice': task ")
    assert f": {verb} of a tuple already acked or failed, ignored" in lines[0]
    assert all(r.levelno == logging.WARNING for r in caplog.records
               if "already acked" in r.getMessage())


def test_fail_after_ack_is_ignored_and_sends_nothing() -> None:
    acker = BatchQueue(10)
    outbox = Outbox([], [], [acker])
    coll = OutputCollector("count", 2, {}, outbox, TaskStats(), debug=False)
    tup = Tuple(["w"], Source("split", 1, "default", Fields(["w"])), 2, 101, 5)
    outbox.set_busy(True)
    coll.ack(tup)
    coll.fail(tup)
    coll.ack(tup)
    outbox.flush_acker_messages()
    ops, acks = acker.get_nowait()
    assert ops == [] and acks == {101: 5}
    assert tup.roots == (101, 5)  # still readable after the ack
    assert acker.get_nowait() is None


@pytest.mark.parametrize("exc", [RuntimeError("no fields yet"), KeyError("name"),
                                 AttributeError("'NoneType' object has no attribute 'x'")])
def test_any_exception_from_declare_output_fields_becomes_a_topology_error(
        exc: Exception) -> None:
    class Broken(Spout):
        def declare_output_fields(self, declarer: Any) -> None:
            raise exc

        def next_tuple(self) -> None:
            pass

    b = TopologyBuilder()
    b.set_spout("src", Broken())
    with pytest.raises(TopologyError, match=rf"^spout 'src': declare_output_fields raised "
                                            rf"{type(exc).__name__}: "):
        b.create_topology()
