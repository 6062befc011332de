"""Stopping an aiokafka client by a deadline, quietly.

``AIOKafkaConsumer.stop()`` first waits for a group rebalance in progress and then leaves
the group; a LeaveGroup the broker does not answer holds it for ``request_timeout_ms``
(40 s by default). Seen on stop: ``LeaveGroup request failed: [Error 7]
RequestTimedOutError`` after 40 s, then an ERROR traceback, a ``CancelledError`` out of
aiokafka's fetcher (0.14 awaits the fetch tasks it has just cancelled), and a supervisor
that had waited ``--drain-secs`` + 10 s killing the process.

``stop_by`` runs ``stop()`` as a task of its own and gives it until the deadline. Past
it, the task is cancelled and what ``stop()`` had not reached is ended directly: the
consumer's group tasks (heartbeat, rebalance), fetcher and connections, the producer's
sender and connections (aiokafka's private parts, looked up by name and skipped if a
version has none). That is one
WARNING (a consumer not heard from is dropped from its group after its session timeout,
and the partitions go to the other members then), never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from connectors.kafka.kafka_errors import describe

__all__ = ["CLOSE_FLOOR_SECS", "close_deadline", "stop_by"]

log = logging.getLogger("connectors.kafka")

_PARTS = ("_fetcher", "_sender", "_client")  # what stop() closes after the group, in order
_PART_SECS = 0.5  # each, once the deadline passed

CLOSE_FLOOR_SECS = 0.5
"""The least one close is given, even past the stop's deadline (closes run one after
another): a commit a healthy broker answers takes milliseconds."""
CLOSE_UNBOUNDED_SECS = 30.0
"""What a close is given outside a stop (no ``stop_deadline``: a test closing by hand)."""


def close_deadline(context: Any, now: float) -> float:
    """When a component's close must be over: the stop's deadline from ``context``
    (``TopologyContext.stop_deadline``), and at least ``CLOSE_FLOOR_SECS`` after ``now``."""
    stop = getattr(context, "stop_deadline", None)
    if stop is None:
        return now + CLOSE_UNBOUNDED_SECS
    return max(stop, now + CLOSE_FLOOR_SECS)


async def stop_by(client: Any, deadline: float, who: str) -> bool:
    """Stop ``client`` (a consumer or a producer) by ``deadline`` (loop time); True if its
    own ``stop()`` finished in time, False if it was cut short (one WARNING says so)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.ensure_future(client.stop())
    try:
        await asyncio.wait({stop}, timeout=max(0.0, deadline - loop.time()))
    except asyncio.CancelledError:
        stop.cancel()  # the close itself is cancelled: the stop goes with it
        raise
    if stop.done() and not stop.cancelled() and stop.exception() is None:
        return True
    if stop.done():  # it raised: aiokafka's own cancellation of a fetch in flight, say
        what = "failed (" + ("CancelledError" if stop.cancelled()
                             else describe(stop.exception() or Exception())) + ")"
    else:
        stop.cancel()
        waits = ("leaving its consumer group" if hasattr(client, "_coordinator")
                 else "flushing its records")
        what = f"did not finish by the stop's deadline ({waits} waits for the broker's answer)"
    await _settle(stop)
    await _end_the_rest(client)
    log.warning("%s: stopping its Kafka %s %s; closed its connections without it", who,
                type(client).__name__, what)
    return False


async def _end_the_rest(client: Any) -> None:
    """End what a cut or failed ``stop()`` left: the group's tasks, then the parts."""
    coordinator = getattr(client, "_coordinator", None)
    if coordinator is not None:
        # Its heartbeat and rebalance tasks outlive a cut stop(), and so does a commit it
        # shielded: ended here, before the connections close under them (which aiokafka
        # would log as ERRORs, and a shielded task's error as never retrieved).
        for task in _tasks_of(coordinator):
            task.cancel()
            await _settle(task)
    for name in _PARTS:
        part = getattr(client, name, None)
        if part is not None:
            await _settle(asyncio.ensure_future(_close(part)))


def _tasks_of(obj: Any) -> list[asyncio.Task[Any]]:
    """Unfinished tasks ``obj`` holds, and those running one of its methods."""
    held = [v for v in vars(obj).values() if isinstance(v, asyncio.Task)]
    running = [t for t in asyncio.all_tasks()
               if getattr(getattr(t.get_coro(), "cr_frame", None), "f_locals", {}).get(
                   "self") is obj]
    current = asyncio.current_task()
    return [t for t in dict.fromkeys(held + running) if not t.done() and t is not current]


async def _close(part: Any) -> None:
    async with asyncio.timeout(_PART_SECS):
        await part.close()


async def _settle(task: asyncio.Future[Any]) -> None:
    """Wait for ``task`` to end, whatever it raises; a cancellation of the caller itself
    still propagates."""
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
    except Exception:
        log.debug("closing an aiokafka client part raised", exc_info=True)
