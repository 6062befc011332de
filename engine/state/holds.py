"""``PartitionHolds``: while one input partition's state is restored, only its tuples wait.

A stateful bolt that keeps state per input partition must not run a tuple of a partition
whose state is not in place yet. A partition's assignment (or, failing that, its first
tuple) starts its restore as a background task; the partition's tuples are held, in
arrival order; tuples of partitions already in place run at once. When the restore ends,
``on_ready(partition, held)`` gets the held tuples to run, in order.

A restore that fails (the broker away, a timeout) is tried again, from where it stopped,
after a back-off of 1, 2, 4 … up to ``MAX_BACKOFF_SECS`` seconds, for as long as the
partition is held: its tuples keep waiting, none is failed (a failure would count
against its record's retries, and after them the record would be given up).
``on_retry(partition, exc, attempt, delay)`` is told of each. A restore that is refused
(``StateRefused``: state that is gone, a record that cannot be read) is final:
``on_refused(partition, exc)`` is told once, and the partition stays held, its tuples
waiting, until the topology stops.

``drop`` (the partition was revoked) cancels a restore in progress and returns what was
held; a tuple of the partition that comes after it (one the spout sent before the revoke
ended) is refused until the partition is assigned again, so that no restore starts for a
partition another process holds now.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from engine.state.changelog import StateRefused

__all__ = ["MAX_BACKOFF_SECS", "PartitionHolds"]

MAX_BACKOFF_SECS = 30.0


class PartitionHolds:
    """Which partitions are in place, which restore, and the tuples each holds."""

    def __init__(self, restore: Callable[[int], Awaitable[None]],
                 on_ready: Callable[[int, list[Any]], Awaitable[None]],
                 on_retry: Callable[[int, BaseException, int, float], None],
                 on_refused: Callable[[int, StateRefused], None]) -> None:
        self._restore = restore
        self._on_ready = on_ready
        self._on_retry = on_retry
        self._on_refused = on_refused
        self.ready: set[int] = set()
        self.refused: set[int] = set()
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
        self._held.setdefault(partition, [])
        if partition not in self.ready and partition not in self._tasks \
                and partition not in self.refused:
            self._tasks[partition] = asyncio.get_running_loop().create_task(
                self._run(partition), name=f"restore partition {partition}")

    def restoring(self) -> list[int]:
        """The partitions whose restore is in progress (or waits to be tried again)."""
        return sorted(self._tasks)

    def drop(self, partition: int) -> list[Any]:
        """Forget ``partition`` (revoked): cancel its restore; the tuples it held."""
        self.ready.discard(partition)
        self.refused.discard(partition)
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
        if not await self._restored(partition):
            return
        # The tuples held so far, and those that arrive while they run, in order; the
        # list stays in ``_held`` so that a revoke meanwhile (``drop``) gets what is left.
        held = self._held.get(partition)
        while held:
            tup = held.pop(0)
            await self._on_ready(partition, [tup])
            held = self._held.get(partition)
        if self._tasks.get(partition) is asyncio.current_task():
            self._held.pop(partition, None)
            self.ready.add(partition)
            del self._tasks[partition]

    async def _restored(self, partition: int) -> bool:
        """Restore ``partition``, trying again after failures; False once refused."""
        attempt = 0
        while True:
            try:
                await self._restore(partition)
                return True
            except asyncio.CancelledError:
                raise
            except StateRefused as exc:
                self.refused.add(partition)
                self._tasks.pop(partition, None)
                self._on_refused(partition, exc)
                return False
            except Exception as exc:
                attempt += 1
                delay = min(MAX_BACKOFF_SECS, 2.0 ** (attempt - 1))
                self._on_retry(partition, exc, attempt, delay)
                await asyncio.sleep(delay)
