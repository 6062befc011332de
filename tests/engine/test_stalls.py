"""The stall monitor's line for a hung call names where its tuple came from, through a
repartition hop too (on a stand-in for a shared spout, under virtual time)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine import BasicBolt, Bolt, Config, LocalCluster, Spout, TopologyBuilder
from engine.testing import VirtualTimePolicy


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()


class Once(Spout):
    """Emits each of ``rows`` once, as tracked trees."""

    def __init__(self, fields: tuple[str, ...], rows: list[list[Any]]) -> None:
        self.fields, self.rows = fields, rows

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(list(self.fields))

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector, self.todo = collector, list(self.rows)

    def next_tuple(self) -> None:
        if self.todo:
            self.collector.emit(self.todo.pop(0), msg_id=len(self.todo))


class AckAll(Bolt):
    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.ack(tup)


class Shared(Once):
    """A shared spout whose hop's reader emits the words the hop would carry."""

    shared_across_processes = True
    keyed_downstream = False

    def repartition_hop(self, receiver: str, key_fields: tuple[str, ...],
                        fields: tuple[str, ...]) -> tuple[Bolt, Spout]:
        return AckAll(), Once(fields, [["kafka"]])


class Split(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def execute(self, tup: Any, collector: Any) -> None:
        for word in tup[0].split():
            collector.emit([word])


class Hangs(Bolt):
    def declare_output_fields(self, declarer: Any) -> None:
        pass

    async def execute(self, tup: Any) -> None:
        await asyncio.sleep(3600)


async def hung_lines(workers: int, caplog: pytest.LogCaptureFixture) -> list[str]:
    b = TopologyBuilder()
    b.set_spout("sentences", Shared(("line",), [["kafka storm"]]))
    b.set_bolt("split", Split()).shuffle_grouping("sentences")
    b.set_bolt("count", Hangs()).fields_grouping("split", ["word"])
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", Config({"topology.workers": workers}),
                                      b.create_topology())
        await asyncio.sleep(6)
    return [r.getMessage() for r in caplog.records
            if "execute() has not returned" in r.getMessage()]


async def test_a_hung_call_behind_a_hop_names_the_reader_and_the_component_before_it(
        caplog: pytest.LogCaptureFixture) -> None:
    lines = await hung_lines(2, caplog)
    assert lines and lines[0].startswith("bolt 'count': task ")
    assert ("(a tuple from '__count-repartition', emitted by 'split' before the repartition "
            "hop; the call is cancelled after 30 s)") in lines[0]


async def test_a_hung_call_in_one_process_names_its_source(
        caplog: pytest.LogCaptureFixture) -> None:
    lines = await hung_lines(1, caplog)
    assert lines and "(a tuple from 'split'; the call is cancelled after 30 s)" in lines[0]
