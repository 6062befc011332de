"""Writes given-up records to the failed topic, one background loop per spout task.

Guarantees:

- ``on_written`` runs once, only after the broker confirmed the record; nothing is
  acknowledged early, so a crash before the confirmation leaves the source offset
  uncommitted and the record is read again: at least once on the failed topic;
- every record fits: its JSON is cut to ``max_bytes`` (``fit.py``), and when the producer
  or the broker still refuses it as too large, the limit is halved (down to
  ``fit.MIN_LIMIT``) and the record cut again;
- a write that fails for a passing reason (an outage, a leader change) is retried after
  ``retry_delay`` seconds for as long as ``wanted()`` holds; an outage is logged by the
  ``Outage`` it is given (one line when it starts, one when it ends), other errors at
  most once per throttle interval;
- an error no retry can fix (invalid topic, authorization refused, a record that does not
  fit even cut) is never retried: ``on_unwritable`` is called with its description and
  the record is abandoned without ``on_written``, so its offset is never committed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from connectors.kafka.failed import FailedRecord
from connectors.kafka.fit import MIN_LIMIT, RecordTooLarge, fit
from connectors.kafka.kafka_errors import describe, is_outage, is_permanent, is_too_large
from connectors.kafka.outage import Outage
from connectors.kafka.throttle import LogThrottle

__all__ = ["FailedWriter"]

log = logging.getLogger("connectors.kafka")


@dataclass(slots=True)
class _Write:
    record: FailedRecord
    on_written: Callable[[], None]
    wanted: Callable[[], bool]
    not_before: float = 0.0
    size: int = 0


class FailedWriter:
    """A queue of failed-topic records in front of one producer."""

    def __init__(self, producer: AIOKafkaProducer, topic: str, *, max_bytes: int,
                 on_unwritable: Callable[[str], None], outage: Outage,
                 throttle: LogThrottle, retry_delay: float = 1.0) -> None:
        if max_bytes < MIN_LIMIT:
            raise ValueError(f"failed topic {topic!r}: max bytes per record must be at "
                             f"least {MIN_LIMIT}, got {max_bytes}")
        self._producer = producer
        self._topic = topic
        self._limit = max_bytes
        self._on_unwritable = on_unwritable
        self._outage = outage
        self._throttle = throttle
        self._retry_delay = retry_delay
        self._queue: asyncio.Queue[_Write] = asyncio.Queue()
        self._outstanding = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self.retries = 0
        """Writes sent again after a failure."""
        self.truncated = 0
        """Records written with their value (or key) cut to fit."""

    def submit(self, record: FailedRecord, on_written: Callable[[], None],
               wanted: Callable[[], bool]) -> None:
        """Queue ``record``; never blocks."""
        self._outstanding += 1
        self._idle.clear()
        self._queue.put_nowait(_Write(record, on_written, wanted))

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
        loop = asyncio.get_running_loop()
        while True:
            item = await self._queue.get()
            if not item.wanted():
                self._finish()
                continue
            delay = item.not_before - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            try:
                record, payload = fit(item.record, self._limit)
            except RecordTooLarge as exc:
                self._abandon(item, str(exc))
                continue
            item.size = len(payload)
            try:
                future = await self._producer.send(self._topic, payload)
            except KafkaError as exc:
                self._failed(item, exc)
                continue
            future.add_done_callback(
                lambda f, item=item, cut=record is not item.record: self._delivered(item, f, cut))

    def _delivered(self, item: _Write, future: asyncio.Future, cut: bool) -> None:
        if future.cancelled():
            self._failed(item, asyncio.CancelledError("delivery cancelled"))
            return
        exc = future.exception()
        if exc is not None:
            self._failed(item, exc)
            return
        self._outage.up(asyncio.get_running_loop().time())
        if cut:
            self.truncated += 1
        if item.wanted():
            item.on_written()
        self._finish()

    def _failed(self, item: _Write, exc: BaseException) -> None:
        now = asyncio.get_running_loop().time()
        if is_too_large(exc) and item.size > MIN_LIMIT:
            # The broker's limit is below the producer's: cut harder and send again now.
            self._limit = max(MIN_LIMIT, min(self._limit, item.size) // 2)
            log.warning("failed topic %r: record of %d bytes refused as too large (%s); "
                        "cutting failed records to %d bytes from now on",
                        self._topic, item.size, describe(exc), self._limit)
            self._queue.put_nowait(item)
            return
        if is_permanent(exc):
            self._abandon(item, describe(exc))
            return
        self.retries += 1
        if is_outage(exc):
            self._outage.down(now, describe(exc))
        else:
            allowed, held = self._throttle.allow(("failed-write", type(exc)), now)
            if allowed:
                log.warning("failed topic %r: write failed (%s); retrying every %.1f s%s",
                            self._topic, describe(exc), self._retry_delay,
                            f" ({held} more since the last line)" if held else "")
        item.not_before = now + self._retry_delay
        self._queue.put_nowait(item)

    def _abandon(self, item: _Write, why: str) -> None:
        self._on_unwritable(f"failed topic {self._topic!r} cannot take record "
                            f"{item.record.coordinates}: {why}")
        self._finish()

    def _finish(self) -> None:
        self._outstanding -= 1
        if self._outstanding == 0:
            self._idle.set()
