"""Hand-driving checkpoint components: recording collectors, contexts and tuples."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from typing import Any

from engine.components import Spout
from engine.context import TopologyContext
from engine.failure import FailReason
from engine.state.checkpoint import CHECKPOINT_COMPONENT, CHECKPOINT_FIELDS, CHECKPOINT_STREAM
from engine.tuples import Fields, Source, Tuple


class Recorder:
    """A bolt collector that records emits, acks, fails and errors."""

    component = "count"

    def __init__(self) -> None:
        self.emits: list[tuple[str, list[Any], Any]] = []
        self.acks: list[Tuple] = []
        self.fails: list[Tuple] = []
        self.reasons: list[FailReason] = []
        self.errors: list[BaseException] = []

    def emit(self, values: Sequence[Any], anchors: Any = None,
             stream: str = "default") -> list[int]:
        self.emits.append((stream, list(values), anchors))
        return []

    def ack(self, tup: Tuple) -> None:
        self.acks.append(tup)

    def fail(self, tup: Tuple, reason: str | None = None) -> None:
        self.fail_with(tup, FailReason("explicit", reason or "failed by count"))

    def fail_with(self, tup: Tuple, reason: FailReason) -> None:
        self.fails.append(tup)
        self.reasons.append(reason)

    def report_error(self, exc: BaseException) -> None:
        self.errors.append(exc)


class SpoutRecorder:
    """A spout collector that records ``(values, msg_id, stream)``."""

    def __init__(self) -> None:
        self.emits: list[tuple[list[Any], Any, str]] = []

    def emit(self, values: Sequence[Any], msg_id: Any = None,
             stream: str = "default") -> list[int]:
        self.emits.append((list(values), msg_id, stream))
        return []


def context(component: str, task: int, tasks: dict[str, list[int]],
            sources: list[tuple[str, str]], conf: dict[str, Any]) -> TopologyContext:
    """A task's context in topology ``t``."""
    return TopologyContext("t", task, component, tasks, {}, {component: sources}, conf)


def make_tuple(values: Sequence[Any], fields: Sequence[str], component: str = "words",
               task: int = 2, stream: str = "default") -> Tuple:
    """An untracked tuple from ``component``."""
    return Tuple(list(values), Source(component, task, stream, Fields(fields)), 0)


def checkpoint(txid: int, action: str, component: str = CHECKPOINT_COMPONENT,
               task: int = 1) -> Tuple:
    """A checkpoint tuple as the spout (or an upstream bolt) sends it."""
    return make_tuple([txid, action], CHECKPOINT_FIELDS, component, task, CHECKPOINT_STREAM)


class DurableLog:
    """A replayable source that outlives topologies: entries by offset, and which offsets
    were acked (a Kafka topic and its committed offsets, in miniature)."""

    def __init__(self, entries: list[Any]) -> None:
        self.entries = entries
        self.acked: set[int] = set()
        self.failed: list[int] = []


class LogSpout(Spout):
    """Emits every offset of the log not acked yet; replays failed ones."""

    def __init__(self, log: DurableLog) -> None:
        self.log = log

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["offset", "value"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.position = 0
        self.replay: deque[int] = deque()

    def next_tuple(self) -> None:
        if self.replay:
            offset = self.replay.popleft()
        else:
            while self.position in self.log.acked:
                self.position += 1
            if self.position >= len(self.log.entries):
                return
            offset = self.position
            self.position += 1
        self.collector.emit([offset, self.log.entries[offset]], msg_id=offset)

    def ack(self, msg_id: int) -> None:
        self.log.acked.add(msg_id)

    def fail(self, msg_id: int) -> None:
        self.log.failed.append(msg_id)
        self.replay.append(msg_id)

    def exhausted(self) -> bool:
        return not self.replay and self.position >= len(self.log.entries)


async def settle() -> None:
    """Let the loop run every task that is ready, and the ones they wake, a few rounds."""
    for _ in range(20):
        await asyncio.sleep(0)
