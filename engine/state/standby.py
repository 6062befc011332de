"""Standby copies: a process keeps a caught-up copy of the state of input partitions it does
not own, so that taking one over reads only the few changelog records written since.

With ``topology.state.standby.replicas`` at 1 or more, a stateful bolt behind a repartition
hop follows the changelog of every partition its process does not hold, into the standby
namespace ``<namespace>@standby`` of the host's store (``StandbyCopy``): the records go in
unsettled, as the host's own commits do, and are settled as the group's committed input
offset passes them. When the partition is assigned to the process, its follower stops
and its restore takes the standby copy if it is further along than what the host held
(``PartitionStore.adopt``), then reads only past it. A record the copy cannot read stops
its follower there: the restore that takes the partition over reads it again and names
it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable

from engine.state.changelog import MARKER_KEY, START_KEY, not_json, read_marker
from engine.state.partition_store import PartitionStore

__all__ = ["StandbyCopy", "StandbyKeeper", "standby_namespace"]

log = logging.getLogger("engine.state")


def standby_namespace(namespace: str) -> str:
    """Where a process keeps its standby copy of partition namespace ``namespace``."""
    return f"{namespace}@standby"


class StandbyCopy:
    """One partition's standby copy: ``add`` changelog records ``(offset, key, value)`` in
    order, ``flush(committed)`` after each fetch. ``stopped_at`` is the offset of a record
    it could not read (it takes nothing from there on)."""

    def __init__(self, store: PartitionStore, namespace: str, topic: str) -> None:
        self.store = store
        self.namespace = namespace
        self.topic = topic
        held = store.position(namespace)
        self.next_offset = 0 if held is None or held.topic != topic else held.next_offset
        self.marker = None if held is None else held.marker
        self.started = held is not None and held.started
        self.stopped_at: int | None = None
        self._rows: list[tuple[int, int, bytes, bytes | None]] = []

    def add(self, records: Iterable[tuple[int, bytes | None, bytes | None]]) -> None:
        """Take records in changelog order, up to the first it cannot read."""
        rows = self._rows
        for offset, key, value in records:
            if self.stopped_at is not None:
                return
            if key is not None and value is not None and not self._take(rows, offset, key,
                                                                         value):
                self.stopped_at = offset
                return
            self.next_offset = offset + 1

    def _take(self, rows: list[tuple[int, int, bytes, bytes | None]], offset: int,
              key: bytes, value: bytes) -> bool:
        if key == START_KEY:
            self.started = True
            return True
        if key == MARKER_KEY:
            marker = read_marker(value)
            if marker is None:
                return False
            self.marker = marker
            return True
        head, sep, body = value.partition(b" ")
        if not head.isdigit():
            return False
        rows.append((offset, int(head), key, body if sep else None))
        return True

    def reset(self) -> None:
        """Forget the copy (its changelog was created again): follow it from offset 0."""
        self.store.begin(self.namespace, self.topic)
        self.next_offset, self.marker, self.started, self._rows = 0, None, False, []

    def flush(self, committed: int | None) -> None:
        """Write what was taken, with the position; settle what ``committed`` passed."""
        self._check_json()
        self.store.stage(self.namespace, self._rows, self.next_offset, self.marker,
                         self.started, self.topic)
        self._rows = []
        if committed is not None:
            self.store.settle(self.namespace, committed)

    def _check_json(self) -> None:
        """Cut the rows at the first whose key or value is not JSON."""
        rows = self._rows
        bad = not_json([(key, value) for _, _, key, value in rows])
        if bad:
            i = bad[0][0]
            self._rows, self.stopped_at = rows[:i], rows[i][0]
            self.next_offset = rows[i][0]


Follow = Callable[[int, StandbyCopy], Awaitable[None]]


class StandbyKeeper:
    """The followers of the partitions a process does not own (see the module
    docstring); ``follow(partition, copy)`` runs one until cancelled."""

    def __init__(self, store: PartitionStore, prefix: Callable[[int], str], topic: str,
                 follow: Follow) -> None:
        self._store = store
        self._namespace = prefix
        self._topic = topic
        self._follow = follow
        self._tasks: dict[int, asyncio.Task[None]] = {}

    def following(self) -> list[int]:
        """The partitions followed now."""
        return sorted(p for p, t in self._tasks.items() if not t.done())

    def keep(self, partitions: Iterable[int]) -> None:
        """Follow each of ``partitions`` that is not followed yet."""
        for partition in partitions:
            task = self._tasks.get(partition)
            if task is None or task.done():
                copy = StandbyCopy(self._store, standby_namespace(self._namespace(partition)),
                                   self._topic)
                self._tasks[partition] = asyncio.get_running_loop().create_task(
                    self._run(partition, copy), name=f"standby partition {partition}")

    async def drop(self, partitions: Iterable[int]) -> None:
        """Stop following ``partitions`` (about to be owned) and wait until they stopped."""
        tasks = [t for p in partitions if (t := self._tasks.pop(p, None)) is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def close(self) -> None:
        """Stop every follower."""
        await self.drop(list(self._tasks))

    async def _run(self, partition: int, copy: StandbyCopy) -> None:
        delay = 1.0
        while copy.stopped_at is None:
            try:
                await self._follow(partition, copy)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("standby copy of partition %d: following its changelog failed "
                            "(%s: %s); trying again in %g s", partition, type(exc).__name__,
                            exc, delay)
                await asyncio.sleep(delay)
                delay = min(30.0, delay * 2)
        log.warning("standby copy of partition %d stopped at changelog offset %d, a record it "
                    "cannot read; the partition's next owner reads it again", partition,
                    copy.stopped_at)
