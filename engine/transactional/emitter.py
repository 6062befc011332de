"""``EmitterBolt``: the emitter half of a transactional spout, run as a bolt.

Every emitter task receives every batch tuple of the coordinator (all grouping) and emits
its share of the batch, anchored to the batch tuple, then reports to every downstream task
how many tuples it sent there and acks the batch tuple. A failing ``emit_batch`` fails the
batch tuple, hence the whole batch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.collector import BasicOutputCollector
from engine.components import Bolt
from engine.transactional.coordinated import COORD_FIELDS, COORD_STREAM
from engine.transactional.partitioned import TRANSACTIONAL_ID
from engine.transactional.spout import TransactionalSpout
from engine.usercall import awaitable, fail_on_error

if TYPE_CHECKING:
    from engine.collector import OutputCollector
    from engine.context import TopologyContext
    from engine.topology import OutputFieldsDeclarer
    from engine.tuples import Tuple

__all__ = ["EmitterBolt"]


class EmitterBolt(Bolt):
    """Runs ``spout.get_emitter(...)`` on each task; the batch tuple is acked once the task
    emitted its share and reported its counts downstream."""

    def __init__(self, spout: TransactionalSpout, transactional_id: str,
                 downstream: tuple[str, ...]) -> None:
        self.spout = spout
        self.transactional_id = transactional_id
        self.downstream = downstream

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.spout.declare_output_fields(declarer)
        declarer.declare(list(COORD_FIELDS), stream=COORD_STREAM, direct=True)

    async def prepare(self, conf: dict[str, Any], context: TopologyContext,
                      collector: OutputCollector) -> None:
        """Create this task's emitter half of the spout."""
        self._out = collector
        emitter = self.spout.get_emitter({**conf, TRANSACTIONAL_ID: self.transactional_id},
                                         context)
        self._emit_batch = awaitable(emitter, "emit_batch")
        self._cleanup_before = awaitable(emitter, "cleanup_before", optional=True)
        self._close = awaitable(emitter, "close", optional=True)
        self._out_tasks = [t for d in self.downstream for t in context.component_tasks(d)]
        self._committed = 0

    async def execute(self, tup: Tuple) -> None:
        """Emit this task's share of the batch ``tup`` announces, report, ack."""
        if tup.is_tick():
            return
        attempt, metadata, committed = tup.values
        out = self._out
        try:
            if committed is not None and committed > self._committed:
                await self._cleanup_before(committed)
                self._committed = committed
            batch = BasicOutputCollector(out, count=True)
            batch.anchor = tup
            await self._emit_batch(attempt, metadata, batch)
        except BaseException as exc:
            fail_on_error(out, exc, (tup,), failed_is_expected=True)
            return
        sent = batch.sent
        for t in self._out_tasks:
            out.emit_direct(t, [attempt, sent.get(t, 0)], tup, COORD_STREAM)
        out.ack(tup)

    async def cleanup(self) -> None:
        """Close the emitter half."""
        await self._close()
