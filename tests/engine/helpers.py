"""Small bolts shared by the engine tests."""

from __future__ import annotations

import asyncio
from typing import Any

from engine import BasicBolt, Bolt, FailedException, FailReason
from engine.testing import FeederSpout


class Split(Bolt):
    """One anchored tuple per word; acks the sentence."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        for word in tup[0].split():
            self.collector.emit([word], anchors=tup)
        self.collector.ack(tup)


class Forward(Bolt):
    """Re-emits its input, anchored or not; acks it."""

    def __init__(self, anchored: bool = True) -> None:
        self.anchored = anchored

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["value"])

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.emit([tup[0]], anchors=tup if self.anchored else None)
        self.collector.ack(tup)


class Hold(Bolt):
    """Keeps every input without acking; the test acks or fails them through ``held``."""

    def __init__(self) -> None:
        self.held: list[tuple[Any, Any]] = []

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.held.append((self.collector, tup))


class Failer(Bolt):
    """Fails every input explicitly."""

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.fail(tup)


class Crash(Bolt):
    """Raises on values equal to ``bad``; acks the rest."""

    def __init__(self, bad: Any) -> None:
        self.bad = bad
        self.seen: list[Any] = []

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.seen.append(tup[0])
        if tup[0] == self.bad:
            raise ValueError(f"cannot handle {tup[0]!r}")
        self.collector.ack(tup)


class SlowAck(Bolt):
    """Async bolt: waits ``delay`` seconds, then acks."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.cleaned: list[int] = []

    async def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.task_id = context.task_id

    async def execute(self, tup: Any) -> None:
        await asyncio.sleep(self.delay)
        self.collector.ack(tup)

    async def cleanup(self) -> None:
        self.cleaned.append(self.task_id)


class BasicUpper(BasicBolt):
    """Upper-cases its input; raises FailedException on "fail", ValueError on "crash"."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["value"])

    def execute(self, tup: Any, collector: Any) -> None:
        if tup[0] == "fail":
            raise FailedException("asked to fail")
        if tup[0] == "crash":
            raise ValueError("asked to crash")
        collector.emit([tup[0].upper()])


class ReasonSpout(FeederSpout):
    """A feeder whose ``fail`` takes the reason."""

    def __init__(self) -> None:
        super().__init__(["v"])
        self.reasons: dict[Any, FailReason] = {}

    def fail(self, msg_id: Any, reason: FailReason | None = None) -> None:
        super().fail(msg_id)
        assert reason is not None
        self.reasons[msg_id] = reason
