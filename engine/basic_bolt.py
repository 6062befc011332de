"""``BasicBolt`` as an adapter over ``Bolt``: anchor every emit, ack on return.

Not a second executor path: the executor runs the adapter like any bolt, so a raised
``FailedException`` (or any exception) fails the input tuple the same way.
"""

from __future__ import annotations

from typing import Any

from engine.collector import BasicOutputCollector, OutputCollector
from engine.components import BasicBolt, Bolt
from engine.context import TopologyContext
from engine.errors import FailedException
from engine.executor import bound, call
from engine.tuples import Tuple

__all__ = ["adapt_basic_bolt"]


class _BasicAdapter(Bolt):
    def __init__(self, inner: BasicBolt) -> None:
        self.inner = inner
        self._execute = bound(inner, "execute")

    async def prepare(self, conf: dict[str, Any], context: TopologyContext,
                      collector: OutputCollector) -> None:
        self.collector = collector
        self.basic = BasicOutputCollector(collector)
        await call(bound(self.inner, "prepare"), conf, context)

    async def cleanup(self) -> None:
        await call(bound(self.inner, "cleanup"))


class _SyncBasicAdapter(_BasicAdapter):
    def execute(self, tup: Tuple) -> None:
        self.basic.anchor = tup
        try:
            self._execute[0](tup, self.basic)
        except FailedException:
            self.collector.fail(tup)  # an expected outcome: not counted as an error
            return
        self.collector.ack(tup)


class _AsyncBasicAdapter(_BasicAdapter):
    async def execute(self, tup: Tuple) -> None:
        self.basic.anchor = tup
        try:
            await self._execute[0](tup, self.basic)
        except FailedException:
            self.collector.fail(tup)
            return
        self.collector.ack(tup)


def adapt_basic_bolt(inner: BasicBolt) -> Bolt:
    """A ``Bolt`` that runs ``inner`` with automatic anchoring and acking."""
    is_async = bound(inner, "execute")[1]
    return _AsyncBasicAdapter(inner) if is_async else _SyncBasicAdapter(inner)
