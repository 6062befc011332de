"""The executor receive queue: a bounded FIFO of batches for one consumer coroutine.

Bounded queues are the backpressure. The bound counts tuples (the items of the batches),
not batches, so that what a queue holds does not depend on how producers happen to batch:
``put`` suspends the producer while the batch would take the queue past ``maxsize``
tuples, except that any batch is admitted into an empty queue (a batch larger than the
bound cannot wait for ever). Control traffic (acker messages, ticks, stop) uses
``put_nowait``, which never blocks and may exceed the bound, so that the ack cycle
between spouts and ackers cannot deadlock on full queues. One consumer only (its
executor).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["BatchQueue", "QueueStats", "StampedQueue"]


@dataclass(frozen=True, slots=True)
class QueueStats:
    """A snapshot of a queue: tuples held, the bound, the peak (tuples), producers waiting,
    batches held."""

    size: int
    maxsize: int
    peak: int
    blocked_putters: int
    batches: int = 0


class BatchQueue:
    """FIFO of batches with ``put`` (bounded in tuples, may wait), ``put_nowait`` and ``get``.

    A batch is anything with a length (a list of tuples, a list of outcomes, a pair of
    acker message lists); its length is what it counts against the bound.
    """

    __slots__ = ("_count", "_getter", "_items", "_last", "_loop", "_peak", "_putters",
                 "maxsize")

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._count = 0
        self._last = 1  # tuples in the latest batch put: what the next one is likely to be
        self._items: deque[Any] = deque()
        self._getter: asyncio.Future[None] | None = None
        self._putters: deque[asyncio.Future[None]] = deque()
        self._peak = 0
        # The loop of the first wait: CPython 3.11's asyncio.get_running_loop() makes a
        # getpid() system call each time. A queue lives on its topology's loop; used from
        # another loop it would fail as an asyncio primitive does.
        self._loop: asyncio.AbstractEventLoop | None = None

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        return loop

    def __len__(self) -> int:
        return len(self._items)

    @property
    def count(self) -> int:
        """Tuples held now (the sum of the held batches' lengths)."""
        return self._count

    def full(self) -> bool:
        """True while a batch as large as the latest one put would not fit: the queue has
        no room for what its producers send (load-aware shuffle and the stall checks use
        this; ``fits`` answers for one given batch)."""
        count = self._count
        return count >= self.maxsize or (count > 0 and count + self._last > self.maxsize)

    def fits(self, n: int) -> bool:
        """True when ``put`` of a batch of ``n`` tuples would not wait."""
        count = self._count
        return count == 0 or count + n <= self.maxsize

    def put_nowait(self, batch: Any) -> None:
        """Append ``batch`` now, whatever the bound, and wake the consumer."""
        self._items.append(batch)
        n = len(batch)
        self._last = n
        count = self._count + n
        self._count = count
        if count > self._peak:
            self._peak = count
        self.wake()

    def wake(self) -> None:
        """Wake the consumer if it waits in ``wait``/``get`` (it finds the queue as it is)."""
        getter = self._getter
        if getter is not None:
            self._getter = None
            if not getter.done():
                getter.set_result(None)

    async def put(self, batch: Any) -> None:
        """Append ``batch``, first waiting until it fits (or the queue is empty)."""
        n = len(batch)
        while self._count and self._count + n > self.maxsize:
            waiter = self._running_loop().create_future()
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
        getter = self._running_loop().create_future()
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
        self._count -= len(batch)
        putters = self._putters
        # Every waiting producer looks again: room for tuples may fit several batches, and
        # one that still does not fit waits again.
        while putters:
            waiter = putters.popleft()
            if not waiter.done():
                waiter.set_result(None)
        return batch

    def head(self) -> Any:
        """The oldest batch, left in place (``None`` if empty): a sign of progress."""
        return self._items[0] if self._items else None

    def stats(self) -> QueueStats:
        """A consistent snapshot of the queue's figures."""
        return QueueStats(self._count, self.maxsize, self._peak, len(self._putters),
                          len(self._items))

    def __repr__(self) -> str:
        s = self.stats()
        return (f"<BatchQueue size={s.size} maxsize={s.maxsize} peak={s.peak} "
                f"blocked_putters={s.blocked_putters}>")


class StampedQueue(BatchQueue):
    """A ``BatchQueue`` that knows when each batch was put: after a ``get``, ``sent_at`` is
    the clock's time at the put of the batch it returned (never later than the get, never
    earlier than anything the producer did before the put)."""

    __slots__ = ("_clock", "_times", "sent_at")

    def __init__(self, maxsize: int, clock: Callable[[], float]) -> None:
        super().__init__(maxsize)
        self._clock = clock
        self._times: deque[float] = deque()
        self.sent_at = 0.0
        """When the batch last taken was put."""

    def put_nowait(self, batch: Any) -> None:
        """Append ``batch`` now with the time, whatever the bound, and wake the consumer."""
        self._times.append(self._clock())
        super().put_nowait(batch)

    def _pop(self) -> Any:
        self.sent_at = self._times.popleft()
        return super()._pop()


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
