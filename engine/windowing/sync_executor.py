"""The windowing executor for a plain ``def execute(window)``: whole queue batches, no
awaiting."""

from __future__ import annotations

from collections.abc import Callable

from engine.tuples import Tuple
from engine.windowing.executor import WindowedBoltExecutor

__all__ = ["SyncWindowedBoltExecutor"]


class SyncWindowedBoltExecutor(WindowedBoltExecutor):
    """For a plain ``def execute(window)``: everything runs without awaiting."""

    executes_batches = True  # the bolt executor hands it whole queue batches

    def execute(self, tup: Tuple) -> None:
        self.execute_batch((tup,))

    def execute_batch(self, batch: list[Tuple] | tuple[Tuple, ...]) -> None:
        """``execute`` each tuple of a queue batch: all are stamped with one reading of
        the clock and queued in one call; the window's outputs are acted on after them."""
        now = self.now_ms()
        if self.event_time is None:
            items = [tup for tup in batch if not tup.is_tick()]
            stamps = [now] * len(items)
        else:
            items, stamps = self.event_time.on_time(batch, self.out)
        self.manager.add_all(items, stamps, now)
        self.watermark_after_batch(now)
        self.drain()

    def drain(self) -> None:
        """Act on the manager's outputs (most tuples cause none: nothing to start then)."""
        if not self.manager.outputs:
            return
        for act in self.activations():
            with self.evaluating(act):
                self.bolt.execute(self._window(act))

    async def _tick(self, tick: Callable[[], None]) -> None:
        tick()
        self.drain()
