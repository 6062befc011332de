"""``PartitionHolds``: while one input partition's state is restored, only its tuples wait.

A stateful bolt that keeps state per input partition must not run a tuple of a partition
whose state is not in place yet. The first tuple of such a partition starts its restore
as a background task; that tuple and the partition's next ones are held, in arrival
order; tuples of partitions already in place run at once. When the restore ends,
``on_ready(partition, held)`` gets the held tuples to run, in order; when it fails,
``on_failed(partition, exc, held)`` gets them to fail (their spout replays them) and the
partition's next tuple starts a new restore. ``start`` restores a partition before its
first tuple (on its assignment). ``drop`` (the partition was revoked) cancels a restore in
progress and returns what was held; a tuple of the partition that comes after it (one the
spout sent before the revoke ended) is refused until the partition is assigned again, so
that no restore starts for a partition another process holds now.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["PartitionHolds"]


class PartitionHolds:
    """Which partitions are in place, which restore, and the tuples each holds."""

    def __init__(self, restore: Callable[[int], Awaitable[None]],
                 on_ready: Callable[[int, list[Any]], Awaitable[None]],
                 on_failed: Callable[[int, BaseException, list[Any]], None]) -> None:
        self._restore = restore
        self._on_ready = on_ready
        self._on_failed = on_failed
        self.ready: set[int] = set()
        self._held: dict[int, list[Any]] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self.dropped: set[int] = set()  # revoked and not assigned again since

    def admit(self, partition: int, tup: Any) -> bool | None:
        """True: run ``tup`` now. False: it is held until ``partition``'s restore ended
        (started here if none runs). None: ``partition`` was dropped, fail ``tup``."""
        if partition in self.ready:
            return True
        if partition in self.dropped:
            return None
        self.start(partition)
        self._held[partition].append(tup)
        return False

    def start(self, partition: int) -> None:
        """Restore ``partition`` now (it was assigned), unless in place or restoring."""
        self.dropped.discard(partition)
        if partition not in self.ready and partition not in self._tasks:
            self._held.setdefault(partition, [])
            self._tasks[partition] = asyncio.get_running_loop().create_task(
                self._run(partition), name=f"restore partition {partition}")

    def restoring(self) -> list[int]:
        """The partitions whose restore is in progress."""
        return sorted(self._tasks)

    def drop(self, partition: int) -> list[Any]:
        """Forget ``partition`` (revoked): cancel its restore; the tuples it held."""
        self.ready.discard(partition)
        self.dropped.add(partition)
        task = self._tasks.pop(partition, None)
        if task is not None:
            task.cancel()
        return self._held.pop(partition, [])

    async def close(self) -> None:
        """Cancel every restore in progress and wait for them to end."""
        tasks = list(self._tasks.values())
        for partition in list(self._tasks):
            self.drop(partition)
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _run(self, partition: int) -> None:
        try:
            await self._restore(partition)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._tasks.pop(partition, None)
            self._on_failed(partition, exc, self._held.pop(partition, []))
            return
        held = self._held.pop(partition, [])
        while held:
            # Tuples that arrive while the held ones run wait behind them, in order.
            self._held[partition] = []
            await self._on_ready(partition, held)
            held = self._held.pop(partition, [])
        self.ready.add(partition)
        self._tasks.pop(partition, None)
