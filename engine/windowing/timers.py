"""The timers of a windowed bolt's task: the slide of processing-time windows and the
watermark of event-time ones, run as tasks on the running loop's clock."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

__all__ = ["Timers"]


class Timers:
    """Calls each registered tick at its fixed rate until ``cancel``; a tick that falls
    behind by more than its period realigns, and a tick's error goes to ``on_error``
    without stopping the timer."""

    def __init__(self, loop_time: Callable[[], float],
                 on_error: Callable[[BaseException], None]) -> None:
        self.loop_time = loop_time
        self.on_error = on_error
        self.tasks: list[asyncio.Task[None]] = []

    def every(self, every_ms: int, tick: Callable[[], Awaitable[None]]) -> None:
        """Run ``tick()`` every ``every_ms`` from now on."""
        loop = asyncio.get_running_loop()
        self.tasks.append(loop.create_task(self._every(every_ms, tick)))

    async def _every(self, every_ms: int, tick: Callable[[], Awaitable[None]]) -> None:
        every = every_ms / 1000
        due = self.loop_time() + every
        while True:
            await asyncio.sleep(max(0.0, due - self.loop_time()))
            due += every
            if due < self.loop_time():  # fell behind by more than a period: realign
                due = self.loop_time() + every
            try:
                await tick()
            except BaseException as exc:
                self.on_error(exc)

    async def cancel(self) -> None:
        """Stop every timer and wait until they stopped."""
        tasks, self.tasks = self.tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
