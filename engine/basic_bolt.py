"""``BasicBolt`` as an adapter over ``Bolt``: anchor every emit, ack on return.

Not a second executor path: the executor runs the adapter like any bolt. A raised
``FailedException`` fails the input tuple (kind ``"explicit"``, not counted as an error);
any other exception propagates to the executor, which fails the tuple and reports it.
"""

from __future__ import annotations

from typing import Any

from engine.anchoring import Collector
from engine.collector import BasicOutputCollector
from engine.components import BasicBolt, Bolt
from engine.context import TopologyContext
from engine.errors import FailedException
from engine.tuples import Tuple
from engine.usercall import fail_on_error, invoke, method

__all__ = ["BasicAdapter", "adapt_basic_bolt"]


class BasicAdapter(Bolt):
    """Runs ``inner`` as a ``Bolt``; ``execute`` is ``def`` or ``async def`` as ``inner``'s is."""

    def __init__(self, inner: BasicBolt) -> None:
        self.inner = inner
        self._execute, is_async = method(inner, "execute")
        # The executor decides def-or-async from this attribute, once per task.
        self.execute = self._run_async if is_async else self._run  # type: ignore[method-assign]

    async def prepare(self, conf: dict[str, Any], context: TopologyContext,
                      collector: Collector) -> None:
        self.collector = collector
        self.basic = BasicOutputCollector(collector)
        await invoke(method(self.inner, "prepare"), conf, context)

    async def cleanup(self) -> None:
        await invoke(method(self.inner, "cleanup"))

    def _run(self, tup: Tuple) -> None:
        self.basic.anchor = tup
        try:
            self._execute(tup, self.basic)
        except FailedException as exc:
            fail_on_error(self.collector, exc, (tup,), failed_is_expected=True)
            return
        self.collector.ack(tup)

    async def _run_async(self, tup: Tuple) -> None:
        self.basic.anchor = tup
        try:
            await self._execute(tup, self.basic)
        except FailedException as exc:
            fail_on_error(self.collector, exc, (tup,), failed_is_expected=True)
            return
        self.collector.ack(tup)


def adapt_basic_bolt(inner: BasicBolt) -> Bolt:
    """A ``Bolt`` that runs ``inner`` with automatic anchoring and acking."""
    return BasicAdapter(inner)
