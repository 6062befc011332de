"""The windowing executor for ``async def execute(window)``: a tuple at a time, awaited
under a lock that keeps timers and tuples from interleaving."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from engine.context import TopologyContext
from engine.tuples import Tuple
from engine.windowing.executor import WindowedBoltExecutor

__all__ = ["AsyncWindowedBoltExecutor"]


class AsyncWindowedBoltExecutor(WindowedBoltExecutor):
    """For ``async def execute(window)``: a lock keeps timers and tuples from interleaving."""

    async def prepare(self, conf: dict[str, Any], context: TopologyContext,
                      collector: Any) -> None:
        self._lock = asyncio.Lock()
        await super().prepare(conf, context, collector)

    async def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            return
        async with self._lock:
            self.add(tup)
            self.watermark_after_batch(self.now_ms())
            await self.drain()

    async def drain(self) -> None:
        """Act on the manager's outputs (the lock is held)."""
        for act in self.activations():
            with self.evaluating(act):
                await self._user_execute(self._window(act))

    async def _tick(self, tick: Callable[[], None]) -> None:
        async with self._lock:
            tick()
            await self.drain()
