"""One error policy: every kind of bolt reports a raised error to the spout as kind
``error`` with ``"Type: message"``, and counts it as an error of the component."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import BasicBolt, Bolt, Config, LocalCluster, TopologyBuilder
from engine.state import KeyValueState, StatefulBolt
from engine.state.checkpoint import CHECKPOINT_COMPONENT, CHECKPOINT_STREAM, INITSTATE
from engine.state.executor import StatefulBoltExecutor
from engine.testing import VirtualTimePolicy, wait_until
from engine.windowing import BaseStatefulWindowedBolt, BaseWindowedBolt, Count, TupleWindow
from tests.engine.helpers import ReasonSpout
from tests.state.helpers import Recorder, checkpoint, context, make_tuple


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()


class RaisingBolt(Bolt):
    def execute(self, tup: Any) -> None:
        raise ValueError("boom")


class RaisingBasic(BasicBolt):
    def execute(self, tup: Any, collector: Any) -> None:
        raise ValueError("boom")


class RaisingWindow(BaseWindowedBolt):
    def execute(self, window: TupleWindow) -> None:
        raise ValueError("boom")


class RaisingStateful(StatefulBolt):
    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, tup: Any) -> None:
        raise ValueError("boom")


class RaisingStatefulWindow(BaseStatefulWindowedBolt):
    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    async def execute(self, window: TupleWindow) -> None:
        raise ValueError("boom")


BOLTS = {
    "bolt": RaisingBolt,
    "basic": RaisingBasic,
    "windowed": lambda: RaisingWindow().with_tumbling_window(Count(1)),
    "stateful": RaisingStateful,
    "stateful-windowed": lambda: RaisingStatefulWindow().with_tumbling_window(Count(1))
    .with_message_id_field("v"),
}


@pytest.mark.parametrize("kind", list(BOLTS))
async def test_a_raised_error_reaches_the_spout_as_an_error(kind: str, tmp_path: Path) -> None:
    spout = ReasonSpout()
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("b", BOLTS[kind]()).shuffle_grouping("s")
    spout.feed([0], msg_id=0)
    conf = Config({"topology.state.dir": str(tmp_path),
                   "topology.state.checkpoint.interval.ms": 20})
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf, b.create_topology())
        await wait_until(lambda: 0 in spout.reasons, timeout=60)
        errors = cluster.stats("t")["components"]["b"]["errors"]
    reason = spout.reasons[0]
    assert (reason.kind, reason.message, reason.component) == ("error", "ValueError: boom", "b")
    assert reason.trace is not None and 'raise ValueError("boom")' in reason.trace
    assert errors == 1


async def test_a_tuple_held_for_init_state_fails_as_an_error(tmp_path: Path) -> None:
    """A tuple that arrived before INITSTATE runs at INITSTATE; its error keeps its cause."""
    conf = {"topology.state.dir": str(tmp_path)}
    executor = StatefulBoltExecutor(RaisingStateful())
    out = Recorder()
    tasks = {CHECKPOINT_COMPONENT: [1], "words": [2], "count": [3]}
    sources = [("words", "default"), (CHECKPOINT_COMPONENT, CHECKPOINT_STREAM)]
    await executor.prepare(conf, context("count", 3, tasks, sources, conf), out)
    tup = make_tuple(["x"], ["word"])
    await executor.execute(tup)
    assert out.fails == []
    await executor.execute(checkpoint(-1, INITSTATE))
    assert out.fails == [tup]
    reason = out.reasons[0]
    assert (reason.kind, reason.message) == ("error", "ValueError: boom")
    assert [type(e) for e in out.errors] == [ValueError]
    await executor.cleanup()
