"""The executor receive queue: a bounded FIFO of batches for one consumer coroutine.

Bounded queues are the backpressure: ``put`` suspends the producer while the queue holds
``maxsize`` batches. Control traffic (acker messages, ticks, stop) uses ``put_nowait``,
which never blocks and may exceed the bound, so that the ack cycle between spouts and
ackers cannot deadlock on full queues. One consumer only (its executor).
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Any

__all__ = ["BatchQueue", "QueueStats"]


@dataclass(frozen=True, slots=True)
class QueueStats:
    """A snapshot of a queue: batches held, the bound, the peak, producers waiting."""

    size: int
    maxsize: int
    peak: int
    blocked_putters: int


class BatchQueue:
    """FIFO of batches with ``put`` (bounded, may wait), ``put_nowait`` and ``get``."""

    __slots__ = ("_getter", "_items", "_peak", "_putters", "maxsize")

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._items: deque[Any] = deque()
        self._getter: asyncio.Future[None] | None = None
        self._putters: deque[asyncio.Future[None]] = deque()
        self._peak = 0

    def __len__(self) -> int:
        return len(self._items)

    def full(self) -> bool:
        """True while ``put`` would wait."""
        return len(self._items) >= self.maxsize

    def put_nowait(self, batch: Any) -> None:
        """Append ``batch`` now, whatever the bound, and wake the consumer."""
        items = self._items
        items.append(batch)
        if len(items) > self._peak:
            self._peak = len(items)
        getter = self._getter
        if getter is not None:
            self._getter = None
            if not getter.done():
                getter.set_result(None)

    async def put(self, batch: Any) -> None:
        """Append ``batch``, first waiting while the queue holds ``maxsize`` batches."""
        while len(self._items) >= self.maxsize:
            waiter = asyncio.get_running_loop().create_future()
            self._putters.append(waiter)
            try:
                await waiter
            except BaseException:
                waiter.cancel()
                if waiter in self._putters:
                    self._putters.remove(waiter)
                raise
        self.put_nowait(batch)

    async def get(self) -> Any:
        """The oldest batch, waiting for one if the queue is empty."""
        while not self._items:
            await self.wait(None)
        return self._pop()

    def get_nowait(self) -> Any | None:
        """The oldest batch, or ``None`` if the queue is empty."""
        return self._pop() if self._items else None

    async def wait(self, timeout: float | None) -> bool:
        """Wait until the queue is non-empty or ``timeout`` passes; True if non-empty."""
        if self._items:
            return True
        getter = asyncio.get_running_loop().create_future()
        self._getter = getter
        try:
            if timeout is None:
                await getter
            else:
                handle = getter.get_loop().call_later(timeout, _wake, getter)
                try:
                    await getter
                finally:
                    handle.cancel()
        finally:
            if self._getter is getter:
                self._getter = None
        return bool(self._items)

    def _pop(self) -> Any:
        batch = self._items.popleft()
        putters = self._putters
        while putters:
            waiter = putters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                break
        return batch

    def head(self) -> Any:
        """The oldest batch, left in place (``None`` if empty): a sign of progress."""
        return self._items[0] if self._items else None

    def stats(self) -> QueueStats:
        """A consistent snapshot of the queue's figures."""
        return QueueStats(len(self._items), self.maxsize, self._peak, len(self._putters))

    def __repr__(self) -> str:
        s = self.stats()
        return (f"<BatchQueue size={s.size} maxsize={s.maxsize} peak={s.peak} "
                f"blocked_putters={s.blocked_putters}>")


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
