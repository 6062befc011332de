"""The stateful bolt executor driven by hand: held acks, every checkpoint action, recovery."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import Bolt
from engine.state import KeyValueState, StatefulBolt
from engine.state.checkpoint import (
    CHECKPOINT_COMPONENT,
    CHECKPOINT_STREAM,
    COMMIT,
    INITSTATE,
    PREPARE,
    ROLLBACK,
)
from engine.state.executor import (
    BatchCheckpointForwarder,
    CheckpointForwarder,
    StatefulBoltExecutor,
    wrap_for_checkpoints,
)
from engine.state.store import SqliteStateStore
from tests.state.helpers import Recorder, checkpoint, context, make_tuple


class Count(StatefulBolt):
    """Counts words in its state; emits anchored (word, count); acks."""

    def __init__(self, anchored: bool = True) -> None:
        self.anchored = anchored
        self.calls: list[str] = []

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "count"])

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: KeyValueState) -> None:
        self.calls.append("init_state")
        self.state = state

    def pre_prepare(self, txid: int) -> None:
        self.calls.append(f"pre_prepare {txid}")

    def pre_commit(self, txid: int) -> None:
        self.calls.append(f"pre_commit {txid}")

    def pre_rollback(self) -> None:
        self.calls.append("pre_rollback")

    def execute(self, tup: Any) -> None:
        word = tup["word"]
        n = self.state.get(word, 0) + 1
        self.state.put(word, n)
        self.collector.emit([word, n], anchors=tup if self.anchored else None)
        self.collector.ack(tup)


TASKS = {CHECKPOINT_COMPONENT: [1], "words": [2, 3], "count": [4]}
SOURCES = [("words", "default"), (CHECKPOINT_COMPONENT, CHECKPOINT_STREAM)]


async def started(tmp_path: Path, bolt: Count | None = None,
                  sources: list[tuple[str, str]] = SOURCES) -> tuple[Any, Recorder]:
    conf = {"topology.state.dir": str(tmp_path)}
    executor = StatefulBoltExecutor(bolt or Count())
    out = Recorder()
    await executor.prepare(conf, context("count", 4, TASKS, sources, conf), out)
    return executor, out


def word(w: str) -> Any:
    return make_tuple([w], ["word"])


def committed(tmp_path: Path) -> dict[Any, Any]:
    return SqliteStateStore((tmp_path / "state.sqlite3").resolve()).load("t/count-4")[1]


async def test_tuples_wait_for_init_state(tmp_path: Path) -> None:
    ex, out = await started(tmp_path)
    await ex.execute(word("a"))
    assert ex.bolt.calls == [] and out.emits == []
    init = checkpoint(-1, INITSTATE)
    await ex.execute(init)
    assert ex.bolt.calls == ["init_state"]
    assert out.emits[0][:2] == ("default", ["a", 1])
    assert out.emits[1] == (CHECKPOINT_STREAM, [-1, INITSTATE], init)  # forwarded, anchored
    assert out.acks == [init]  # the checkpoint; the word's ack is held


async def test_acks_are_held_until_the_commit_that_covers_them(tmp_path: Path) -> None:
    ex, out = await started(tmp_path)
    await ex.execute(checkpoint(-1, INITSTATE))
    a, b = word("a"), word("b")
    await ex.execute(a)
    await ex.execute(b)
    assert a not in out.acks and b not in out.acks
    await ex.execute(checkpoint(0, PREPARE))
    late = word("c")
    await ex.execute(late)  # after the prepare: covered by the next checkpoint
    assert committed(tmp_path) == {}
    await ex.execute(checkpoint(0, COMMIT))
    assert a in out.acks and b in out.acks and late not in out.acks
    assert committed(tmp_path) == {"a": 1, "b": 1}
    assert ex.bolt.calls == ["init_state", "pre_prepare 0", "pre_commit 0"]
    await ex.execute(checkpoint(1, PREPARE))
    await ex.execute(checkpoint(1, COMMIT))
    assert late in out.acks
    assert committed(tmp_path) == {"a": 1, "b": 1, "c": 1}


async def test_rollback_fails_held_tuples_and_restores_the_state(tmp_path: Path) -> None:
    ex, out = await started(tmp_path)
    await ex.execute(checkpoint(-1, INITSTATE))
    await ex.execute(word("a"))
    await ex.execute(checkpoint(0, PREPARE))
    await ex.execute(checkpoint(0, COMMIT))
    prepared, unprepared = word("a"), word("b")
    await ex.execute(prepared)
    await ex.execute(checkpoint(1, PREPARE))
    await ex.execute(unprepared)
    await ex.execute(checkpoint(1, ROLLBACK))
    assert out.fails == [prepared, unprepared]
    assert dict(ex.state) == {"a": 1}
    assert ex.bolt.calls[-1] == "pre_rollback"
    await ex.execute(checkpoint(0, INITSTATE))  # already initialised: ignored, forwarded
    assert ex.bolt.calls.count("init_state") == 1
    assert out.emits[-1][1] == [0, INITSTATE]


async def test_prepare_before_init_state_fails_the_checkpoint(tmp_path: Path) -> None:
    ex, out = await started(tmp_path)
    cp = checkpoint(0, PREPARE)
    await ex.execute(cp)
    assert out.fails == [cp] and out.acks == []


async def test_unanchored_emits_are_refused(tmp_path: Path) -> None:
    ex, _out = await started(tmp_path, Count(anchored=False))
    await ex.execute(checkpoint(-1, INITSTATE))
    with pytest.raises(ValueError, match=r"^bolt 'count': bolts in a stateful topology must "
                                         r"emit anchored tuples"):
        await ex.execute(word("a"))


async def test_a_checkpoint_acts_once_every_upstream_task_sent_it(tmp_path: Path) -> None:
    sources = [("split", "default"), ("split", CHECKPOINT_STREAM)]
    tasks = {**TASKS, "split": [5, 6, 7]}
    conf = {"topology.state.dir": str(tmp_path)}
    ex = StatefulBoltExecutor(Count())
    out = Recorder()
    await ex.prepare(conf, context("count", 4, tasks, sources, conf), out)
    copies = [checkpoint(-1, INITSTATE, "split", t) for t in (5, 6, 7)]
    await ex.execute(copies[0])
    await ex.execute(copies[1])
    assert ex.bolt.calls == [] and out.acks == copies[:2]
    await ex.execute(copies[2])
    assert ex.bolt.calls == ["init_state"]
    assert [e for e in out.emits if e[0] == CHECKPOINT_STREAM] == [
        (CHECKPOINT_STREAM, [-1, INITSTATE], copies[2])]


async def test_recovery_from_committing_commits_the_prepared_state(tmp_path: Path) -> None:
    ex, _ = await started(tmp_path)
    await ex.execute(checkpoint(-1, INITSTATE))
    await ex.execute(word("a"))
    await ex.execute(checkpoint(0, PREPARE))
    await ex.cleanup()  # killed before COMMIT 0 arrived
    again, _out = await started(tmp_path)
    assert dict(again.state) == {}
    await again.execute(checkpoint(0, COMMIT))  # the spout recovers: COMMIT, then INITSTATE
    await again.execute(checkpoint(0, INITSTATE))
    assert again.bolt.state.get("a") == 1
    assert committed(tmp_path) == {"a": 1}
    await again.cleanup()


async def test_recovery_from_preparing_rolls_the_prepared_state_back(tmp_path: Path) -> None:
    ex, _ = await started(tmp_path)
    await ex.execute(checkpoint(-1, INITSTATE))
    await ex.execute(word("a"))
    await ex.execute(checkpoint(0, PREPARE))
    await ex.cleanup()
    again, _out = await started(tmp_path)
    await again.execute(checkpoint(0, ROLLBACK))
    await again.execute(checkpoint(-1, INITSTATE))
    assert dict(again.bolt.state) == {}
    await again.execute(word("a"))
    await again.execute(checkpoint(0, PREPARE))
    await again.execute(checkpoint(0, COMMIT))
    assert committed(tmp_path) == {"a": 1}
    await again.cleanup()


class Upper:
    """A plain bolt: emits the upper-cased word, anchored or not."""

    def __init__(self, anchored: bool) -> None:
        self.anchored = anchored

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def component_configuration(self) -> None:
        return None

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.emit([tup["word"].upper()], anchors=tup if self.anchored else None)
        self.collector.ack(tup)

    def cleanup(self) -> None:
        pass


async def test_a_forwarder_passes_tuples_and_forwards_checkpoints(tmp_path: Path) -> None:
    conf: dict[str, Any] = {}
    fw = CheckpointForwarder(Upper(anchored=True))
    out = Recorder()
    await fw.prepare(conf, context("upper", 4, TASKS, SOURCES, conf), out)
    a = word("a")
    await fw.execute(a)
    assert out.emits == [("default", ["A"], a)] and out.acks == [a]
    cp = checkpoint(3, PREPARE)
    await fw.execute(cp)
    assert out.emits[-1] == (CHECKPOINT_STREAM, [3, PREPARE], cp) and out.acks[-1] is cp
    refusing = CheckpointForwarder(Upper(anchored=False))
    await refusing.prepare(conf, context("upper", 4, TASKS, SOURCES, conf), Recorder())
    with pytest.raises(ValueError, match="must emit anchored tuples"):
        await refusing.execute(word("b"))


class Batches(Bolt):
    """Takes whole queue batches (as the Kafka bolt does): records each run it gets and
    asks the executor to wait on a coroutine of its own after each."""

    executes_batches = True

    def __init__(self) -> None:
        self.runs: list[list[str]] = []
        self.waits: list[Any] = []

    def declare_output_fields(self, declarer: Any) -> None:
        pass

    def execute(self, tup: Any) -> None:
        raise AssertionError("execute_batch takes every tuple")

    def execute_batch(self, batch: Any) -> Any:
        self.runs.append([t["word"] for t in batch])
        self.waits.append(self._room())
        return self.waits[-1]

    async def _room(self) -> None:
        pass


async def test_a_forwarder_hands_a_batch_bolt_its_runs_between_checkpoints() -> None:
    """Data tuples go to a batch-taking bolt as the runs between checkpoint tuples, each
    checkpoint forwarded in its place; only the last wait is handed on (the others are
    closed, never left unawaited)."""
    conf: dict[str, Any] = {}
    fw = wrap_for_checkpoints(Batches(), stateful=False)
    assert isinstance(fw, BatchCheckpointForwarder) and fw.executes_batches
    out = Recorder()
    await fw.prepare(conf, context("upper", 4, TASKS, SOURCES, conf), out)
    a, b, c = word("a"), word("b"), word("c")
    cp = checkpoint(3, PREPARE)
    settle = fw.execute_batch([a, b, cp, c])
    bolt = fw.bolt
    assert bolt.runs == [["a", "b"], ["c"]]
    assert out.emits == [(CHECKPOINT_STREAM, [3, PREPARE], cp)] and out.acks == [cp]
    assert settle is bolt.waits[-1] and bolt.waits[0].cr_frame is None  # closed
    await settle
    assert fw.execute_batch([a]) is bolt.waits[-1] and bolt.runs[-1] == ["a"]
    await bolt.waits[-1]
