"""Writes given-up records to the failed topic, one background loop per spout task.

Guarantee: ``on_written`` runs once, only after the broker confirmed the record; a write
that fails is retried after ``retry_delay`` seconds for as long as ``wanted()`` holds (the
spout stops wanting it when the partition is revoked). Nothing is acknowledged early, so a
crash before the confirmation leaves the source offset uncommitted and the record is read
again: at least once on the failed topic.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from engine.clock import now

__all__ = ["FailedWriter"]

log = logging.getLogger("connectors.kafka")


@dataclass(slots=True)
class _Write:
    payload: bytes
    on_written: Callable[[], None]
    wanted: Callable[[], bool]
    not_before: float = 0.0


class FailedWriter:
    """A queue of failed-topic records in front of one producer."""

    def __init__(self, producer: AIOKafkaProducer, topic: str, retry_delay: float = 1.0) -> None:
        self._producer = producer
        self._topic = topic
        self._retry_delay = retry_delay
        self._queue: asyncio.Queue[_Write] = asyncio.Queue()
        self._outstanding = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def submit(self, payload: bytes, on_written: Callable[[], None],
               wanted: Callable[[], bool]) -> None:
        """Queue ``payload``; never blocks."""
        self._outstanding += 1
        self._idle.clear()
        self._queue.put_nowait(_Write(payload, on_written, wanted))

    @property
    def outstanding(self) -> int:
        """Records submitted and not yet confirmed or abandoned."""
        return self._outstanding

    async def wait_idle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until nothing is outstanding; True if so."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def run(self) -> None:
        """Send queued records until cancelled."""
        while True:
            item = await self._queue.get()
            if not item.wanted():
                self._finish()
                continue
            delay = item.not_before - now()
            if delay > 0:
                await asyncio.sleep(delay)
            try:
                future = await self._producer.send(self._topic, item.payload)
            except KafkaError as exc:
                self._retry(item, exc)
                continue
            future.add_done_callback(lambda f, item=item: self._delivered(item, f))

    def _delivered(self, item: _Write, future: asyncio.Future) -> None:
        if future.cancelled():
            self._retry(item, asyncio.CancelledError("delivery cancelled"))
            return
        exc = future.exception()
        if exc is not None:
            self._retry(item, exc)
            return
        if item.wanted():
            item.on_written()
        self._finish()

    def _retry(self, item: _Write, exc: BaseException) -> None:
        log.warning("failed topic %r: write failed (%s: %s); retrying in %.1fs",
                    self._topic, type(exc).__name__, exc, self._retry_delay)
        item.not_before = now() + self._retry_delay
        self._queue.put_nowait(item)

    def _finish(self) -> None:
        self._outstanding -= 1
        if self._outstanding == 0:
            self._idle.set()
